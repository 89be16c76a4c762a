"""Cluster access through the official client, over real HTTP to the API emulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes.config import kube_config

from reconciler.errors import ClusterError, UsageError
from reconciler.kube import client as kube
from reconciler.kube.contexts import kubeconfig_contexts
from tests.builders.kubeobjects import deployment
from tests.kubeapi import KubeAPI


def kubeconfig(path: Path, *contexts: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": c, "cluster": {"server": "http://127.0.0.1:1"}} for c in contexts
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts],
            }
        ),
        encoding="utf-8",
    )
    return path


def test_contexts_come_from_a_file_or_a_directory(tmp_path: Path) -> None:
    one = kubeconfig(tmp_path / "one.yaml", "eu-1", "eu-2")
    assert kubeconfig_contexts(one) == {"eu-1": one, "eu-2": one}
    folder = tmp_path / "mounted"
    folder.mkdir()
    a = kubeconfig(folder / "a", "eu-1")
    b = kubeconfig(folder / "b", "us-1")
    assert kubeconfig_contexts(folder) == {"eu-1": a, "us-1": b}
    kubeconfig(folder / "c", "us-1")
    with pytest.raises(UsageError, match=r"'us-1' is defined in both .*b and .*c"):
        kubeconfig_contexts(folder)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[KubeAPI, kube.Connection]]:
    server = KubeAPI(nodes=2, node_cpu="8", node_memory="32Gi")
    server.start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="c1")
        connection = kube.connect("c1", context="c1", kubeconfig=Path(config), timeout=2.0)
        yield server, connection
        connection.close()
    finally:
        server.stop()


def test_apply_get_list_and_delete(api: tuple[KubeAPI, kube.Connection]) -> None:
    _server, connection = api
    applied = connection.apply(deployment("web"))
    assert applied["metadata"]["uid"]
    managers = {m["manager"] for m in applied["metadata"]["managedFields"]}
    assert managers == {"dro"}
    live = connection.get("apps/v1", "Deployment", "web", "default")
    assert live is not None
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "app:1"
    connection.apply(deployment("api"))
    names = [
        d["metadata"]["name"]
        for d in connection.list("apps/v1", "Deployment", label_selector="app in (web)")
    ]
    assert names == ["web"]
    assert len(connection.list("v1", "Node")) == 2
    assert connection.delete("apps/v1", "Deployment", "web", "default")
    assert connection.get("apps/v1", "Deployment", "web", "default") is None
    assert not connection.delete("apps/v1", "Deployment", "web", "default")


def test_a_dry_run_changes_nothing(api: tuple[KubeAPI, kube.Connection]) -> None:
    server, connection = api
    connection.apply(deployment("web"))
    writes = server.writes
    preview = connection.apply(deployment("web", image="app:2"), dry_run=True)
    assert preview["spec"]["template"]["spec"]["containers"][0]["image"] == "app:2"
    live = connection.get("apps/v1", "Deployment", "web", "default")
    assert live is not None
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "app:1"
    assert server.writes == writes


def test_errors_name_the_cluster_the_verb_and_the_object(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = api
    connection.get("apps/v1", "Deployment", "web", "default")  # discovery done
    server.fail_next(1, status=500)
    with pytest.raises(ClusterError, match=r"cluster c1: apply Deployment default/web: HTTP 500"):
        connection.apply(deployment("web"))
    with pytest.raises(
        ClusterError, match="cluster c1: discover Gadget: the API serves no such kind"
    ):
        connection.get("example.com/v1", "Gadget", "g")


def test_a_slow_or_refusing_cluster_fails_within_its_timeout(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = api
    connection.get("apps/v1", "Deployment", "web", "default")
    server.delay(5.0)
    with pytest.raises(ClusterError, match="cluster c1: get Deployment default/web: cannot reach"):
        connection.get("apps/v1", "Deployment", "web", "default")
    server.delay(0.0)
    server.refuse()
    with pytest.raises(ClusterError, match="cannot reach the API"):
        connection.list("v1", "Node")
    server.accept()
    assert len(connection.list("v1", "Node")) == 2


def test_a_kubeconfig_is_parsed_once_for_its_contexts_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    merger = kube_config.KubeConfigMerger

    def counting(path: str) -> object:
        parsed.append(path)
        return merger(path)

    monkeypatch.setattr(kube_config, "KubeConfigMerger", counting)
    with KubeAPI() as first, KubeAPI() as second:
        config = tmp_path / "kubeconfig"
        first.kubeconfig(config, context="a")
        first.kubeconfig(config, context="b")
        for context in ("a", "b", "a"):
            kube.connect(context, context=context, kubeconfig=config, timeout=2.0).close()
        assert parsed == [str(config)], "one parse for every connection to its contexts"
        second.kubeconfig(config, context="a")  # `a` now points at the second server
        connection = kube.connect("a", context="a", kubeconfig=config, timeout=2.0)
        assert parsed == [str(config)] * 2, "the changed file is parsed again"
        first.reset_counters()
        connection.list("v1", "Namespace")
        connection.close()
        assert second.requests
        assert not first.requests
