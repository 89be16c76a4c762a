"""The phases of a stateful move (`schedule.moving.step`), one rule per case, on a fleet of
three clusters whose observations say what each pass saw."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

import pytest

from reconciler import live, schedule
from reconciler.branch import summary
from reconciler.cli import report
from reconciler.domain import Decision, Observation, Placed, ResourceKey, Spec
from reconciler.domain.data import DataAccess, DataSet
from reconciler.domain.decision import CUT_OVER, DONE, PROVISIONING, SYNCING
from reconciler.live import observe
from reconciler.schedule import moving
from reconciler.schedule.fleet import Fleet
from tests.builders.schedule import cluster
from tests.builders.stci import GIB, ORIGIN, STORES, divided, stateful_spec

DB = ResourceKey("apps", "StatefulSet", "shop", "db")
HOOK = ResourceKey("batch", "Job", "shop", "db-sync")
AT = "2026-11-23T10:00:00Z"
EARLIER = "2026-11-23T09:00:00Z"


def fleet(seen: Mapping[str, Observation] | None = None, *, failed: str | None = None) -> Fleet:
    observations = dict(seen or {})
    if failed is not None:
        observations[failed] = Observation(
            cluster=failed, capacity={}, used={}, stale=True, unreachable_since=EARLIER
        )
    return Fleet(
        clusters=tuple(replace(cluster(n), kubeconfig_context=n) for n in ("a", "b", "c")),
        observations=observations,
        now=1e10,
        failover_after=60.0,
    )


def seen(
    name: str,
    health: Mapping[ResourceKey, str] | None = None,
    synced: Mapping[ResourceKey, str] | None = None,
) -> Observation:
    """A fresh observation of one cluster with these workloads' health."""
    return Observation(
        cluster=name,
        capacity={"cpu": 100.0},
        used={},
        health={key: (status, "") for key, status in (health or {}).items()},
        synced=dict(synced or {}),
    )


def decision(home: str | None, *retiring: Placed) -> Decision:
    clusters = () if home is None else (Placed(home, 2),)
    return Decision(
        key=DB, api_version="apps/v1", policy=None, clusters=clusters, retiring=retiring
    )


def moving_from(source: str, phase: str) -> Placed:
    return Placed(source, 2, phase, EARLIER)


def step(
    the_fleet: Fleet,
    before: Decision | None,
    decided: Decision,
    *,
    hook: ResourceKey | None = None,
    volumes: bool = True,
) -> tuple[Placed, ...]:
    return moving.step(the_fleet, before, decided, at=AT, hook=hook, volumes=volumes).retiring


@pytest.mark.parametrize(
    ("case", "before", "decided", "expected"),
    [
        ("first placement", None, decision("b"), ()),
        ("stays home", decision("a"), decision("a"), ()),
        ("leaves home", decision("a"), decision("b"), (Placed("a", 2, PROVISIONING, AT),)),
        ("home's file gone", decision("x"), decision("b"), ()),
    ],
)
def test_a_move_begins_only_off_a_cluster_that_still_holds_its_copy(
    case: str, before: Decision | None, decided: Decision, expected: tuple[Placed, ...]
) -> None:
    assert step(fleet(), before, decided) == expected, case


def test_a_failover_goes_through_the_phases_too() -> None:
    (entry,) = step(fleet(failed="a"), decision("a"), decision("b"))
    assert entry == Placed("a", 2, PROVISIONING, AT)


