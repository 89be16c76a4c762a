"""The real-cluster side of bench/apply.py counts requests and writes at the client, where the
emulator side counts them at the server: on an emulator, both counts must agree, so the two
columns of the benchmark measure the same thing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import apply as bench_apply
from bench import apply_real
from reconciler.kube import client as kube
from reconciler.live import apply
from tests.kubeapi import KubeAPI


@pytest.fixture
def emulated(tmp_path: Path) -> Iterator[tuple[KubeAPI, kube.Connection]]:
    server = KubeAPI().start()
    config = server.kubeconfig(tmp_path / "kubeconfig", context="c1")
    connection = kube.connect("c1", context="c1", kubeconfig=config)
    yield server, connection
    connection.close()
    server.stop()


def test_the_client_counts_what_the_server_counts(
    emulated: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = emulated
    counter = apply_real.Counter(connection)
    objects = bench_apply.tree()[:40]
    for expect_writes in (True, False):  # a first pass, then a steady one
        server.reset_counters()
        counter.reset()
        result = apply.sync(connection, objects, prune=True)
        assert result.failed == []
        assert counter.requests == len(server.requests) > 0
        assert counter.writes == len(server.writes)
        assert (counter.writes > 0) is expect_writes
    connection.apply(objects[0], dry_run=True)  # a dry run is a request, not a write
    assert (counter.requests, counter.writes) == (len(server.requests), len(server.writes))


def test_changes_are_objects_that_appeared_went_or_moved() -> None:
    before = {("ConfigMap", "a", "x"): "1", ("ConfigMap", "a", "y"): "2"}
    after = {("ConfigMap", "a", "x"): "1", ("ConfigMap", "a", "y"): "3", ("Service", "a", "z"): "4"}
    assert apply_real.moved(before, before) == 0
    assert apply_real.moved(before, after) == 2
    assert apply_real.moved(before, {}) == 2
