"""Soft water-level limits: overflow up to the ceiling, partial placement and pending replicas."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.branch import summary
from reconciler.domain import (
    Decision,
    MoveBudget,
    MoveCode,
    Placement,
    Rebalance,
    SchedulerConfig,
    Spec,
    SpreadConstraint,
)
from reconciler.schedule import overflow
from tests.builders.schedule import DYNAMIC, cluster, counts, deployment, labelled, policy, spec_of

LIMIT = 0.85


def fleet_spec(
    used: list[float],
    replicas: list[int],
    cpus: list[int],
    *,
    ceiling: float = 1.0,
    mode: str = "Always",
    extensions: bool = True,
) -> Spec:
    """Clusters of 100 cpu at `used`, one Deployment per entry of `replicas` (each asking
    `cpus` cpu per replica), all placed by one DynamicWeight policy with the given ceiling."""
    placement = Placement(
        replicas=DYNAMIC,
        water_level_ceiling=MappingProxyType({"cpu": ceiling}),
        overflow=mode,  # type: ignore[arg-type]
    )
    workloads = [
        labelled(deployment(f"w{i}", n, str(c)), "0")
        for i, (n, c) in enumerate(zip(replicas, cpus, strict=False))
    ]
    clusters = [cluster(f"c{i}", used=u) for i, u in enumerate(used)]
    spec = spec_of(clusters, workloads, placement)
    return replace(spec, placement_policies=(policy(0, placement, extensions),))


def cpu_placed(spec: Spec, decisions: tuple[Decision, ...]) -> dict[str, float]:
    """Cluster → the cpu the decisions' replicas request there."""
    per = {
        w.key: float(
            w.manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        )
        for w in spec.workloads
    }
    placed: dict[str, float] = {}
    for decision in decisions:
        for p in decision.clusters:
            placed[p.cluster] = placed.get(p.cluster, 0.0) + (p.replicas or 0) * per[decision.key]
    return placed


fleets = st.lists(st.integers(0, 100), min_size=1, max_size=6)
loads = st.lists(st.integers(1, 80), min_size=1, max_size=4)
sizes = st.lists(st.integers(1, 4), min_size=4, max_size=4)
ceilings = st.sampled_from([0.85, 0.9, 0.95, 1.0])


@settings(max_examples=60, deadline=None)
@given(used=fleets, replicas=loads, cpus=sizes, ceiling=ceilings)
def test_overflow_never_exceeds_the_ceiling(
    used: list[int], replicas: list[int], cpus: list[int], ceiling: float
) -> None:
    spec = fleet_spec([float(u) for u in used], replicas, cpus, ceiling=ceiling)
    decisions = schedule.place(spec)
    placed = cpu_placed(spec, decisions)
    for i, u in enumerate(used):
        if placed.get(f"c{i}"):
            assert u + placed[f"c{i}"] <= ceiling * 100 + 1e-6, "a cluster given replicas"
    for decision in decisions:
        assert all(p.replicas for p in decision.over_limit)
        held = counts(decision)
        assert all((held.get(p.cluster) or 0) >= (p.replicas or 0) for p in decision.over_limit)


@settings(max_examples=60, deadline=None)
@given(used=fleets, replicas=loads, cpus=sizes, ceiling=ceilings)
def test_nothing_pends_while_a_candidate_has_room_under_its_ceiling(
    used: list[int], replicas: list[int], cpus: list[int], ceiling: float
) -> None:
    spec = fleet_spec([float(u) for u in used], replicas, cpus, ceiling=ceiling)
    # no re-balancing: a move off a hot cluster could free room after a workload's turn
    still = SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=0)))
    decisions = schedule.place(replace(spec, config=still))
    placed = cpu_placed(spec, decisions)
    per = dict(zip((w.key for w in spec.workloads), cpus, strict=False))
    for decision in decisions:
        total = sum(n or 0 for n in counts(decision).values())
        assert total + decision.pending == decision_replicas(spec, decision), "partial, exact"
        assert total <= decision_replicas(spec, decision), "never more than desired"
        if decision.pending:
            assert decision.unschedulable
            for i, u in enumerate(used):  # usage only grows after its turn
                room = ceiling * 100 - (u + placed.get(f"c{i}", 0.0))
                assert room < per[decision.key] - 1e-9, f"c{i} had room"


def decision_replicas(spec: Spec, decision: Decision) -> int:
    return next(w.replicas or 0 for w in spec.workloads if w.key == decision.key)


@settings(max_examples=40, deadline=None)
@given(used=fleets, replicas=loads, cpus=sizes)
def test_overflow_never_keeps_the_limit_hard(
    used: list[int], replicas: list[int], cpus: list[int]
) -> None:
    spec = fleet_spec([float(u) for u in used], replicas, cpus, mode="Never")
    decisions = schedule.place(spec)
    placed = cpu_placed(spec, decisions)
    assert all(d.over_limit == () for d in decisions)
    for i, u in enumerate(used):
        if placed.get(f"c{i}"):
            assert u + placed[f"c{i}"] <= LIMIT * 100 + 1e-6


