"""The watch cache of a kept connection (`kube.watchcache`, `dro run --watch-clusters`), over
real HTTP to the API emulator: a list is answered from memory and follows the cluster's
changes, every answer equal to what a fresh connection observes; a write through the
connection is read back; a 410 Gone or a cut lists again; an unreachable cluster is not
answered from memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.domain import Observation
from reconciler.errors import ClusterError
from reconciler.kube import client as kube
from reconciler.kube import watchcache
from reconciler.live import observe
from reconciler.live.pool import Pool
from tests.contract.helpers import wait_for
from tests.kubeapi import KubeAPI
from tests.pooled import pooled, watching_pool
from tests.test_observe_memo import CHANGES, deployment

AT = "2026-01-01T00:00:00Z"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[KubeAPI, Path]]:
    server = KubeAPI(nodes=2, node_cpu="16", node_memory="64Gi").start()
    server.bookmark_interval = 0.05
    try:
        yield server, server.kubeconfig(tmp_path / "kubeconfig", context="eu-1")
    finally:
        server.stop()


@pytest.fixture
def pool() -> Iterator[Pool]:
    with watching_pool() as kept:
        yield kept


def take(pool: Pool, config: Path) -> kube.Connection:
    """The pool's connection to the cluster, as a pass takes it."""
    return pooled(pool, "eu-1", config)


def kept(pool: Pool, config: Path) -> kube.Connection:
    """The connection as a second pass takes it: a connection watches once it lasted a pass."""
    if pool.watching:
        take(pool, config)
    return take(pool, config)


def fresh(config: Path) -> Observation:
    connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
    try:
        return observe.live(connection, observed_at=AT)
    finally:
        connection.close()


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_kept_list_is_answered_from_memory_and_follows_the_cluster(
    api: tuple[KubeAPI, Path], pool: Pool, change: str
) -> None:
    server, config = api
    server.add_pod("default", "p0", "node-0", requests={"cpu": "2", "memory": "1Gi"})
    server.put(deployment("web", 1))
    first = observe.live(kept(pool, config), observed_at=AT)
    assert first == fresh(config)
    server.reset_counters()
    again = observe.live(kept(pool, config), observed_at=AT)
    assert again == first
    assert not server.requests, "a steady cluster is answered from memory"
    CHANGES[change](server)
    wait_for(  # a change made of several writes may be seen half-way first
        f"{change} is delivered",
        lambda: (
            (seen := observe.live(kept(pool, config), observed_at=AT)) != first
            and seen == fresh(config)
        ),
    )
    server.reset_counters()
    observe.live(kept(pool, config), observed_at=AT)
    assert not server.requests


