"""The connections a long-running process keeps (`live.pool`), the reads a pass shares on
them (`Connection.share_reads`), and the verdicts they remember (`drift.held`,
`live.steady`), on one emulated cluster."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.domain.drift import Drifted
from reconciler.kube import client as kube
from reconciler.kube import inventory
from reconciler.live import apply, drift, steady
from reconciler.live.pool import Pool
from tests.kubeapi import KubeAPI
from tests.pooled import pooled

SELECTOR = inventory.MANAGED_BY_SELECTOR


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[KubeAPI, Path]]:
    api = KubeAPI(nodes=1).start()
    try:
        yield api, api.kubeconfig(tmp_path / "kubeconfig", context="eu-1")
    finally:
        api.stop()


def configmap(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app.kubernetes.io/managed-by": "dro"},
        },
        "data": {"v": value},
    }


def discovery(api: KubeAPI) -> list[str]:
    return [r.path for r in api.requests if r.path in ("/api", "/apis", "/version")]


def test_a_kept_connection_discovers_once(server: tuple[KubeAPI, Path]) -> None:
    api, config = server
    pool = Pool()
    try:
        first = pooled(pool, "eu-1", config)
        first.list("v1", "ConfigMap")
        assert discovery(api), "the first pass discovers"
        pool.release(["eu-1"])
        api.reset_counters()
        again = pooled(pool, "eu-1", config)
        again.list("v1", "ConfigMap")
        assert again is first
        assert discovery(api) == []
    finally:
        pool.close()


def test_a_failed_connection_a_changed_kubeconfig_or_an_unused_cluster_is_not_kept(
    server: tuple[KubeAPI, Path],
) -> None:
    _api, config = server
    pool = Pool()
    try:
        first = pooled(pool, "eu-1", config)
        with pytest.raises(kube.UnservedKind):
            first.list("example.com/v1", "Widget")
        assert not first.sound
        pool.release(["eu-1"])
        second = pooled(pool, "eu-1", config)
        assert second is not first, "a connection that failed is made again"
        pool.release(["eu-1"])
        stat = config.stat()
        os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        third = pooled(pool, "eu-1", config)
        assert third is not second, "a changed kubeconfig makes a new connection"
        pool.release([])
        assert pooled(pool, "eu-1", config) is not third, "a cluster the pass did not use is closed"
    finally:
        pool.close()


def test_shared_reads_are_made_once_per_pass_and_a_write_of_the_kind_drops_them(
    server: tuple[KubeAPI, Path],
) -> None:
    api, config = server
    connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
    try:
        connection.apply(configmap("a", "1"))

        def lists() -> int:
            return sum(1 for r in api.requests if r.path == "/api/v1/configmaps")

        connection.share_reads()
        api.reset_counters()
        assert len(connection.list("v1", "ConfigMap", label_selector=SELECTOR, shared=True)) == 1
        connection.list("v1", "ConfigMap", label_selector=SELECTOR, shared=True)
        assert lists() == 1
        connection.list("v1", "ConfigMap", label_selector=SELECTOR)
        assert lists() == 2, "a read not marked shared asks the server"
        connection.apply(configmap("b", "1"))
        found = connection.list("v1", "ConfigMap", label_selector=SELECTOR, shared=True)
        assert lists() == 3
        assert sorted(c["metadata"]["name"] for c in found) == ["a", "b"]
        connection.share_reads(False)
        connection.list("v1", "ConfigMap", label_selector=SELECTOR, shared=True)
        assert lists() == 4, "outside a pass every read asks the server"
    finally:
        connection.close()


def test_a_verdict_is_remembered_per_resource_version(server: tuple[KubeAPI, Path]) -> None:
    _api, config = server
    connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
    try:
        wanted = configmap("a", "1")
        connection.apply(wanted)
        digest = inventory.digest(wanted)
        live = connection.get("v1", "ConfigMap", "a", "default")
        assert live is not None
        assert drift.held(connection, live, wanted, digest)
        assert len(connection.known) == 1
        changed = connection.apply(configmap("a", "2"))
        assert not drift.held(connection, changed, wanted, digest), "a new resourceVersion"
        assert drift.held(connection, live, wanted, digest)
        same_version = {**live, "data": {"v": "not compared again"}}
        assert drift.held(connection, same_version, wanted, digest), "answered from memory"
        assert not drift.holds(same_version, wanted)
    finally:
        connection.close()


def test_a_steady_cluster_is_surveyed_from_memory_until_one_of_its_objects_changes(
    server: tuple[KubeAPI, Path],
) -> None:
    api, config = server
    connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
    rendered = [configmap("a", "1"), configmap("b", "1")]
    kinds, same = [("v1", "ConfigMap")], (object(), object())
    computed: list[str] = []

    def surveyed() -> list[str]:
        """One pass's survey through `steady.remembered`: the drifted objects' names."""
        connection.share_reads()

        def survey() -> list[Drifted]:
            computed.append("survey")
            return drift.survey(connection, copy.deepcopy(rendered))

        found = steady.remembered(connection, "survey", kinds, same, survey, list)
        return [d.key.name for d in found]

    try:
        assert apply.sync(connection, copy.deepcopy(rendered), prune=True).ok
        assert surveyed() == []
        assert computed == ["survey"]
        api.reset_counters()
        assert surveyed() == []
        assert computed == ["survey"], "answered from memory"
        assert not [r for r in api.requests if r.path.endswith(("/a", "/b"))], "no GET"
        assert not [r for r in api.requests if r.method != "GET"], "no dry run"
        live = api.get("", "v1", "configmaps", "default", "b")
        assert live is not None
        api.put({**live, "data": {"v": "edited by hand"}})
        assert surveyed() == ["b"], "a new resourceVersion: compared again"
        assert computed == ["survey", "survey"]
        assert surveyed() == ["b"], "a survey that made a dry run is not remembered"
        assert computed == ["survey", "survey", "survey"]
    finally:
        connection.close()
