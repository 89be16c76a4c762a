"""Leader election on a Lease, over real HTTP to the API emulator through the official client.

Expiry is driven by a fake clock shared by the electors; only the `LeaderLoop` tests use the
real clock, with sub-second periods, and wait on events (never sleep) to synchronise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import ClusterError
from reconciler.kube import client as kube
from reconciler.service import leader
from tests.kubeapi import KubeAPI

START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
NAMESPACE = "default"


class FakeClock:
    """A wall clock that moves only when told to."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[KubeAPI, kube.Connection]]:
    server = KubeAPI()
    server.start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="c1")
        connection = kube.connect("c1", context="c1", kubeconfig=Path(config), timeout=2.0)
        yield server, connection
        connection.close()
    finally:
        server.stop()


def lease_of(connection: kube.Connection, name: str = "dro") -> dict[str, Any]:
    found = connection.get("coordination.k8s.io/v1", "Lease", name, NAMESPACE)
    assert found is not None
    return found


def rivals(connection: Any) -> tuple[FakeClock, leader.Elector, leader.Elector]:
    """Two electors, pod-a and pod-b, for one Lease, on one shared fake clock."""
    clock = FakeClock()
    return clock, elector(connection, "pod-a", clock), elector(connection, "pod-b", clock)


def elector(
    connection: Any, identity: str, clock: FakeClock | None = None, **timings: float
) -> leader.Elector:
    config = leader.LeaseConfig(namespace=NAMESPACE, identity=identity, **timings)
    if clock is None:
        return leader.Elector(connection, config)
    return leader.Elector(connection, config, clock=clock)


