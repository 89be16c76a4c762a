"""Steering by scale changes: dro's DynamicWeight and Aggregated workloads scale down off the
hottest holders and up onto the coolest candidates, and no running replica moves."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from types import MappingProxyType

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.domain import (
    AffinityTerm,
    Cluster,
    ClusterAffinity,
    Decision,
    Placed,
    Placement,
    ReplicaScheduling,
    SchedulerConfig,
    Spec,
    Trigger,
    TriggerCode,
    Workload,
)
from reconciler.schedule import division, steering
from reconciler.schedule.fleet import Fleet
from tests.builders.schedule import (
    DYNAMIC,
    cluster,
    counts,
    deployment,
    labelled,
    policy,
    spec_of,
    subject,
)

AGGREGATED = ReplicaScheduling(type="Divided", division="Aggregated")
DIVIDED = Placement(replicas=DYNAMIC)
SCALED = Trigger(TriggerCode.SCALED, "2 to 6")
FIRST = Trigger(TriggerCode.FIRST)
NO_REBALANCE = SchedulerConfig()


def placed_on(
    levels: dict[str, float],
    replicas: int,
    *,
    previous: dict[str, int],
    placement: Placement = DIVIDED,
) -> tuple[Spec, Decision]:
    """A workload of 5 cpu per replica held as `previous`, on clusters whose declared cpu
    usage (out of 100, its replicas included) gives each the level in `levels`; its spec
    scaled to `replicas`, and its previous decision."""
    clusters = [cluster(name, used=100 * level) for name, level in sorted(levels.items())]
    spec = spec_of(clusters, [deployment("w", replicas, cpu="5")], placement)
    (first,) = schedule.place(replace(spec, workloads=(deployment("w", 1, cpu="5"),)))
    held = tuple(Placed(name, n) for name, n in sorted(previous.items()) if n)
    return spec, replace(first, clusters=held)


def test_a_scale_down_leaves_the_hottest_holder_first() -> None:
    spec, before = placed_on(
        {"a": 0.80, "b": 0.40, "c": 0.60}, 6, previous={"a": 3, "b": 3, "c": 3}
    )
    (after,) = schedule.place(spec, {before.key: before})
    # a gives one at a time while it is the hottest: at 0.80, 0.75 and 0.70 (c is at 0.60)
    assert counts(after) == {"b": 3, "c": 3}
    assert after.diagnosis.trigger.code is TriggerCode.SCALED
    assert after.diagnosis.trigger.text == "replicas changed from 9 to 6; left the hottest: a -3"
    assert after.moves == ()
    assert after.retiring == ()


def test_a_scale_down_alternates_between_holders_at_the_same_level() -> None:
    spec, before = placed_on(
        {"a": 0.70, "b": 0.70, "c": 0.20}, 6, previous={"a": 4, "b": 4, "c": 1}
    )
    (after,) = schedule.place(spec, {before.key: before})
    assert counts(after) in ({"a": 2, "b": 3, "c": 1}, {"a": 3, "b": 2, "c": 1})


def test_a_scale_up_goes_to_the_coolest() -> None:
    spec, before = placed_on({"a": 0.30, "b": 0.10, "c": 0.50}, 7, previous={"a": 2, "c": 2})
    (after,) = schedule.place(spec, {before.key: before})
    # b reaches 0.15, 0.20 and 0.25 before a's next replica would bring a to 0.35
    assert counts(after) == {"a": 2, "b": 3, "c": 2}
    assert after.diagnosis.trigger.text == "replicas changed from 4 to 7; went to the coolest: b +3"
    assert after.moves == ()
    assert after.retiring == ()


def test_a_scale_up_fills_each_cluster_only_to_its_limit() -> None:
    limited = Placement(replicas=DYNAMIC, water_level_limit=MappingProxyType({"cpu": 0.5}))
    spec, before = placed_on(
        {"a": 0.40, "b": 0.10}, 12, previous={"a": 1, "b": 1}, placement=limited
    )
    (after,) = schedule.place(spec, {before.key: before})
    # room under 0.5: a (0.50 - 0.40) / 0.05 = 2, b 8; the 10 extra replicas take all of it
    assert counts(after) == {"a": 3, "b": 9}


def test_an_aggregated_scale_up_stays_on_its_clusters_coolest_first() -> None:
    aggregated = Placement(replicas=AGGREGATED)
    levels = {"a": 0.60, "b": 0.20, "c": 0.0}
    previous = {"b": 2, "c": 2}
    spec, before = placed_on(levels, 10, previous=previous, placement=aggregated)
    (after,) = schedule.place(spec, {before.key: before})
    # Aggregated adds to as few clusters as it can, the holders first: c alone has room for
    # the 6 more (17 under 0.85), so neither a nor b gains
    assert counts(after) == {"b": 2, "c": 8}
    spec, _ = placed_on(levels, 30, previous=previous, placement=aggregated)
    (after,) = schedule.place(spec, {before.key: before})
    # 26 more: c to 0.75 (15 more), b to 0.75 (11 more); their 30 of room cover it
    assert counts(after) == {"b": 13, "c": 17}


def test_overflow_tiers_fill_first_and_empty_last() -> None:
    """With ordered affinity terms, a scale-up fills the first tier before the overflow one
    (even when the overflow is cooler), and a scale-down empties the overflow first."""
    term = AffinityTerm(
        name="primary",
        affinity=ClusterAffinity(names=("a", "b")),
        overflow=(("burst", ClusterAffinity(names=("c",))),),
    )
    tiered = Placement(affinity_terms=(term,), replicas=DYNAMIC)
    levels = {"a": 0.50, "b": 0.62, "c": 0.0}
    previous = {"a": 2, "b": 2, "c": 2}
    spec, before = placed_on(levels, 9, previous=previous, placement=tiered)
    (up,) = schedule.place(spec, {before.key: before})
    assert counts(up) == {"a": 5, "b": 2, "c": 2}, "a: 0.55, 0.60, 0.65 before b's 0.67"
    spec, _ = placed_on(levels, 3, previous=previous, placement=tiered)
    (down,) = schedule.place(spec, {before.key: before})
    assert counts(down) == {"a": 2, "b": 1}, "c's 2 first, then the hotter of a and b"


def test_steering_reads_the_usage_the_pass_sees() -> None:
    """The levels come from the subject's usage (the pass's ledger, where a forecast level
    enters with prediction on), not from the fleet's figures: of two clusters equal now, the
    one the ledger sees hotter gets nothing."""
    fleet = Fleet(clusters=(cluster("a", used=20), cluster("b", used=20)))
    one = subject(DIVIDED, fleet=fleet, replicas=6, holders=("a", "b"), allocatable=[50, 50])
    assert steering.steer(
        fleet, one, np.arange(2), np.zeros(2, dtype=np.int64), SCALED, fresh=False
    )
    cpu = fleet.resources.index("cpu")
    one.usage = one.usage.copy()
    one.usage[cpu, 0] += 30  # a forecast (or an earlier workload of the pass) warms a
    up = steering.steer(fleet, one, np.arange(2), np.zeros(2, dtype=np.int64), SCALED, fresh=False)
    assert up is not None
    assert up.counts.tolist() == [1, 5]
    assert up.note == "went to the coolest: b +4"
    one.replicas = 1
    down = steering.steer(
        fleet, one, np.arange(2), np.zeros(2, dtype=np.int64), SCALED, fresh=False
    )
    assert down is not None
    assert down.counts.tolist() == [0, 1]
    assert (
        steering.steer(fleet, one, np.arange(2), np.zeros(2, dtype=np.int64), FIRST, fresh=False)
        is None
    )


def test_karmada_kinds_keep_karmada_s_division() -> None:
    """A Karmada policy (no dro extensions) scales by Karmada's rules: the extra replicas by
    each candidate's room, merged; a scale-down by the previous counts as weights."""
    clusters = [cluster("a", used=80), cluster("b", used=10), cluster("c", used=40)]
    workload = labelled(deployment("w", 6, cpu="5"), "1")
    karmada = replace(
        spec_of(clusters, [workload], Placement(replicas=DYNAMIC)),
        placement_policies=(policy(1, Placement(replicas=DYNAMIC), extensions=False),),
    )
    previous = {"a": 2, "b": 2, "c": 2}
    before = replace(
        schedule.place(karmada)[0],
        clusters=tuple(
            type(schedule.place(karmada)[0].clusters[0])(n, c) for n, c in previous.items()
        ),
    )
    for replicas in (3, 10):
        scaled = replace(karmada, workloads=(labelled(deployment("w", replicas, cpu="5"), "1"),))
        (after,) = schedule.place(scaled, {before.key: before})
        # Karmada's estimator: (capacity - used) / request, to 100 %
        room = {"a": (100 - 80) // 5, "b": (100 - 10) // 5, "c": (100 - 40) // 5}
        expected = division.assign(
            "DynamicWeight",
            replicas,
            ["a", "b", "c"],
            available={k: room[k] + previous[k] for k in room},
            previous=previous,
            uid=workload.uid,
        )
        assert counts(after) == expected
        assert "coolest" not in after.diagnosis.trigger.text
        assert "hottest" not in after.diagnosis.trigger.text


def reference(
    used: list[float], capacity: list[float], per: float, limit: list[int], n: int, adding: bool
) -> list[int]:
    """One replica at a time, written out: adding, to the lowest level after the addition;
    removing, from the highest level before the removal; ties by position."""
    got = [0] * len(used)
    for _ in range(n):
        best = None
        for i in range(len(used)):
            if got[i] >= limit[i]:
                continue
            if adding:
                key = (used[i] + (got[i] + 1) * per) / capacity[i]
            else:
                key = -(used[i] - got[i] * per) / capacity[i]
            if best is None or key < best[0]:
                best = (key, i)
        assert best is not None
        got[best[1]] += 1
    return got


parties = st.lists(
    st.tuples(
        st.floats(0, 90, allow_nan=False).map(lambda x: round(x, 1)),
        st.sampled_from([50.0, 100.0, 160.0]),
        st.integers(0, 30),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(parties=parties, per=st.sampled_from([0.5, 1.0, 2.5]), adding=st.booleans(), data=st.data())
def test_the_closed_form_and_the_heap_hand_out_like_one_at_a_time(
    parties: list[tuple[float, float, int]], per: float, adding: bool, data: st.DataObject
) -> None:
    used = [u for u, _, _ in parties]
    capacity = [c for _, c, _ in parties]
    limit = [n for _, _, n in parties]
    n = data.draw(st.integers(0, sum(limit)))
    units = steering._Units(np.array([used]), np.array([capacity]), np.array([per]), adding=adding)
    rows = np.arange(len(parties), dtype=np.int64)
    expected = reference(used, capacity, per, limit, n, adding)
    limits = np.array(limit, dtype=np.int64)
    heap = units.hand_out(n, limits, rows)
    closed = units.hand_out(n, limits, rows, one_by_one=0)
    assert heap.tolist() == expected
    assert closed.tolist() == expected


def fleet_spec(levels: list[int], placement: Placement, replicas: int) -> Spec:
    clusters = [cluster(f"c{i}", used=level) for i, level in enumerate(levels)]
    return spec_of(clusters, [deployment("w", replicas, cpu="2")], placement)


@settings(max_examples=60, deadline=None)
@given(
    levels=st.lists(st.integers(0, 80), min_size=2, max_size=6),
    start=st.integers(1, 20),
    end=st.integers(0, 30),
    aggregated=st.booleans(),
)
def test_a_scale_only_adds_or_only_removes(
    levels: list[int], start: int, end: int, aggregated: bool
) -> None:
    placement = Placement(replicas=AGGREGATED if aggregated else DYNAMIC)
    (first,) = schedule.place(fleet_spec(levels, placement, start))
    if not first.clusters or end == start:
        return
    (after,) = schedule.place(fleet_spec(levels, placement, end), {first.key: first})
    if after.unschedulable:
        return  # a scale-up with too little room: Karmada's all-or-nothing answer
    before, now = counts(first), counts(after)
    assert sum(now.values()) == end  # type: ignore[arg-type]
    for name in set(before) | set(now):
        had, has = before.get(name) or 0, now.get(name) or 0
        assert has >= had if end > start else has <= had, (name, before, now)
    assert after.moves == ()
    assert after.retiring == ()


def test_a_scale_up_to_the_int32_maximum_takes_milliseconds() -> None:
    big = MappingProxyType({"cpu": 1e7, "memory": 1e15, "pods": 1e10})

    def roomy(name: str, used: float) -> Cluster:
        return replace(
            cluster(name), capacity=big, allocated=MappingProxyType({"cpu": used, "pods": 0})
        )

    clusters = [roomy("a", 0), roomy("b", 2e6), roomy("c", 4e6)]
    spec = spec_of(clusters, [deployment("w", 3, cpu="1m")], Placement(replicas=DYNAMIC))
    (first,) = schedule.place(spec)
    replicas = 2**31 - 1
    started = time.perf_counter()
    (after,) = schedule.place(
        replace(spec, workloads=(deployment("w", replicas, cpu="1m"),)), {first.key: first}
    )
    assert time.perf_counter() - started < 2.0
    got = counts(after)
    assert sum(got.values()) == replicas  # type: ignore[arg-type]
    gained = {n: (got.get(n) or 0) - (counts(first).get(n) or 0) for n in "abc"}
    level = {n: (u + 1e-3 * gained[n]) / 1e7 for n, u in (("a", 0), ("b", 2e6), ("c", 4e6))}
    # water-filled: the clusters that gained end level, within a replica's level (1e-10);
    # the others were above that level already
    filled = [level[n] for n in "abc" if gained[n]]
    assert max(filled) - min(filled) <= 1e-10
    assert all(level[n] >= max(filled) - 1e-10 for n in "abc" if not gained[n])
    assert {n for n in "abc" if gained[n]} == {"a", "b"}


# --- a diurnal day ------------------------------------------------------------------------------

HOURS = 24
ZONES = {"east": 0, "mid": 8, "west": 16}
"""Three regions whose day starts 8 hours apart."""


def diurnal(hour: int, offset: int, low: float, high: float) -> float:
    """A day's load: `low` at night, `high` at the region's afternoon peak."""
    phase = 2 * math.pi * ((hour - offset - 15) % 24) / 24
    return low + (high - low) * (1 + math.cos(phase)) / 2


def day_workloads(hour: int) -> list[Workload]:
    """Six web workloads of 2 cpu each, two per region, each following its region's day."""
    result = []
    offsets = list(ZONES.values())
    for i in range(6):
        wave = diurnal(hour, offsets[i % 3], 0, 1)
        replicas = 4 + round(16 * wave * (1 + 0.3 * (i // 3)))
        result.append(labelled(deployment(f"web{i}", replicas, cpu="2"), "1"))
    return result


def replay(extensions: bool) -> tuple[int, float, int, int]:
    """A 24-hour replay, one pass per hour: each region's background follows its own day,
    each workload's replicas the fleet's. Returns (cluster-hours above 0.90, the peak level,
    running replicas moved that no scale change required, replicas scaled)."""
    names = [f"{zone}-{k}" for zone in ZONES for k in (1, 2)]
    decisions: dict[object, Decision] = {}
    overloaded, peak, moved, scaled = 0, 0.0, 0, 0
    for hour in range(HOURS):
        background = {
            n: diurnal(hour, ZONES[n.split("-")[0]], 20, 74 if n.endswith("1") else 64)
            for n in names
        }
        used = dict(background)
        for decision in decisions.values():
            for placed in decision.clusters:
                used[placed.cluster] += 2 * (placed.replicas or 0)
        spec = spec_of([cluster(n, used=used[n]) for n in names], day_workloads(hour), Placement())
        spec = replace(
            spec,
            placement_policies=(policy(1, Placement(replicas=DYNAMIC), extensions=extensions),),
            config=NO_REBALANCE,
        )
        now = schedule.place(spec, dict(decisions), now=hour * 3600.0)  # type: ignore[misc]
        level = dict(background)
        for decision in now:
            assert not decision.unschedulable, decision.unschedulable
            old = decisions.get(decision.key)
            have = counts(decision)
            for name, n in have.items():
                level[name] += 2 * (n or 0)
            if old is not None:
                had = counts(old)
                shrink = sum(had.values()) - sum(have.values())  # type: ignore[arg-type]
                gone = sum(max(0, (had[c] or 0) - (have.get(c) or 0)) for c in had)
                moved += gone - max(0, shrink)
                scaled += abs(shrink)
            decisions[decision.key] = decision
        for name in names:
            peak = max(peak, level[name] / 100)
            overloaded += level[name] / 100 > 0.90
    return overloaded, round(peak, 4), moved, scaled


def test_a_diurnal_day_moves_no_running_replica_and_runs_no_hotter_than_karmada() -> None:
    steered = replay(extensions=True)
    karmada = replay(extensions=False)
    overloaded, peak, moved, scaled = steered
    assert scaled > 0
    assert scaled == karmada[3], "both replay the same scale changes"
    assert moved == 0
    assert karmada[2] == 0, "a scale change alone moves nothing, either way"
    assert karmada[0] > 0, "the replay must overload Karmada's division to show anything"
    assert overloaded < karmada[0], (steered, karmada)
    assert peak < karmada[1], (steered, karmada)
