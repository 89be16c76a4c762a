"""Member Leases (`service.membership`) over real HTTP to the API emulator: each replica holds
its own, the live members are learned from them on every renewal, a member that stops renewing
drops out once its Lease expires, and a clean shutdown deletes its Lease. Expiry runs on a
fake clock shared by the members."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.errors import ClusterError
from reconciler.kube import client as kube
from reconciler.service import leader, membership
from tests.kubeapi import KubeAPI
from tests.test_leader import NAMESPACE, FakeClock

LEASES = ("coordination.k8s.io", "v1", "leases", NAMESPACE)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[KubeAPI, kube.Connection]]:
    server = KubeAPI()
    server.start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="hub")
        connection = kube.connect("hub", context="hub", kubeconfig=Path(config), timeout=2.0)
        yield server, connection
        connection.close()
    finally:
        server.stop()


def member(
    connection: kube.Connection, identity: str, clock: FakeClock, seen: list[object] | None = None
) -> membership.Member:
    config = leader.LeaseConfig(namespace=NAMESPACE, identity=identity)
    return membership.Member(
        connection, config, clock=clock, on_changed=None if seen is None else seen.append
    )


def test_each_member_holds_its_own_lease_and_all_learn_the_same_members(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    server, connection = api
    clock = FakeClock()
    a, b, c = (member(connection, name, clock) for name in ("dro-b", "dro-a", "dro-c"))
    for one in (a, b, c):
        assert one.try_acquire_or_renew()
    for one in (a, b, c):
        one.try_acquire_or_renew()
        assert one.view.members == ("dro-a", "dro-b", "dro-c")
    lease = server.get(*LEASES, "dro-member-dro-a")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "dro-a"
    assert server.get(*LEASES, "dro") is None, "a member Lease is not the leader's"


def test_a_member_that_stops_renewing_drops_out_once_its_lease_expired(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    clock = FakeClock()
    changes: list[object] = []
    a, b = member(connection, "dro-a", clock, changes), member(connection, "dro-b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    a.try_acquire_or_renew()
    assert a.view.members == ("dro-a", "dro-b")
    clock.advance(14)  # within b's 15 s
    a.try_acquire_or_renew()
    assert a.view.members == ("dro-a", "dro-b")
    assert a.view.expiries["dro-b"] == pytest.approx(
        leader.parse_time(_spec(connection, "dro-member-dro-b")["renewTime"]) + 15
    )
    clock.advance(2)
    a.try_acquire_or_renew()
    assert a.view.members == ("dro-a",)
    seen = [view.members for view in changes if isinstance(view, membership.View)]
    assert seen == [("dro-a",), ("dro-a", "dro-b"), ("dro-a",)], "told once per change"


def test_a_clean_shutdown_deletes_the_members_lease(api: tuple[KubeAPI, kube.Connection]) -> None:
    server, connection = api
    clock = FakeClock()
    a, b = member(connection, "dro-a", clock), member(connection, "dro-b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    b.release()
    assert server.get(*LEASES, "dro-member-dro-b") is None
    a.try_acquire_or_renew()
    assert a.view.members == ("dro-a",), "gone at the next renewal, not after expiry"


def test_leases_long_expired_are_collected(api: tuple[KubeAPI, kube.Connection]) -> None:
    server, connection = api
    clock = FakeClock()
    a, b = member(connection, "dro-a", clock), member(connection, "dro-b", clock)
    b.try_acquire_or_renew()
    clock.advance(15 * (membership.GARBAGE_DURATIONS - 1))
    a.try_acquire_or_renew()
    assert server.get(*LEASES, "dro-member-dro-b") is not None, "expired, not yet garbage"
    clock.advance(15 * 2 + 1)
    a.try_acquire_or_renew()
    assert server.get(*LEASES, "dro-member-dro-b") is None
    assert a.view.members == ("dro-a",)


def test_other_leases_in_the_namespace_are_not_members(
    api: tuple[KubeAPI, kube.Connection],
) -> None:
    _server, connection = api
    clock = FakeClock()
    boss = leader.Elector(
        connection, leader.LeaseConfig(namespace=NAMESPACE, identity="dro-x"), clock=clock
    )
    assert boss.try_acquire_or_renew()
    other = leader.Elector(
        connection,
        leader.LeaseConfig(namespace=NAMESPACE, name="other-member-x", identity="x"),
        clock=clock,
    )
    assert other.try_acquire_or_renew()
    a = member(connection, "dro-a", clock)
    a.try_acquire_or_renew()
    assert a.view.members == ("dro-a",)


@pytest.mark.parametrize(
    ("identity", "name"),
    [
        ("dro-7f9c-abcde", "dro-member-dro-7f9c-abcde"),
        ("Host_1234", "dro-member-host-1234"),
        ("_", "dro-member-member"),
    ],
)
def test_member_lease_names_are_valid_object_names(identity: str, name: str) -> None:
    assert membership.member_lease_name("dro", identity) == name


def _spec(connection: kube.Connection, name: str) -> dict[str, object]:
    lease = connection.get("coordination.k8s.io/v1", "Lease", name, NAMESPACE)
    assert lease is not None
    return dict(lease["spec"])


def test_a_renewal_whose_listing_failed_counts_as_failed(
    api: tuple[KubeAPI, kube.Connection], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, connection = api
    clock = FakeClock()
    a, b = member(connection, "dro-a", clock), member(connection, "dro-b", clock)
    assert a.try_acquire_or_renew()
    assert b.try_acquire_or_renew()
    collection = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"
    server.faults.fail_next(1, status=500, method="GET", path_prefix=collection)
    assert a.learn() is None, "the listing failed"
    assert a.view.members == ("dro-a",), "the last view is kept"

    def unlisted(*_args: object, **_kwargs: object) -> list[object]:
        raise ClusterError("hub", "list Lease: 500 injected")

    monkeypatch.setattr(connection, "list", unlisted)
    assert not a.try_acquire_or_renew(), "renewed, but the members are unknown: no fence"
    renewed = _spec(connection, "dro-member-dro-a")["renewTime"]
    assert renewed == leader.format_time(clock.now)