@pytest.mark.parametrize(
    ("phase", "observed", "expected"),
    [
        (PROVISIONING, {"b": seen("b", {DB: "Progressing"})}, PROVISIONING),
        (PROVISIONING, {"b": seen("b", {DB: "Healthy"})}, SYNCING),
        (PROVISIONING, {}, SYNCING),  # b not observed: the next pass takes the step
        (SYNCING, {"b": seen("b", {DB: "Healthy"})}, SYNCING),
        (SYNCING, {"b": seen("b", {DB: "Healthy", HOOK: "Progressing"})}, SYNCING),
        (SYNCING, {"b": seen("b", {DB: "Healthy", HOOK: "Degraded"})}, SYNCING),
        (SYNCING, {"b": seen("b", {DB: "Healthy", HOOK: "Healthy"})}, CUT_OVER),
        (SYNCING, {"b": seen("b", {DB: "Healthy"}, {DB: "true"})}, CUT_OVER),
        (CUT_OVER, {"a": seen("a", {DB: "Progressing"})}, CUT_OVER),
        (CUT_OVER, {"a": seen("a", {DB: "Healthy"})}, DONE),
    ],
)
def test_each_phase_waits_for_its_condition(
    phase: str, observed: Mapping[str, Observation], expected: str
) -> None:
    before = decision("b", moving_from("a", phase))
    (entry,) = step(fleet(observed), before, decision("b"), hook=HOOK)
    assert entry.phase == expected
    assert entry.since == (EARLIER if expected == phase else AT)


def test_a_stale_observation_proves_no_sync() -> None:
    stale = Observation(cluster="b", capacity={}, used={}, stale=True, synced={DB: "true"})
    before = decision("b", moving_from("a", SYNCING))
    (entry,) = step(fleet({"b": stale}), before, decision("b"))
    assert entry.phase == SYNCING


def test_nothing_to_sync_without_volumes_or_hook() -> None:
    before = decision("b", moving_from("a", SYNCING))
    observed = {"b": seen("b", {DB: "Healthy"})}
    (entry,) = step(fleet(observed), before, decision("b"), volumes=False)
    assert entry.phase == CUT_OVER


def test_an_old_cluster_that_failed_during_the_cut_over_ends_the_move() -> None:
    before = decision("b", moving_from("a", CUT_OVER))
    (entry,) = step(fleet(failed="a"), before, decision("b"))
    assert entry.phase == DONE
    b_up = fleet({"b": seen("b", {DB: "Healthy"})}, failed="a")
    (waiting,) = step(b_up, decision("b", moving_from("a", SYNCING)), decision("b"))
    assert waiting.phase == SYNCING, "its data is not on b yet: only the annotation says so"


def test_done_is_dropped_on_the_next_pass() -> None:
    before = decision("b", moving_from("a", DONE))
    assert step(fleet(), before, decision("b")) == ()


def test_a_new_target_before_the_cut_over_restarts_from_the_old_copy() -> None:
    before = decision("b", moving_from("a", SYNCING))
    assert step(fleet(), before, decision("c")) == (Placed("a", 2, PROVISIONING, AT),)


def test_back_to_the_old_cluster_before_the_cut_over_cancels_the_move() -> None:
    before = decision("b", moving_from("a", PROVISIONING))
    assert step(fleet(), before, decision("a")) == ()


def test_a_new_target_after_the_cut_over_moves_off_the_new_copy() -> None:
    before = decision("b", moving_from("a", CUT_OVER))
    assert step(fleet(), before, decision("c")) == (Placed("b", 2, PROVISIONING, AT),)


def test_when_nothing_is_placed_the_old_copy_stays_as_it_was() -> None:
    entry = moving_from("a", SYNCING)
    assert step(fleet(), decision("b", entry), decision(None)) == (entry,)


def test_the_rendered_copies_follow_the_phase() -> None:
    def rendered(phase: str) -> dict[str, int | None]:
        return {p.cluster: p.replicas for p in decision("b", moving_from("a", phase)).rendered()}

    assert rendered(PROVISIONING) == {"a": 2, "b": 2}
    assert rendered(SYNCING) == {"a": 2, "b": 2}
    assert rendered(CUT_OVER) == {"a": 0, "b": 2}
    assert rendered(DONE) == {"b": 2}