def test_a_write_through_the_connection_is_read_back_at_once(
    api: tuple[KubeAPI, Path], pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, config = api
    connection = kept(pool, config)
    assert connection.list("apps/v1", "Deployment") == []
    delivered = watchcache.Reflector._event
    held: list[tuple[watchcache.Reflector, Any]] = []  # a slow watch: events wait here
    monkeypatch.setattr(watchcache.Reflector, "_event", lambda *event: held.append(event))
    body = deployment("web", 0)
    body.pop("status")
    connection.apply(body)
    names = [d["metadata"]["name"] for d in connection.list("apps/v1", "Deployment")]
    assert names == ["web"], "the list after a write asks the server"
    again = [d["metadata"]["name"] for d in connection.list("apps/v1", "Deployment")]
    assert again == ["web"], "and so does the next, until the watch has caught up to it"
    for reflector, event in held:
        delivered(reflector, event)
    monkeypatch.setattr(watchcache.Reflector, "_event", delivered)
    key = ("list", "Deployment", "apps/v1", None, None, None)
    server.put(deployment("other", 1))  # moves the watch past that list

    def remembered() -> list[str]:
        found = connection.watches.answer(key) if connection.watches is not None else None
        return [] if found is None else [d["metadata"]["name"] for d in found.items]

    wait_for("the cache answers again, with the later change", lambda: "other" in remembered())
    server.reset_counters()
    found = [d["metadata"]["name"] for d in connection.list("apps/v1", "Deployment")]
    assert found == ["other", "web"]
    assert not server.requests


def test_a_version_the_server_forgot_is_listed_again(
    api: tuple[KubeAPI, Path], pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, config = api
    server.bookmark_interval = 3600.0  # the Pods' watch stays at its version: no bookmarks
    monkeypatch.setattr(watchcache, "WATCH_SECONDS", 1)  # each watch ends after a second
    first = observe.live(kept(pool, config), observed_at=AT)
    server.add_node("node-9", cpu="4")  # another kind's change: the store moves on
    server.compact()  # the Pods' next watch, from their version, gets 410 Gone
    server.add_pod("default", "late", "node-1", requests={"cpu": "3"})
    wait_for(
        "the relisted state",
        lambda: (seen := _observed(pool, config)) not in (None, first) and seen == fresh(config),
    )


def test_a_history_compacted_meanwhile_is_listed_again(
    api: tuple[KubeAPI, Path], pool: Pool
) -> None:
    server, config = api
    first = observe.live(kept(pool, config), observed_at=AT)
    server.refuse()  # the watches are cut; the cluster changes and compacts meanwhile
    server.add_pod("default", "late", "node-1", requests={"cpu": "3"})
    server.compact()
    server.accept()
    after = wait_for(
        "the relisted state",
        lambda: _observed(pool, config) not in (None, first) and _observed(pool, config),
    )
    assert after == fresh(config)
    assert any(r.method == "GET" and r.query.get("watch") for r in server.requests)


def _observed(pool: Pool, config: Path) -> Observation | None:
    try:
        return observe.live(kept(pool, config), observed_at=AT)
    except ClusterError:
        return None


def test_an_unreachable_cluster_is_not_answered_from_memory(
    api: tuple[KubeAPI, Path], pool: Pool
) -> None:
    server, config = api
    observe.live(kept(pool, config), observed_at=AT)
    server.refuse()
    wait_for("the listing fails", lambda: _observed(pool, config) is None)


def test_a_cluster_not_heard_from_is_asked_again(
    api: tuple[KubeAPI, Path], pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, config = api
    observe.live(kept(pool, config), observed_at=AT)
    monkeypatch.setattr(watchcache, "FRESH", -1.0)
    server.reset_counters()
    observe.live(kept(pool, config), observed_at=AT)
    assert server.requests, "a silent stream may be a cut one: the server is asked"


def test_without_watching_every_pass_lists(api: tuple[KubeAPI, Path]) -> None:
    server, config = api
    plain = Pool()
    try:
        observe.live(kept(plain, config), observed_at=AT)
        assert kept(plain, config).watches is None
        server.reset_counters()
        observe.live(kept(plain, config), observed_at=AT)
        assert server.requests
        assert not any(r.query.get("watch") for r in server.requests)
    finally:
        plain.close()


def test_a_connection_watches_once_it_lasted_a_pass(api: tuple[KubeAPI, Path], pool: Pool) -> None:
    _, config = api
    made = take(pool, config)
    assert made.watches is None, "a connection that may fail every pass starts no watch"
    again = take(pool, config)
    assert again is made
    assert again.watches is not None


def test_turning_watching_off_stops_the_watches(api: tuple[KubeAPI, Path], pool: Pool) -> None:
    _, config = api
    connection = kept(pool, config)
    observe.live(connection, observed_at=AT)
    assert connection.watches is not None
    pool.watching = False
    assert kept(pool, config).watches is None


def test_past_the_budget_a_list_asks_the_server(
    api: tuple[KubeAPI, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, config = api
    budget = threading.BoundedSemaphore(1)
    monkeypatch.setattr(watchcache, "_BUDGET", budget)
    with watching_pool() as pool:
        observe.live(kept(pool, config), observed_at=AT)  # lists six kinds
        watches = kept(pool, config).watches
        assert watches is not None
        assert len(watches._reflectors) == 1, "one reflector: the budget's"
        assert not budget.acquire(blocking=False)
    assert budget.acquire(blocking=False), "closing the connection gives its reflector back"
