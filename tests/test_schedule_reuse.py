"""A pass that reuses the last pass's turns decides exactly what a pass without them decides.

Random fleets short of room (so that each turn's room depends on the turns ahead of it) go
through random change sequences: a workload scaled, its requests changed, one added or
removed, a cluster's usage changed, time passing, nothing changed. After each step the pass
with the memo (`schedule.reuse`) and a pass without it, on the same input and the same
previous decisions, must give equal decisions and water levels. Between passes, a decision
equal to its previous one keeps the previous object, as the output branch's read-back gives
one object per blob in `dro run`.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType, SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.domain import (
    Decision,
    Observation,
    Placement,
    ReplicaScheduling,
    ResourceKey,
    SchedulerConfig,
    Source,
    Spec,
    SpreadConstraint,
)
from reconciler.schedule import engine, reuse
from tests.builders.schedule import cluster, deployment, labelled, policy

DIVISIONS = ("Duplicated", "StaticWeight", "DynamicWeight", "Aggregated")
HOUR = 3600.0


def placement(division: str, limit: float | None, spread: bool) -> Placement:
    return Placement(
        replicas=ReplicaScheduling(
            type="Duplicated" if division == "Duplicated" else "Divided",
            division="StaticWeight" if division == "Duplicated" else division,
        ),
        water_level_limit=MappingProxyType({} if limit is None else {"cpu": limit}),
        spread=(SpreadConstraint(by="region", min_groups=1),) if spread else (),
    )


def workload(i: int, replicas: int, cpu: str, group: int) -> object:
    return labelled(deployment(f"w{i}", replicas, cpu), str(group))


CHANGE = st.tuples(
    st.sampled_from(["scale", "cpu", "add", "remove", "usage", "time", "nothing"]),
    st.integers(0, 50),
    st.sampled_from([0, 1, 2, 3, 6, 12]),
    st.sampled_from(["250m", "1", "3", "7"]),
)


def canonical(
    previous: dict[ResourceKey, Decision], decisions: tuple[Decision, ...]
) -> dict[ResourceKey, Decision]:
    """The next pass's previous decisions: an unchanged one stays the very object."""
    kept = {}
    for decision in decisions:
        old = previous.get(decision.key)
        kept[decision.key] = old if old is not None and old == decision else decision
    return kept


def changed(spec: Spec, change: tuple[str, int, int, str], step: int) -> Spec:
    kind, pick, count, cpu = change
    workloads = list(spec.workloads)
    if kind in ("scale", "cpu", "remove") and workloads:
        i = pick % len(workloads)
        old = workloads[i]
        group = old.manifest["metadata"]["labels"]["p"]
        requests = old.manifest["spec"]["template"]["spec"]["containers"][0]["resources"]
        if kind == "remove":
            del workloads[i]
        else:
            replicas = count if kind == "scale" else old.replicas or 0
            new_cpu = cpu if kind == "cpu" else requests["requests"]["cpu"]
            workloads[i] = workload(int(old.key.name[1:]), replicas, new_cpu, int(group))
    elif kind == "add":
        workloads.append(workload(100 + step, count, cpu, pick % len(spec.placement_policies)))
    elif kind == "usage":
        clusters = list(spec.clusters)
        j = pick % len(clusters)
        used = (clusters[j].allocated["cpu"] + 17 * (pick + 1)) % 90
        clusters[j] = replace(
            clusters[j], allocated=MappingProxyType({**clusters[j].allocated, "cpu": used})
        )
        return replace(spec, clusters=tuple(clusters))
    return replace(spec, workloads=tuple(workloads))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(
        st.tuples(st.sampled_from(["eu", "us"]), st.sampled_from([8, 16, 30]), st.integers(0, 60)),
        min_size=2,
        max_size=5,
    ),
    policies=st.lists(
        st.tuples(
            st.sampled_from(DIVISIONS),
            st.sampled_from([None, 0.6, 0.9]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    ),
    initial=st.lists(
        st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from(["500m", "1", "3"])),
        min_size=1,
        max_size=8,
    ),
    changes=st.lists(CHANGE, min_size=1, max_size=6),
    diagnose=st.booleans(),
)
def test_a_pass_with_the_memo_decides_as_one_without(
    shape: list[tuple[str, int, int]],
    policies: list[tuple[str, float | None, bool, bool]],
    initial: list[tuple[int, str]],
    changes: list[tuple[str, int, int, str]],
    diagnose: bool,
) -> None:
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=tuple(
            cluster(f"c{i}", region=region, cpu=cpu, used=used)
            for i, (region, cpu, used) in enumerate(shape)
        ),
        workloads=tuple(
            workload(i, replicas, cpu, i % len(policies))  # type: ignore[misc]
            for i, (replicas, cpu) in enumerate(initial)
        ),
        placement_policies=tuple(
            policy(j, placement(division, limit, spread), extensions)
            for j, (division, limit, spread, extensions) in enumerate(policies)
        ),
    )
    memo = reuse.Memo()
    previous: dict[ResourceKey, Decision] = {}
    now = 1_767_600_000.0
    for step, change in enumerate([("nothing", 0, 0, "1"), *changes, ("nothing", 0, 0, "1")]):
        spec = changed(spec, change, step)
        if change[0] == "time":
            now += HOUR
        with_memo, without = (
            schedule.place_and_project(
                spec,
                previous,
                diagnose=diagnose,
                standing_verdicts=False,
                now=now,
                memo=memo if use else None,
            )
            for use in (True, False)
        )
        assert with_memo.decisions == without.decisions
        assert with_memo.water_levels == without.water_levels
        previous = canonical(previous, with_memo.decisions)


