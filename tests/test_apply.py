"""Apply to a cluster over real HTTP: order, zero writes when steady, drift, prune by inventory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.kube import client as kube
from reconciler.live import apply
from tests.builders.kubeobjects import deployment
from tests.kubeapi import KubeAPI


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[KubeAPI, kube.Connection]]:
    server = KubeAPI(nodes=1).start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="eu-1")
        connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
        yield server, connection
        connection.close()
    finally:
        server.stop()


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def configmap(name: str, value: str = "1", **annotations: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "shop"}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"v": value}}


def shop(replicas: int = 2, image: str = "app:1") -> dict[str, Any]:
    web = deployment("web", image=image, replicas=replicas)
    web["metadata"]["namespace"] = "shop"
    return web


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
WIDGET = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "namespace": "shop"},
}


def applied_paths(server: KubeAPI) -> list[str]:
    """The objects applied, in order, without dro's own inventory and its namespace."""
    return [
        r.path
        for r in server.writes
        if r.method == "PATCH" and "dro-system" not in r.path and "dro-inventory" not in r.path
    ]


def test_crds_and_namespaces_go_first_and_the_crd_is_awaited(tmp_path: Path) -> None:
    server = KubeAPI(crd_establish_delay=0.3).start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="eu-1")
        connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
        report = apply.sync(
            connection, [WIDGET, shop(), configmap("settings"), namespace("shop"), CRD], prune=True
        )
        connection.close()
    finally:
        server.stop()
    assert report.ok, report.failed
    assert report.applied == 5
    paths = applied_paths(server)
    assert [p.rsplit("/", 2)[-2] for p in paths[:5]] == [
        "customresourcedefinitions",
        "namespaces",
        "configmaps",
        "deployments",
        "widgets",
    ]


def test_a_steady_pass_writes_nothing(cluster: tuple[KubeAPI, kube.Connection]) -> None:
    server, connection = cluster
    objects = [namespace("shop"), shop(), configmap("settings")]
    first = apply.sync(connection, objects, prune=True)
    assert (first.applied, first.unchanged) == (3, 0)
    server.reset_counters()
    again = apply.sync(connection, objects, prune=True)
    assert (again.applied, again.unchanged, again.writes) == (0, 3, 0)
    assert server.writes == [], "dry runs and reads only"


def test_drift_is_reported_and_corrected_and_an_update_is_not_drift(
    cluster: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = cluster
    apply.sync(connection, [namespace("shop"), shop()], prune=True)
    live = server.get("apps", "v1", "deployments", "shop", "web")
    assert live is not None
    server.put({**live, "spec": {**live["spec"], "replicas": 9}})
    report = apply.sync(connection, [namespace("shop"), shop()], prune=True)
    assert report.drifted == ["Deployment shop/web: .spec.replicas"]
    restored = server.get("apps", "v1", "deployments", "shop", "web")
    assert restored is not None
    assert restored["spec"]["replicas"] == 2
    update = apply.sync(connection, [namespace("shop"), shop(image="app:2")], prune=True)
    assert (update.applied, update.drifted) == (1, [])


def test_prune_takes_only_what_dro_applied_and_spares_protected_objects(
    cluster: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = cluster
    guarded = labelled(configmap("guarded", **{"multicluster.io/deletion-protected": "Always"}))
    first = [namespace("shop"), labelled(configmap("old")), guarded, shop()]
    apply.sync(connection, first, prune=True)
    server.put(configmap("theirs"))  # never applied by dro
    report = apply.sync(connection, [namespace("shop"), shop()], prune=True)
    assert report.ok, report.failed
    assert (report.pruned, report.protected) == (1, ["ConfigMap shop/guarded"])
    assert server.get("", "v1", "configmaps", "shop", "old") is None
    assert server.get("", "v1", "configmaps", "shop", "guarded") is not None
    assert server.get("", "v1", "configmaps", "shop", "theirs") is not None
    quiet = apply.sync(connection, [namespace("shop"), shop()], prune=True)
    assert (quiet.pruned, quiet.protected, quiet.writes) == (0, [], 0), "both left the inventory"


def test_no_prune_when_the_pass_says_so_or_something_failed(
    cluster: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = cluster
    objects = [labelled(o) for o in (namespace("shop"), configmap("a"), configmap("b"))]
    apply.sync(connection, objects, prune=True)
    gated = apply.sync(connection, [namespace("shop"), configmap("a")], prune=False)
    assert gated.pruned == 0
    assert server.get("", "v1", "configmaps", "shop", "b") is not None
    server.fail_next(
        1, status=500, method="PATCH", path_prefix="/api/v1/namespaces/shop/configmaps/c"
    )
    failed = apply.sync(connection, [namespace("shop"), configmap("a"), configmap("c")], prune=True)
    assert not failed.ok
    assert failed.failed == [
        "cluster eu-1: apply ConfigMap shop/c: HTTP 500 Internal Server Error: injected fault"
    ]
    assert server.get("", "v1", "configmaps", "shop", "b") is not None, "no prune after a failure"
    healed = apply.sync(connection, [namespace("shop"), configmap("a")], prune=True)
    assert healed.ok
    assert healed.pruned == 1, "b is still in the inventory, and goes now"


def test_an_unreachable_cluster_is_left_alone(cluster: tuple[KubeAPI, kube.Connection]) -> None:
    server, connection = cluster
    server.refuse()
    report = apply.sync(connection, [namespace("shop")], prune=True)
    server.accept()
    assert not report.reachable
    assert report.applied == 0
    assert "cannot reach the API" in report.failed[0]


def labelled(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with dro's managed-by label, as every rendered object carries it."""
    metadata = obj["metadata"]
    metadata["labels"] = {**metadata.get("labels", {}), "app.kubernetes.io/managed-by": "dro"}
    return obj


def test_labelled_objects_are_read_by_one_list_per_kind(
    cluster: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = cluster
    objects = [labelled(o) for o in (namespace("shop"), shop(), configmap("a"), configmap("b"))]
    first = apply.sync(connection, objects, prune=True)
    assert (first.applied, first.unchanged) == (4, 0)
    dry_runs = [r for r in server.requests if r.query.get("dryRun")]
    assert dry_runs == [], "an object listed absent is applied without a dry run"
    server.reset_counters()
    steady = apply.sync(connection, objects, prune=True)
    assert (steady.applied, steady.unchanged, steady.writes) == (0, 4, 0)
    assert {r.method for r in server.requests} == {"GET"}
    reads = [
        r for r in server.requests if "/configmaps" in r.path and "dro-inventory" not in r.path
    ]
    assert len(reads) == 1, "one LIST for both ConfigMaps, no GET per object"
    live = server.get("", "v1", "configmaps", "shop", "b")
    assert live is not None
    server.put({**live, "data": {"v": "changed by hand"}})
    healed = apply.sync(connection, objects, prune=True)
    assert healed.drifted == ["ConfigMap shop/b: .data.v"]
    restored = server.get("", "v1", "configmaps", "shop", "b")
    assert restored is not None
    assert restored["data"] == {"v": "1"}
