"""A member's part in a sharded `dro run` (`service.sharding`, `service.observations`), over
real HTTP to the API emulator as the hub, on a fake clock: which clusters it owns, when a
cluster that came to it may first be written, the fence of each cluster, and the observations
published by one member and gathered by the leader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler import live, settings
from reconciler.domain import Observation, ResourceKey
from reconciler.domain.drift import ABSENT, Change, Drifted
from reconciler.domain.fence import Deposed
from reconciler.errors import UsageError
from reconciler.kube import client as kube
from reconciler.service import leader, observations, sharding, shards
from tests.kubeapi import KubeAPI
from tests.test_leader import NAMESPACE, FakeClock

CLUSTERS = [f"c{i}" for i in range(12)]
WEB = ResourceKey("apps", "Deployment", "shop", "web")


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[kube.Connection]:
    server = KubeAPI()
    server.start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="hub")
        connection = kube.connect("hub", context="hub", kubeconfig=Path(config), timeout=2.0)
        yield connection
        connection.close()
    finally:
        server.stop()


class Elected:
    """A leader loop stand-in: leads, and its fence lets every write through."""

    is_leader = True

    def check(self, write: str) -> None:
        return None


class Renewed:
    """A member loop stand-in whose fence passes while `fresh`."""

    def __init__(self) -> None:
        self.fresh = True

    def check(self, write: str) -> None:
        if not self.fresh:
            raise Deposed(f"stale; {write} not sent")


def member(hub: kube.Connection, identity: str, clock: FakeClock) -> sharding.Sharding:
    config = leader.LeaseConfig(namespace=NAMESPACE, identity=identity, lease_duration=15)
    made = sharding.Sharding(
        connection=hub,
        config=config,
        elected=Elected(),  # type: ignore[arg-type]
        fresh=60,
        clock=clock,
    )
    made.member._clock = clock
    made.member_loop = Renewed()  # type: ignore[assignment]
    return made


def test_a_starting_member_waits_one_lease_duration_before_writing(
    hub: kube.Connection,
) -> None:
    clock = FakeClock()
    a = member(hub, "dro-a", clock)
    a.member.try_acquire_or_renew()
    assert a.own(CLUSTERS) == frozenset(), "the old owners may still write"
    with pytest.raises(Deposed, match="its old owner may still write"):
        a.check("c0", "PATCH /x")
    clock.advance(15)
    assert a.own(CLUSTERS) == frozenset(CLUSTERS)
    a.check("c0", "PATCH /x")


def renew(clock: FakeClock, seconds: float, *members: sharding.Sharding) -> None:
    """Advance the clock, then renew each member's Lease in turn, twice, so that all see all."""
    clock.advance(seconds)
    for one in (*members, *members):
        one.member.try_acquire_or_renew()


def test_clusters_of_a_dead_member_are_written_at_once_and_a_joiners_after_a_wait(
    hub: kube.Connection,
) -> None:
    clock = FakeClock()
    a, b = member(hub, "dro-a", clock), member(hub, "dro-b", clock)
    renew(clock, 0, a, b)
    assert a.own(CLUSTERS) == b.own(CLUSTERS) == frozenset(), "the start-up wait"
    renew(clock, 10, a, b)
    renew(clock, 6, a, b)
    split = shards.assign(CLUSTERS, ["dro-a", "dro-b"])
    assert a.own(CLUSTERS) == shards.owned_by(split, "dro-a")
    assert b.own(CLUSTERS) == shards.owned_by(split, "dro-b")
    with pytest.raises(Deposed, match="owned by dro-b"):
        a.check(min(shards.owned_by(split, "dro-b")), "PATCH /x")

    renew(clock, 16, a)  # b stopped renewing: its Lease expired
    assert a.member.view.members == ("dro-a",)
    assert a.own(CLUSTERS) == frozenset(CLUSTERS), "b's fence closed before its Lease expired"

    c = member(hub, "dro-c", clock)
    renew(clock, 1, a, c)
    after = shards.assign(CLUSTERS, ["dro-a", "dro-c"])
    assert a.own(CLUSTERS) == shards.owned_by(after, "dro-a"), "a gives clusters up at once"
    assert c.own(CLUSTERS) == frozenset(), "c waits until a has surely seen it"
    renew(clock, 10, a, c)
    assert c.own(CLUSTERS) == frozenset()
    renew(clock, 6, a, c)
    assert c.own(CLUSTERS) == shards.owned_by(after, "dro-c")


def test_a_member_whose_lease_is_stale_writes_nothing(hub: kube.Connection) -> None:
    clock = FakeClock()
    a = member(hub, "dro-a", clock)
    renew(clock, 0, a)
    a.own(CLUSTERS)
    renew(clock, 10, a)
    renew(clock, 6, a)
    a.check("c1", "PATCH /x")
    a.member_loop.fresh = False  # type: ignore[attr-defined]
    with pytest.raises(Deposed, match="stale"):
        a.check("c1", "PATCH /x")


def observation(cluster: str, cpu: float) -> Observation:
    return Observation(
        cluster=cluster,
        capacity={"cpu": 16.0},
        used={"cpu": cpu},
        observed_at="2026-01-01T00:00:00Z",
        pending={WEB: (2, "2026-01-01T00:00:00Z")},
        health={WEB: ("Healthy", "")},
        synced={WEB: "yes"},
        revisions={WEB: "abc"},
    )


def test_an_observation_survives_its_document_whole() -> None:
    document = observations.Published(
        member="dro-a",
        observed_at=1_767_225_600.5,
        members=("dro-a", "dro-b"),
        owned=frozenset({"c0", "c1"}),
        observations={"c0": observation("c0", 3.0), "c1": observation("c1", 4.5)},
        unreachable={"c1": "connection refused"},
    )
    text = observations.encode(document)
    assert observations.decode(text) == document
    assert observations.encode(observations.decode(text)) == text