def test_the_first_elector_creates_the_lease_and_leads(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    a = elector(connection, "pod-a", FakeClock())
    assert not a.is_leader
    assert a.try_acquire_or_renew()
    assert a.is_leader
    lease = lease_of(connection)
    assert lease["spec"] == {
        "holderIdentity": "pod-a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:00.000000Z",
        "leaseTransitions": 0,
    }


def test_another_identity_waits_until_the_lease_expires_then_takes_over(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    clock, a, b = rivals(connection)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    clock.advance(15.0)  # renewTime + leaseDurationSeconds == now: not yet expired
    assert not b.try_acquire_or_renew()
    assert not b.is_leader
    assert lease_of(connection)["spec"]["holderIdentity"] == "pod-a"
    clock.advance(0.001)
    assert b.try_acquire_or_renew()
    spec = lease_of(connection)["spec"]
    assert spec["holderIdentity"] == "pod-b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == spec["renewTime"] == "2026-01-01T00:00:15.001000Z"
    assert not a.try_acquire_or_renew()  # the old holder sees it lost the lease
    assert not a.is_leader
    assert lease_of(connection)["spec"]["holderIdentity"] == "pod-b"


def test_a_renewal_keeps_the_holder_leading_and_moves_renew_time(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    clock, a, b = rivals(connection)
    assert a.try_acquire_or_renew()
    version = lease_of(connection)["metadata"]["resourceVersion"]
    clock.advance(10.0)
    assert a.try_acquire_or_renew()
    assert a.is_leader
    lease = lease_of(connection)
    assert lease["metadata"]["resourceVersion"] != version
    assert lease["spec"]["renewTime"] == "2026-01-01T00:00:10.000000Z"
    assert lease["spec"]["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert lease["spec"]["leaseTransitions"] == 0
    clock.advance(14.0)  # 24 s after acquisition, 14 s after the renewal: still fresh
    assert not b.try_acquire_or_renew()


def test_release_lets_another_identity_take_over_at_once(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = api
    _clock, a, b = rivals(connection)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    writes = len(server.writes)
    b.release()  # not the holder: writes nothing
    assert len(server.writes) == writes
    a.release()
    assert not a.is_leader
    assert lease_of(connection)["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew()  # the clock did not move
    spec = lease_of(connection)["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("pod-b", 1)


class StaleRead:
    """A connection whose `get` answers what was read before: the race where two replicas
    read the same resourceVersion and both write."""

    def __init__(self, connection: kube.Connection, snapshot: dict[str, Any] | None) -> None:
        self._connection, self._snapshot = connection, snapshot

    def get(self, *_args: Any) -> dict[str, Any] | None:
        return self._snapshot

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def test_of_two_writers_from_one_read_exactly_one_wins(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    clock = FakeClock()
    # Both find no Lease and create it.
    a = elector(connection, "pod-a", clock)
    b = elector(StaleRead(connection, None), "pod-b", clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert not b.is_leader
    # Both find it expired and take it over with a PUT of the same resourceVersion.
    clock.advance(60.0)
    snapshot = lease_of(connection)
    c = elector(StaleRead(connection, snapshot), "pod-c", clock)
    d = elector(StaleRead(connection, snapshot), "pod-d", clock)
    assert c.try_acquire_or_renew()
    assert not d.try_acquire_or_renew()
    assert (c.is_leader, d.is_leader) == (True, False)
    spec = lease_of(connection)["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("pod-c", 1)


def test_an_api_error_is_a_failed_attempt_not_an_exception(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = api
    clock = FakeClock()
    a = elector(connection, "pod-a", clock)
    assert a.try_acquire_or_renew()
    clock.advance(5.0)
    server.fail_next(1, status=500, method="PUT")
    assert not a.try_acquire_or_renew()
    assert a.is_leader  # nothing new was read: the elector still believes it holds the lease
    assert lease_of(connection)["spec"]["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert a.try_acquire_or_renew()
    assert lease_of(connection)["spec"]["renewTime"] == "2026-01-01T00:00:05.000000Z"


def test_create_and_replace_raise_conflict_on_409_only(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = api
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "x", "namespace": NAMESPACE},
        "spec": {"holderIdentity": "a"},
    }
    created = connection.create(lease)
    assert created["metadata"]["resourceVersion"]
    with pytest.raises(kube.Conflict, match="cluster c1: create Lease default/x: HTTP 409"):
        connection.create(lease)
    replaced = connection.replace({**created, "spec": {"holderIdentity": "b"}})
    assert replaced["spec"]["holderIdentity"] == "b"
    with pytest.raises(kube.Conflict, match="replace Lease default/x: HTTP 409"):
        connection.replace({**created, "spec": {"holderIdentity": "c"}})  # stale version
    server.fail_next(1, status=500)
    with pytest.raises(ClusterError, match="HTTP 500") as caught:
        connection.replace({**replaced, "spec": {"holderIdentity": "c"}})
    assert not isinstance(caught.value, kube.Conflict)


def test_times_are_micro_times_in_utc() -> None:
    assert leader.format_time(START + 1.5) == "2026-01-01T00:00:01.500000Z"
    assert leader.parse_time("2026-01-01T00:00:01.500000Z") == START + 1.5
    assert leader.parse_time("2026-01-01T00:00:01Z") == START + 1
    assert leader.parse_time("2026-01-01t01:00:01.5+01:00") == START + 1.5
    assert leader.parse_time("2026-01-01T00:00:01.123456789Z") == START + 1.123456
    assert leader.parse_time("2026-01-01T00:00:01") == START + 1  # no offset: UTC, not local
    assert leader.parse_time("yesterday") is None
    assert leader.parse_time(None) is None


def test_lease_config_checks_its_timings() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        leader.LeaseConfig(namespace=NAMESPACE, identity="a", renew_deadline=20.0)
    with pytest.raises(ValueError, match="empty"):
        leader.LeaseConfig(namespace=NAMESPACE, identity="")


def test_identity_and_namespace_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("POD_NAME", "dro-7d9f-abcde")
    assert leader.default_identity() == "dro-7d9f-abcde"
    monkeypatch.delenv("POD_NAME")
    assert leader.default_identity().endswith(f"_{__import__('os').getpid()}")
    monkeypatch.setenv("POD_NAMESPACE", "gitops")
    assert leader.pod_namespace() == "gitops"
    monkeypatch.delenv("POD_NAMESPACE")
    mounted = tmp_path / "namespace"
    monkeypatch.setattr(leader, "NAMESPACE_FILE", mounted)
    assert leader.pod_namespace() is None
    mounted.write_text("dro-system\n")
    assert leader.pod_namespace() == "dro-system"


FAST = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}


class Watched:
    """A LeaderLoop with events its callbacks set."""

    def __init__(self, connection: kube.Connection, identity: str) -> None:
        self.started, self.stopped = threading.Event(), threading.Event()
        self.loop = leader.LeaderLoop(
            elector(connection, identity, **FAST),
            on_started=self.started.set,
            on_stopped=self.stopped.set,
        )


def test_the_loop_leads_and_steps_down_when_the_api_is_gone(tmp_path: Path) -> None:
    with KubeAPI() as server:
        path = server.kubeconfig(tmp_path / "kubeconfig", context="c1")
        connection = kube.connect("c1", context="c1", kubeconfig=path, timeout=0.3)
        watched = Watched(connection, "pod-a")
        watched.loop.start()
        try:
            assert watched.started.wait(5.0)
            assert watched.loop.is_leader
            refused = time.monotonic()
            server.refuse()
            assert watched.stopped.wait(5.0)
            took = time.monotonic() - refused
            assert 0.3 < took < 2.0, took  # not at the first failure; about renew_deadline
            assert not watched.loop.is_leader
        finally:
            stopping = time.monotonic()
            watched.loop.stop()
            assert time.monotonic() - stopping < 1.5
            connection.close()


def test_a_follower_takes_over_when_the_leader_stops_or_dies(tmp_path: Path) -> None:
    with KubeAPI() as server:
        path = server.kubeconfig(tmp_path / "kubeconfig", context="c1")
        connections = [
            kube.connect("c1", context="c1", kubeconfig=path, timeout=1.0) for _ in range(3)
        ]
        a, b, c = (Watched(conn, f"pod-{n}") for conn, n in zip(connections, "abc", strict=True))
        try:
            a.loop.start()
            assert a.started.wait(5.0)
            b.loop.start()
            c.loop.start()
            assert not b.started.wait(0.3)  # three retry periods: b follows
            assert not c.started.is_set()
            stopping = time.monotonic()
            a.loop.stop()  # a clean stop releases the lease: a follower leads well within 1 s
            assert a.stopped.is_set()
            first = b if b.started.wait(0.8) else c
            assert first.started.is_set(), "no follower took over after the release"
            assert time.monotonic() - stopping < 0.9
            other = c if first is b else b
            assert not other.started.is_set()
            # The leader dies without releasing: its renewals stop, its lease expires.
            first.loop.elector.release = lambda: None  # type: ignore[method-assign]
            first.loop.stop()
            assert other.started.wait(3.0)
            spec = lease_of(connections[0])["spec"]
            assert spec["holderIdentity"] == other.loop.elector.config.identity
            assert spec["leaseTransitions"] == 2
        finally:
            for watched in (a, b, c):
                watched.loop.stop()
            for connection in connections:
                connection.close()


def test_a_followers_pass_request_reaches_the_leader_through_the_lease(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    _clock, a, b = rivals(connection)
    assert a.try_acquire_or_renew()
    assert a.requested is None
    assert b.request_pass()
    stamp = lease_of(connection)["metadata"]["annotations"][leader.REQUEST_ANNOTATION]
    assert a.try_acquire_or_renew(), "the request does not disturb the holder"
    assert a.requested == stamp
    assert lease_of(connection)["spec"]["holderIdentity"] == "pod-a"


def test_the_loop_calls_on_requested_when_a_follower_asks(tmp_path: Path) -> None:
    server = KubeAPI()
    server.start()
    try:
        path = Path(server.kubeconfig(tmp_path / "kubeconfig", context="c1"))
        lead = kube.connect("c1", context="c1", kubeconfig=path, timeout=2.0)
        follow = kube.connect("c1", context="c1", kubeconfig=path, timeout=2.0)
        started, requested = threading.Event(), threading.Event()
        timings = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
        loop = leader.LeaderLoop(
            elector(lead, "pod-a", **timings),
            on_started=started.set,
            on_stopped=lambda: None,
            on_requested=requested.set,
        )
        loop.start()
        assert started.wait(5)
        assert not requested.is_set(), "becoming leader is not a request"
        assert elector(follow, "pod-b", **timings).request_pass()
        assert requested.wait(5)
        loop.stop()
        lead.close()
        follow.close()
    finally:
        server.stop()
