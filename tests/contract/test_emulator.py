"""Emulator-only tests: seeding, counters, fault injection and the command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from urllib3.exceptions import MaxRetryError, NewConnectionError, ReadTimeoutError

from tests.contract.helpers import (
    ROOT,
    configmap,
    crd_body,
    deployment,
    emulator_only,
    established,
    managed_entry,
    search,
    status_of,
    wait_for,
)
from tests.contract.watching import OURS, TIMEOUT, events, ours, seen
from tests.kubeapi import KubeAPI

# Emulator only: seeding, status, counters --------------------------------------------------------


@emulator_only
def test_seeded_nodes_and_pods(api: KubeAPI, core: client.CoreV1Api) -> None:
    nodes = core.list_node().items
    assert [n.metadata.name for n in nodes] == ["node-0", "node-1", "node-2"]
    for node in nodes:
        assert node.status.allocatable == {"cpu": "8", "memory": "32Gi", "pods": "110"}
        assert node.status.capacity == node.status.allocatable
        assert node.metadata.labels["kubernetes.io/hostname"] == node.metadata.name
        assert not node.spec.unschedulable
        assert not node.spec.taints
    api.add_pod("default", "busy", "node-0", requests={"cpu": "500m", "memory": "1Gi"})
    api.add_pod("team-a", "done", "node-1", phase="Succeeded")
    api.add_pod("team-a", "pending", None, phase="Pending")
    everywhere = core.list_pod_for_all_namespaces()
    assert sorted(p.metadata.name for p in everywhere.items) == ["busy", "done", "pending"]
    busy = core.read_namespaced_pod("busy", "default")
    assert busy.spec.node_name == "node-0"
    assert busy.status.phase == "Running"
    assert busy.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1Gi"}
    on_node = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-1")
    assert [p.metadata.name for p in on_node.items] == ["done"]
    unscheduled = core.list_namespaced_pod("team-a", field_selector="spec.nodeName=")
    assert [p.metadata.name for p in unscheduled.items] == ["pending"]
    assert api.objects.get("", "v1", "pods", "team-a", "done") is not None
    api.put(configmap("seeded", a="1") | {"metadata": {"name": "seeded", "namespace": "fresh"}})
    assert core.read_namespace("fresh").status.phase == "Active"
    assert core.read_namespaced_config_map("seeded", "fresh").data == {"a": "1"}
    assert api.objects.delete("", "v1", "namespaces", "", "fresh")
    assert api.objects.list("", "v1", "configmaps", "fresh") == []


@emulator_only
def test_status_is_set_by_helpers_not_by_apply(api: KubeAPI, dyn: DynamicClient) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    body = deployment("app", "default")
    body["status"] = {"replicas": 99}
    applied = deployments.server_side_apply(body=body, field_manager="dro").to_dict()
    assert "replicas" not in (applied.get("status") or {})
    stored = api.set_status("apps", "v1", "deployments", "default", "app", {"readyReplicas": 1})
    assert int(stored["metadata"]["resourceVersion"]) > int(applied["metadata"]["resourceVersion"])
    assert deployments.get(name="app", namespace="default").status.readyReplicas == 1
    via_subresource = deployments.status.patch(
        body={"status": {"readyReplicas": 2}},
        name="app",
        namespace="default",
        content_type="application/merge-patch+json",
        field_manager="controller",
    ).to_dict()
    assert via_subresource["status"] == {"readyReplicas": 2}
    entry = managed_entry(via_subresource, "controller", "Update")
    assert entry is not None
    assert entry["subresource"] == "status"
    assert via_subresource["metadata"]["generation"] == 1


@emulator_only
def test_request_write_and_change_counters(
    api: KubeAPI, core: client.CoreV1Api, dyn: DynamicClient
) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    api.reset_counters()
    revision = api.store.revision
    body = configmap("counted", a="1")
    configmaps.server_side_apply(body=body, namespace="default", field_manager="dro", dry_run="All")
    assert (api.writes, api.changes, api.store.revision) == ([], [], revision)
    configmaps.server_side_apply(body=body, namespace="default", field_manager="dro")
    configmaps.server_side_apply(body=body, namespace="default", field_manager="dro")
    assert len(api.writes) == 2
    assert len(api.changes) == 1
    assert int(api.store.revision) == int(revision) + 1
    method, path, query = api.writes[0]
    assert (method, path) == ("PATCH", "/api/v1/namespaces/default/configmaps/counted")
    assert query["fieldManager"] == "dro"
    core.read_namespaced_config_map("counted", "default")
    assert api.requests[-1].method == "GET"
    assert len(api.writes) == 2


@emulator_only
def test_crd_establishment_can_be_delayed(tmp_path: Path) -> None:
    with KubeAPI(crd_establish_delay=0.3) as api:
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
            dyn = DynamicClient(api_client, cache_file=str(tmp_path / "discovery.json"))
            crds = dyn.resources.get(
                api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition"
            )
            crds.create(body=crd_body("slow.contract.dro.example", "Namespaced"))
            assert not established(dyn, "widgets.slow.contract.dro.example")
            assert search(dyn, "slow.contract.dro.example/v1", "Widget") is None
            wait_for("Established", lambda: established(dyn, "widgets.slow.contract.dro.example"))
            assert search(dyn, "slow.contract.dro.example/v1", "Widget") is not None


@emulator_only
def test_kubeconfig_merges_contexts(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    with KubeAPI(nodes=1) as first, KubeAPI(nodes=2) as second:
        first.kubeconfig(path, context="c1")
        second.kubeconfig(path, context="c2")
        document = yaml.safe_load(path.read_text())
        assert document["current-context"] == "c1"
        for context, count in (("c1", 1), ("c2", 2)):
            with config.new_client_from_config(config_file=str(path), context=context) as c:
                assert len(client.CoreV1Api(c).list_node().items) == count


# Emulator only: faults and the command line ------------------------------------------------------


@emulator_only
def test_discovery_fallbacks_and_health(api: KubeAPI, api_client: ApiClient) -> None:
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    only_aggregated = api_client.call_api("GET", f"{api.url}/apis", {"Accept": aggregated})
    assert only_aggregated.status == 406
    with_fallback = api_client.call_api(
        "GET", f"{api.url}/apis", {"Accept": f"{aggregated},application/json"}
    )
    assert with_fallback.status == 200
    assert json.loads(with_fallback.read())["kind"] == "APIGroupList"
    assert api_client.call_api("GET", f"{api.url}/openapi/v2").status == 404
    assert api_client.call_api("GET", f"{api.url}/healthz").status == 200


@emulator_only
def test_stop_frees_the_port() -> None:
    api = KubeAPI().start()
    port = api.port
    assert answers(port)
    api.stop()
    assert not answers(port)
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))


@emulator_only
def test_injected_failures(api: KubeAPI, core: client.CoreV1Api) -> None:
    api.fail_next(1)
    with pytest.raises(ApiException) as failed:
        core.list_node()
    assert failed.value.status == 500
    assert status_of(failed.value)["reason"] == "InternalError"
    assert len(core.list_node().items) == 3

    api.fail_next(2, status=503, method="POST", path_prefix="/api/v1/namespaces/default")
    assert core.list_namespaced_config_map("default").items == []  # GETs pass
    for _ in range(2):
        with pytest.raises(ApiException) as unavailable:
            core.create_namespaced_config_map("default", configmap("later"))
        assert unavailable.value.status == 503
    core.create_namespaced_config_map("default", configmap("later"))
    assert api.faults.pending_failures == 0


@emulator_only
def test_delay_makes_client_timeouts_fire(api: KubeAPI, core: client.CoreV1Api) -> None:
    api.delay(2.0)
    started = time.monotonic()
    with pytest.raises((ReadTimeoutError, MaxRetryError)) as timed_out:
        core.create_namespaced_config_map("default", configmap("slow"), _request_timeout=0.2)
    error = timed_out.value
    assert isinstance(error, ReadTimeoutError) or isinstance(error.reason, ReadTimeoutError)
    assert time.monotonic() - started < 1.9
    api.delay(0)
    assert len(core.list_node(_request_timeout=5).items) == 3


@emulator_only
def test_refuse_and_accept_connections(api: KubeAPI, core: client.CoreV1Api) -> None:
    port = api.port
    assert len(core.list_node().items) == 3  # leaves a kept-alive connection in the pool
    api.refuse()
    with pytest.raises(MaxRetryError) as refused:
        core.list_node()
    assert isinstance(refused.value.reason, NewConnectionError)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    api.accept()
    assert api.port == port
    assert len(core.list_node().items) == 3


def free_port() -> int:
    """Ask the kernel for a currently free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def answers(port: int) -> bool:
    """Tell whether something accepts TCP connections on 127.0.0.1:port."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@emulator_only
def test_command_line_server(tmp_path: Path) -> None:
    port = free_port()
    command = ["timeout", "60", sys.executable, "-m", "tests.kubeapi", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--nodes", "2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for("the CLI server to listen", lambda: answers(port) or process.poll() is not None)
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        kubeconfig = tmp_path / "cli-kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "cli", "cluster": {"server": f"http://127.0.0.1:{port}"}}
                    ],
                    "users": [{"name": "cli", "user": {"token": "anything"}}],
                    "contexts": [{"name": "cli", "context": {"cluster": "cli", "user": "cli"}}],
                    "current-context": "cli",
                }
            )
        )
        with config.new_client_from_config(config_file=str(kubeconfig)) as cli_client:
            names = [n.metadata.name for n in client.CoreV1Api(cli_client).list_node().items]
        assert names == ["node-0", "node-1"]
    finally:
        os.kill(process.pid, signal.SIGTERM)
        stdout, _ = process.communicate(timeout=10)
    assert stdout.decode().strip() == f"http://127.0.0.1:{port}"
    assert not answers(port)


# Emulator only: WATCH bookmarks, 410 Gone, a stopping server --------------------------------------


@emulator_only
def test_bookmarks_carry_the_version_up_to_which_all_was_sent(
    api: KubeAPI, core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    api.bookmark_interval = 0.05
    watched, elsewhere = make_namespace(), make_namespace()
    start = core.list_namespaced_config_map(watched).metadata.resource_version
    stream = events(core, watched, resource_version=start, allow_watch_bookmarks=True)
    moved = core.create_namespaced_config_map(elsewhere, ours("x"))
    for event in stream:  # changes elsewhere move the version the bookmarks carry
        assert event["type"] == "BOOKMARK"
        assert event["object"]["kind"] == "ConfigMap"
        if int(event["object"]["metadata"]["resourceVersion"]) >= int(
            moved.metadata.resource_version
        ):
            break
    else:
        pytest.fail("the watch ended without a bookmark")


@emulator_only
def test_a_version_older_than_the_history_is_gone(
    api: KubeAPI, core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    created = core.create_namespaced_config_map(namespace, ours("a"))
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "w"}})
    api.compact()
    gone = watch.Watch().stream(  # typed events: the client reads an ERROR event's Status
        core.list_namespaced_config_map,
        namespace,
        label_selector=OURS,
        resource_version=created.metadata.resource_version,
        timeout_seconds=TIMEOUT,
    )
    with pytest.raises(ApiException) as raised:
        next(iter(gone))
    assert raised.value.status == 410
    assert "too old resource version" in str(raised.value.reason)
    fresh = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, ours("b"))
    assert seen(next(events(core, namespace, resource_version=fresh))) == ("ADDED", "b")


@emulator_only
def test_stopping_the_server_ends_its_watches(
    api: KubeAPI, core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    stream = events(core, namespace)
    ended = threading.Event()

    def drain() -> None:
        try:
            for _ in stream:
                pass
        except Exception:  # the connection is cut: any client error ends the stream too
            pass
        ended.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    core.create_namespaced_config_map(namespace, ours("a"))
    api.stop()
    assert ended.wait(5), "the watch outlived the server"
    api.start()  # the namespace is deleted at teardown


@emulator_only
def test_a_pod_leaving_a_field_selection_is_deleted(
    api: KubeAPI, core: client.CoreV1Api, make_namespace: Callable[[], str]
) -> None:
    namespace = make_namespace()
    api.add_pod(namespace, "job-1", "node-0")
    unfinished = "status.phase!=Succeeded,status.phase!=Failed"
    stream = iter(
        watch.Watch().stream(
            core.list_namespaced_pod,
            namespace,
            field_selector=unfinished,
            timeout_seconds=TIMEOUT,
            deserialize=False,
        )
    )
    assert seen(next(stream)) == ("ADDED", "job-1")
    api.set_status("", "v1", "pods", namespace, "job-1", {"phase": "Succeeded"})
    assert seen(next(stream)) == ("DELETED", "job-1")