@pytest.mark.parametrize("diagnose", [False, True])
def test_a_pass_on_the_same_input_reuses_every_standing_turn(diagnose: bool) -> None:
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=tuple(cluster(f"c{i}", region="eu", cpu=40, used=5) for i in range(4)),
        workloads=tuple(workload(i, 3, "1", i % 2) for i in range(6)),  # type: ignore[misc]
        placement_policies=(
            policy(0, placement("DynamicWeight", 0.9, False), True),
            policy(1, placement("Duplicated", 0.9, False), True),
        ),
    )
    memo = reuse.Memo()
    previous: dict[ResourceKey, Decision] = {}
    for _ in range(4):  # the first placement, then its steady form, then a pass on it
        placed = schedule.place_and_project(
            spec, previous, diagnose=diagnose, standing_verdicts=False, memo=memo
        )
        previous = canonical(previous, placed.decisions)
    assert memo.reused == len(spec.workloads)
    scaled = replace(spec, workloads=(workload(0, 5, "1", 0), *spec.workloads[1:]))  # type: ignore[has-type]
    placed = schedule.place_and_project(
        scaled, previous, diagnose=diagnose, standing_verdicts=False, memo=memo
    )
    assert memo.reused < len(spec.workloads)
    assert {p.cluster: p.replicas for p in placed.decisions[0].clusters} != {
        p.cluster: p.replicas for p in previous[spec.workloads[0].key].clusters
    }


def test_an_online_pass_on_clusters_as_they_were_reuses_its_turns() -> None:
    """Observations made at another time but alike otherwise reuse every turn; a cluster's
    usage observed otherwise decides every turn again."""
    clusters = tuple(cluster(f"c{i}", region="eu", cpu=40, used=5) for i in range(3))
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=clusters,
        workloads=tuple(workload(i, 2, "1", 0) for i in range(4)),  # type: ignore[misc]
        placement_policies=(policy(0, placement("DynamicWeight", 0.9, False), True),),
    )

    def seen(at: str, used: float = 5.0) -> dict[str, Observation]:
        return {
            c.name: Observation(
                cluster=c.name,
                capacity={"cpu": 40.0, "memory": 1e12, "pods": 1000.0},
                used={"cpu": used, "memory": 1e11, "pods": 10.0},
                observed_at=at,
            )
            for c in clusters
        }

    memo = reuse.Memo()
    previous: dict[ResourceKey, Decision] = {}
    for minute in range(4):
        at = f"2026-01-05T08:0{minute}:00Z"
        placed = schedule.place_and_project(
            spec, previous, seen(at), standing_verdicts=False, memo=memo
        )
        previous = canonical(previous, placed.decisions)
    assert memo.reused == len(spec.workloads)
    schedule.place_and_project(
        spec, previous, seen("2026-01-05T08:09:00Z", used=20.0), standing_verdicts=False, memo=memo
    )
    assert memo.reused == 0


@settings(max_examples=200, deadline=None)
@given(
    charges=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True),
            st.integers(-3, 5),
        ),
        max_size=12,
    ),
    demands=st.lists(
        st.lists(st.floats(0.001, 64.0, allow_nan=False), min_size=2, max_size=2),
        min_size=4,
        max_size=4,
    ),
)
def test_replayed_charges_leave_the_ledger_as_one_by_one_charges(
    charges: list[tuple[int, list[int], int]], demands: list[list[float]]
) -> None:
    """`reuse._replay` makes, in one step, what `engine.Pass.add` makes charge by charge:
    the same usage bit for bit (additions in the same order), the clock, and each cluster's
    clock of its last change."""
    matrix = np.array(demands)
    base = np.linspace(0.1, 3.3, 12).reshape(2, 6)

    def ledger() -> SimpleNamespace:
        return SimpleNamespace(usage=base.copy(), changed=np.zeros(6, dtype=np.int64), clock=7)

    one_by_one, at_once = ledger(), ledger()
    made = [
        (turn, np.array(rows, dtype=np.int64), np.full(len(rows), n, dtype=np.int64))
        for turn, rows, n in charges
    ]
    for turn, rows, replicas in made:
        engine.Pass.add(one_by_one, rows, matrix[turn], replicas)  # type: ignore[arg-type]
    reuse._replay(at_once, matrix, made)  # type: ignore[arg-type]
    assert one_by_one.usage.tobytes() == at_once.usage.tobytes()
    assert one_by_one.clock == at_once.clock
    assert one_by_one.changed.tolist() == at_once.changed.tolist()