DRIFTED = (
    Drifted(
        key=WEB,
        rule="Report",
        changes=(Change("/spec/replicas", live=9, rendered=3), Change("/metadata/labels/x", 1)),
    ),
    Drifted(key=ResourceKey("", "ConfigMap", "shop", "web"), rule="Correct", deleted=True),
)


def test_drift_survives_its_document_whole_and_only_an_owned_clusters_counts() -> None:
    document = observations.Published(
        member="dro-a",
        observed_at=5.0,
        owned=frozenset({"c0"}),
        drift={"c0": DRIFTED, "c1": DRIFTED[:1]},
    )
    back = observations.decode(observations.encode(document))
    assert back == document
    assert back.drift["c0"][0].changes[1].rendered is ABSENT
    older = observations.Published(
        member="dro-b", observed_at=1.0, owned=frozenset({"c0", "c2"}), drift={"c0": (), "c2": ()}
    )
    assert observations.drift_of([older, back]) == {"c0": DRIFTED, "c2": ()}


def test_the_leader_gathers_fresh_documents_of_live_members_and_owned_clusters_only(
    hub: kube.Connection,
) -> None:
    now = 1_767_225_600.0

    def put(member: str, at: float, owned: set[str]) -> None:
        found = {c: observation(c, at - now) for c in ("c0", "c1", "c2")}
        document = observations.Published(
            member=member, observed_at=at, owned=frozenset(owned), observations=found
        )
        observations.publish(hub, NAMESPACE, "dro", document)

    put("dro-a", now - 1, {"c0"})
    put("dro-b", now - 5, {"c1"})
    put("dro-old", now - 100, {"c2"})
    put("dro-gone", now, {"c2"})
    put("dro-b", now - 2, {"c1", "c2"})  # replaced: the newer document
    found = observations.gather(
        hub, NAMESPACE, "dro", live={"dro-a", "dro-b", "dro-old"}, now=now, fresh=60
    )
    assert [d.member for d in found] == ["dro-b", "dro-a"], "oldest first, fresh and live"
    merged, unreachable = observations.merged(found)
    assert sorted(merged) == ["c0", "c1", "c2"]
    assert merged["c0"].used == {"cpu": -1.0}, "from dro-a, its owner"
    assert merged["c2"].used == {"cpu": -2.0}, "from dro-b, which owned it"
    assert unreachable == {}


def test_a_big_document_is_stored_gzipped(hub: kube.Connection) -> None:
    many = {f"c{i}": observation(f"c{i}", float(i)) for i in range(3000)}
    document = observations.Published(
        member="dro-a", observed_at=1.0, owned=frozenset(many), observations=many
    )
    assert len(observations.encode(document)) > observations.INLINE_LIMIT
    observations.publish(hub, NAMESPACE, "dro", document)
    stored = hub.get("v1", "ConfigMap", "dro-observations-dro-a", NAMESPACE)
    assert stored is not None
    assert observations.GZIP_KEY in stored["binaryData"]
    (back,) = observations.gather(hub, NAMESPACE, "dro", live={"dro-a"}, now=2.0, fresh=60)
    assert back == document


def test_the_access_of_a_member_reaches_its_own_clusters_only() -> None:
    access = live.Access(kubeconfig=None, only=frozenset({"c1"}))
    assert access.only == {"c1"}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"shards": "maybe"}, "--shards: 'maybe' is not auto or off"),
        ({}, "DRO_SHARDS: 'on' is not auto or off"),
    ],
)
def test_a_bad_shards_mode_is_one_line_naming_where_it_came_from(
    given: dict[str, str], said: str
) -> None:
    table = settings.pick("shards")
    with pytest.raises(UsageError) as caught:
        settings.resolve(table, given, environ={"DRO_SHARDS": "on"})
    assert str(caught.value) == said
    assert settings.resolve(table, {}, environ={})["shards"] == "off"
    assert settings.resolve(table, {}, environ={"DRO_SHARDS": "Auto"}) == {"shards": "auto"}


def test_a_cluster_added_to_the_source_is_divided_too(hub: kube.Connection) -> None:
    clock = FakeClock()
    a = member(hub, "dro-a", clock)
    renew(clock, 0, a)
    a.own(CLUSTERS)
    renew(clock, 16, a)
    assert a.own(CLUSTERS) == frozenset(CLUSTERS)
    assert a.own([*CLUSTERS, "new"]) == frozenset(CLUSTERS), "the new one waits its turn"
    renew(clock, 16, a)
    assert a.own([*CLUSTERS, "new"]) == frozenset([*CLUSTERS, "new"])
    a.check("new", "PATCH /x")


def test_a_member_asks_for_a_pass_once_per_state_of_the_moves(hub: kube.Connection) -> None:
    """A move whose next step waits on something else (a data-sync hook) must not make the
    member ask again at each of its own passes: once per state of the moves in flight."""
    reasons: list[str] = []
    config = leader.LeaseConfig(namespace=NAMESPACE, identity="dro-a", lease_duration=15)
    made = sharding.Sharding(
        connection=hub,
        config=config,
        elected=Elected(),  # type: ignore[arg-type]
        fresh=60,
        trigger=reasons.append,
    )
    provisioning, syncing = ((WEB, ("c1", "Provisioning")),), ((WEB, ("c1", "Syncing")),)
    for moves in (provisioning, provisioning, syncing, syncing, syncing):
        made.moves_ready(moves)
    assert reasons == ["the copies of a move are ready for its next step"] * 2