def test_the_phase_round_trips_through_the_decision_file() -> None:
    written = decision("b", moving_from("a", SYNCING))
    document = summary.decision_document(written)
    assert document["status"]["retiring"] == [
        {"name": "a", "replicas": 2, "phase": SYNCING, "since": EARLIER}
    ]
    assert summary.decision_from_document(document).retiring == written.retiring


def test_the_hook_goes_to_the_target_only_while_syncing() -> None:
    hook = Decision(key=HOOK, api_version="batch/v1", policy=None, clusters=(Placed("a", None),))
    for phase, where in ((PROVISIONING, ()), (SYNCING, ("b",)), (CUT_OVER, ())):
        workload = decision("b", moving_from("a", phase))
        placed = moving.place_hooks({DB: HOOK}, [workload, hook])
        assert tuple(p.cluster for p in placed[1].clusters) == where, phase
        assert placed[0] == workload


def test_the_synced_annotation_is_observed_on_the_objects_dro_applied() -> None:
    def live(annotations: dict[str, str]) -> dict[str, object]:
        return {"metadata": {"name": "db", "annotations": annotations}}

    placement = {"multicluster.io/placement": "apps/StatefulSet/shop/db"}
    synced = {"multicluster.io/data-synced": "true"}
    found = observe.data_synced([live({**placement, **synced}), live(synced), live(placement)])
    assert found == {DB: "true"}


def test_explain_says_where_the_move_stands_and_what_it_waits_for() -> None:
    lines = report.explanation(decision("b", moving_from("a", SYNCING)))
    text = "\n".join(line for line in lines if isinstance(line, str))
    assert f"moving whole a → b: Syncing since {EARLIER}" in text
    assert "until the data is in sync on b" in text
    assert "retiring (old copies" not in text


def test_a_fresh_request_moves_a_stateful_workload_beside_its_data() -> None:
    writes = (DataAccess(dataset="db", access="write", rate=GIB),)
    spec: Spec = stateful_spec(STORES, 2, divided(data=writes))

    def on(primary: str) -> Spec:
        sets = {"db": DataSet(name="db", origin=ORIGIN, primary=primary)}
        return replace(spec, data_sets=MappingProxyType(sets))

    (first,) = schedule.place(on("a"))
    assert [p.cluster for p in first.clusters] == ["a"]
    # the data's primary moves to b: a running database stays where it is
    (steady,) = schedule.place(on("b"), {first.key: first}, now=3600.0)
    assert [p.cluster for p in steady.clusters] == ["a"]
    assert steady.retiring == ()
    # a Fresh request chooses again, and the move begins
    (policy,) = spec.placement_policies
    asked = replace(policy.placement, rebalance_requested_at="1970-01-01T00:30:00Z")
    fresh = replace(on("b"), placement_policies=(replace(policy, placement=asked),))
    (moved,) = schedule.place(fresh, {first.key: first}, now=3600.0)
    assert [p.cluster for p in moved.clusters] == ["b"]
    assert moved.retiring == (Placed("a", 2, PROVISIONING, "1970-01-01T01:00:00Z"),)


@pytest.mark.parametrize(
    ("phase", "awaited"),
    [(None, ["b"]), (PROVISIONING, ["b"]), (SYNCING, ["b"]), (CUT_OVER, ["a"]), (DONE, [])],
)
def test_a_follow_up_pass_waits_for_what_the_moves_next_step_needs(
    phase: str | None, awaited: list[str]
) -> None:
    # Found on real clusters: a CutOver pass used to wait for the new copy (Healthy long
    # since), so its follow-up pass raced the old StatefulSet's controller and could end the
    # move while the old pods still terminated. It waits for the old copy at zero now.
    decision = Decision(
        key=DB,
        api_version="apps/v1",
        policy=None,
        clusters=(Placed("b", 2),),
        retiring=(Placed("a", 2, phase, AT if phase else None),),
    )
    assert live.awaited(decision) == awaited
    assert live.awaited(replace(decision, retiring=())) == []