@settings(max_examples=40, deadline=None)
@given(used=fleets, replicas=loads, cpus=sizes)
def test_karmada_kinds_stay_all_or_nothing(
    used: list[int], replicas: list[int], cpus: list[int]
) -> None:
    spec = fleet_spec([float(u) for u in used], replicas, cpus, extensions=False)
    for decision in schedule.place(spec):
        total = sum(n or 0 for n in counts(decision).values())
        assert decision.pending == 0
        assert decision.over_limit == ()
        assert total in (0, decision_replicas(spec, decision))
        assert (total == 0) == (decision.unschedulable is not None)


def observed(spec: Spec, background: list[float], decisions: tuple[Decision, ...]) -> Spec:
    """The spec as the next pass sees it: each cluster's usage is its background plus what
    the decisions placed there (as observation reports it)."""
    placed = cpu_placed(spec, decisions)
    clusters = tuple(
        replace(
            c,
            allocated=MappingProxyType(
                {**c.allocated, "cpu": background[i] + placed.get(c.name, 0.0)}
            ),
        )
        for i, c in enumerate(spec.clusters)
    )
    return replace(spec, clusters=clusters)


def documents(decisions: tuple[Decision, ...]) -> list[dict[str, object]]:
    return [summary.decision_document(d) for d in decisions]


@settings(max_examples=40, deadline=None)
@given(used=fleets, replicas=loads, cpus=sizes, ceiling=ceilings)
def test_passes_over_an_unchanged_input_converge(
    used: list[int], replicas: list[int], cpus: list[int], ceiling: float
) -> None:
    background = [float(u) for u in used]
    spec = fleet_spec(background, replicas, cpus, ceiling=ceiling)
    first = schedule.place(spec, now=0.0)
    passes = [first]
    for _ in range(3):
        previous = {
            d.key: summary.decision_from_document(summary.decision_document(d)) for d in passes[-1]
        }
        passes.append(schedule.place(observed(spec, background, passes[-1]), previous, now=0.0))
    assert documents(passes[-1]) == documents(passes[-2]), "a pass over its own result"


@settings(max_examples=40, deadline=None)
@given(used=fleets, replicas=loads, cpus=sizes, ceiling=ceilings)
def test_pending_replicas_are_placed_once_room_appears(
    used: list[int], replicas: list[int], cpus: list[int], ceiling: float
) -> None:
    background = [float(u) for u in used]
    spec = fleet_spec(background, replicas, cpus, ceiling=ceiling)
    first = schedule.place(spec, now=0.0)
    # A cluster with room for every pending replica joins (as observed after the first pass).
    roomy = cluster("new", cpu=float(sum(replicas) * 4 * 2), used=0)
    later_spec = observed(spec, background, first)
    later_spec = replace(later_spec, clusters=(*later_spec.clusters, roomy))
    previous = {d.key: d for d in first}
    later = schedule.place(later_spec, previous, now=3600.0)
    assert all(d.pending == 0 for d in later), "every pending replica found room"
    for before, after in zip(first, later, strict=True):
        assert sum(p.replicas or 0 for p in after.clusters) == decision_replicas(spec, after)
        if before.pending:
            assert after.unschedulable is None


def test_replicas_fill_every_limit_then_overflow_to_the_lowest_level() -> None:
    # Room under 0.85: a 5, b 15. 40 replicas: 20 within the limits, 20 overflow, a and b
    # both at 0.85 after the fill, so the overflow alternates and splits evenly.
    spec = fleet_spec([80.0, 70.0], [40], [1, 1, 1, 1])
    (decision,) = schedule.place(spec)
    assert counts(decision) == {"c0": 15, "c1": 25}
    assert [(p.cluster, p.replicas) for p in decision.over_limit] == [("c0", 10), ("c1", 10)]
    assert decision.pending == 0
    assert decision.unschedulable is None
    assert decision.diagnosis.trigger.text == "first placement; 20 over the water-level limit"


def test_what_fits_nowhere_is_pending_and_placed_once_room_appears() -> None:
    spec = fleet_spec([80.0, 70.0], [80], [1, 1, 1, 1])
    (first,) = schedule.place(spec)
    assert counts(first) == {"c0": 20, "c1": 30}, "both filled to the ceiling"
    assert first.pending == 30
    assert first.unschedulable == "Clusters available replicas 50 are not enough to schedule."
    document = summary.decision_document(first)
    assert document["status"]["pending"] == 30
    assert document["status"]["overLimit"] == [
        {"cluster": "c0", "replicas": 15},
        {"cluster": "c1", "replicas": 15},
    ]
    read = summary.decision_from_document(document)
    assert (read.pending, read.over_limit) == (first.pending, first.over_limit)
    # Unchanged: the next pass tries again and finds the same.
    same = observed(spec, [80.0, 70.0], (first,))
    (again,) = schedule.place(same, {read.key: read})
    assert (counts(again), again.pending) == (counts(first), 30)
    assert again.diagnosis.trigger.text.startswith("30 replicas pending")
    # A third cluster joins: the pending replicas go there, and re-balancing moves
    # over-limit replicas back under a limit first, within its budget (10 % of 80).
    bigger = replace(same, clusters=(*same.clusters, cluster("c2", used=0)))
    (later,) = schedule.place(bigger, {read.key: read})
    assert later.pending == 0
    assert later.unschedulable is None
    assert counts(later) == {"c0": 12, "c1": 30, "c2": 38}
    (move,) = later.moves
    assert (move.source, move.target, move.replicas) == ("c0", "c2", 8)
    assert move.reason.text == "over limit: 1.00 > 0.85 (cpu)"
    assert [(p.cluster, p.replicas) for p in later.over_limit] == [("c0", 7), ("c1", 15)]


def test_a_ceiling_below_the_limit_is_the_limit() -> None:
    spec = fleet_spec([80.0], [10], [1, 1, 1, 1], ceiling=0.5)
    (decision,) = schedule.place(spec)
    assert counts(decision) == {"c0": 5}
    assert decision.pending == 5


@pytest.mark.parametrize("one_by_one", [overflow.ONE_BY_ONE, 0])
def test_fill_matches_one_replica_at_a_time(
    one_by_one: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways `fill` works (one by one for small counts, else by bisection) against the
    rule it states, on random rooms and levels."""
    monkeypatch.setattr(overflow, "ONE_BY_ONE", one_by_one)
    rng = np.random.default_rng(7)
    for _ in range(200):
        size = int(rng.integers(1, 8))
        capacity = rng.integers(10, 200, size).astype(float)
        used = capacity * rng.uniform(0.3, 1.0, size)
        demand = float(rng.integers(1, 5))
        room = rng.integers(0, 30, size)
        replicas = int(rng.integers(0, int(room.sum()) + 5))
        usage = np.array([used, np.zeros(size)])  # cpu, and a resource not requested
        capacity = np.array([capacity, np.full(size, np.inf)])
        per = np.array([demand, 1.0])
        got = overflow.fill(replicas, room, usage, per, capacity, np.array([0]))
        expected = np.zeros(size, dtype=np.int64)
        for _ in range(min(replicas, int(room.sum()))):
            after = [
                (max(0.0, (used[r] + (expected[r] + 1) * demand) / capacity[0, r]), r)
                for r in range(size)
                if expected[r] < room[r]
            ]
            expected[min(after)[1]] += 1
        assert got.tolist() == expected.tolist()


def test_spread_constraints_still_hold_when_placing_in_part() -> None:
    # Three clusters with room for 5 under the limit and 20 under the ceiling each; at most
    # two clusters may be used: 40 fit, 10 are pending, and the third cluster stays empty.
    spec = fleet_spec([80.0, 80.0, 80.0], [50], [1, 1, 1, 1])
    at_most_two = (SpreadConstraint(by="cluster", min_groups=1, max_groups=2),)
    spread = replace(spec.placement_policies[0].placement, spread=at_most_two)
    spec = replace(spec, placement_policies=(policy(0, spread, True),))
    (decision,) = schedule.place(spec)
    assert len(decision.clusters) == 2
    assert sum(p.replicas or 0 for p in decision.clusters) == 40
    assert decision.pending == 10
    # Four clusters must be used, but only three exist: the constraint refuses it whole.
    four = (SpreadConstraint(by="cluster", min_groups=4),)
    spec = replace(spec, placement_policies=(policy(0, replace(spread, spread=four), True),))
    (refused,) = schedule.place(spec)
    assert refused.clusters == ()
    assert refused.unschedulable == (
        "the number of feasible clusters is less than spreadConstraint.MinGroups"
    )
    assert refused.pending == 50


def test_over_limit_replicas_move_back_under_a_limit_when_room_appears() -> None:
    spec = fleet_spec([80.0, 80.0], [30], [1, 1, 1, 1])
    (first,) = schedule.place(spec)
    assert [(p.cluster, p.replicas) for p in first.over_limit] == [("c0", 10), ("c1", 10)]
    # c1's own load falls by 40: it is back under its limit, with room for 30 more.
    calmer = observed(spec, [80.0, 40.0], (first,))
    calmer = replace(
        calmer, config=SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100)))
    )
    (later,) = schedule.place(calmer, {first.key: first}, now=3600.0)
    assert counts(later) == {"c0": 5, "c1": 25}, "c0 back at its limit"
    assert [(m.source, m.target, m.replicas, m.reason.code) for m in later.moves] == [
        ("c0", "c1", 10, MoveCode.OVER_LIMIT)
    ]
    assert later.over_limit == (), "c1 is under its limit even with them"
    assert later.pending == 0


def test_fill_hands_out_billions_at_once() -> None:
    room = np.array([2**30, 2**30, 0])
    usage = np.array([[0.0, 2.0**29, 0.0]])
    capacity = np.array([[2.0**31, 2.0**31, 1.0]])
    got = overflow.fill(2**30 + 6, room, usage, np.array([1.0]), capacity, np.array([0]))
    assert int(got.sum()) == 2**30 + 6
    # the first cluster starts 2**29 lower: it takes those first, then they alternate
    assert got.tolist() == [2**29 + 2**28 + 3, 2**28 + 3, 0]
