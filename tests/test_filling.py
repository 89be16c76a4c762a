"""Filling: an added (or recovered) cluster is filled by re-balancing, under the budget."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import yaml
from conftest import SourceRepo

from reconciler import pipeline, schedule
from reconciler.branch import summary
from reconciler.domain import (
    Cluster,
    Decision,
    MoveBudget,
    Placement,
    ReplicaScheduling,
    Spec,
    durations,
)
from reconciler.settings import Settings
from tests.builders.schedule import cluster, counts, deployment, spec_of, with_rebalance

DYNAMIC = ReplicaScheduling(type="Divided", division="DynamicWeight")


def usage_after(decisions: list[Decision], base: float = 10) -> dict[str, float]:
    """Each cluster's declared cpu: the background plus every copy that runs (5 cpu each)."""
    used = dict.fromkeys("abc", base)
    for decision in decisions:
        for placed in (*decision.clusters, *decision.retiring):
            used[placed.cluster] += 5 * (placed.replicas or 0)
    return used


def with_usage(spec: Spec, used: dict[str, float]) -> Spec:
    return replace(spec, clusters=tuple(cluster(c.name, used=used[c.name]) for c in spec.clusters))


def loaded_fleet() -> tuple[list[Decision], Spec]:
    """Four 4-replica workloads on a and b (at 0.5 cpu); then the empty cluster c is added."""
    workloads = [deployment(f"w{i}", 4, cpu="5") for i in range(4)]
    before = spec_of([cluster("a"), cluster("b")], workloads, Placement(replicas=DYNAMIC))
    first = list(schedule.place(before))
    assert all(set(counts(d)) == {"a", "b"} for d in first)
    grown = replace(before, clusters=(cluster("a"), cluster("b"), cluster("c")))
    return first, with_usage(grown, usage_after(first))


def test_an_added_cluster_is_filled_only_while_filling() -> None:
    first, grown = loaded_fleet()
    spec = with_rebalance(grown, max_moves=MoveBudget(count=100))
    previous = {d.key: d for d in first}
    untouched = schedule.place(spec, previous, now=3600.0)
    assert all(d.moves == () for d in untouched), "below every limit, nothing moves by itself"
    filled = schedule.place(spec, previous, now=3600.0, filling={"c"})
    moved = [m for d in filled for m in d.moves]
    assert moved
    assert all(
        m.target == "c" and m.reason.text.startswith("filling c: water level") for m in moved
    )
    on_c = sum(counts(d).get("c", 0) or 0 for d in filled)
    assert on_c == sum(m.replicas for m in moved)
    assert schedule.still_filling(filled, {"c"}, 3600.0) == {"c"}
    assert schedule.still_filling(filled, {"c"}, 7200.0) == set(), "only this pass's moves count"


def test_filling_respects_the_budget_and_converges() -> None:
    first, spec = loaded_fleet()
    decisions = list(first)
    filling: set[str] = {"c"}
    per_pass = []
    for step in range(1, 15):
        now = step * 3600.0
        spec = with_rebalance(
            with_usage(spec, usage_after(decisions)), max_moves=MoveBudget(count=2)
        )
        decisions = list(
            schedule.place(spec, {d.key: d for d in decisions}, now=now, filling=filling)
        )
        stamp = durations.rfc3339(now)
        moved = sum(m.replicas for d in decisions for m in d.moves if m.at == stamp)
        assert moved <= 2, f"pass {step} moved {moved} replicas over a budget of 2"
        per_pass.append(moved)
        filling = schedule.still_filling(decisions, filling, now)
        if not filling:
            break
    assert not filling, f"filling never ended: {per_pass}"
    assert per_pass[-1] == 0
    levels = usage_after([replace(d, retiring=()) for d in decisions])
    assert max(levels.values()) - min(levels.values()) <= 10 + 5, f"still uneven: {levels}"


def test_reconcile_marks_an_added_cluster_filling_and_moves_into_it(
    source_repo: SourceRepo, tmp_path: Path
) -> None:
    settings = Settings(repo=str(source_repo.bare), state_dir=tmp_path / "state")
    pipeline.reconcile_once(settings)
    added = (source_repo.work / "clusters/us-east-1.yaml").read_text()
    added = added.replace("us-east-1", "us-east-3").replace(
        'allocated: {cpu: "300", memory: 1.2Ti, pods: "2100"}',
        'allocated: {cpu: "10", memory: 10Gi, pods: "20"}',
    )
    source_repo.write({"clusters/us-east-3.yaml": added})
    source_repo.commit("add us-east-3")
    result = pipeline.reconcile_once(settings)
    moved = [m for d in result.planned.decisions for m in d.moves]
    assert moved
    assert {m.target for m in moved} == {"us-east-3"}
    status = yaml.safe_load(result.planned.tree["status/clusters/us-east-3.yaml"])
    assert status["status"]["phase"] == "Filling"
    elsewhere = yaml.safe_load(result.planned.tree["status/clusters/us-east-1.yaml"])
    assert "phase" not in elsewhere["status"]
    decision = next(d for d in result.planned.decisions if d.moves)
    path = (
        f"decisions/{decision.key.namespace}/{decision.key.kind.lower()}-{decision.key.name}.yaml"
    )
    assert b"filling us-east-3" in result.planned.tree[path]


def test_a_recovered_cluster_is_filling_and_an_unreachable_one_says_so() -> None:
    _, spec = loaded_fleet()
    phases = {"a": "", "b": "", "c": summary.UNREACHABLE}
    assert pipeline.filling(spec, phases) == {"c"}
    assert pipeline.filling(spec, {"a": "", "b": "", "c": ""}) == set()
    assert pipeline.filling(spec, {}) == set(), "a first pass fills nothing"
    down = summary.observation(spec.clusters[2], {"unreachableSince": "2026-11-23T08:00:00Z"})
    assert down["status"]["phase"] == summary.UNREACHABLE
    assert "phase" not in summary.observation(spec.clusters[2], None)["status"]


def roomy(name: str, used: float) -> Cluster:
    """A cluster with room for billions of 1m-cpu replicas, `used` cpu in use."""
    return replace(
        cluster(name),
        capacity=MappingProxyType({"cpu": 1e7, "memory": 1e15, "pods": 1e10}),
        allocated=MappingProxyType({"cpu": used, "memory": 0, "pods": 0}),
    )


def test_filling_with_the_int32_maximum_of_replicas_takes_milliseconds() -> None:
    replicas = 2**31 - 1
    before = spec_of(
        [roomy("a", 0), roomy("b", 0)],
        [deployment("w", replicas, cpu="1m")],
        Placement(replicas=DYNAMIC),
    )
    (first,) = schedule.place(before)
    assert counts(first) == {"a": 2**30, "b": 2**30 - 1}
    grown = replace(before, clusters=(roomy("a", 3e6), roomy("b", 3e6), roomy("c", 0)))
    spec = with_rebalance(grown, max_moves=MoveBudget(percent=100))
    started = time.perf_counter()
    (filled,) = schedule.place(spec, {first.key: first}, now=3600.0, filling={"c"})
    assert time.perf_counter() - started < 2.0  # one replica at a time took minutes
    # A source gives replicas while its level stays above c's by the threshold (0.1); a
    # replica is 1e-10 of a level: a stops near 1e9 replicas (0.3 - 2t·1e-10 = 0.1), then b.
    moved = {m.source: m.replicas for m in filled.moves}
    assert set(moved) == {"a", "b"}
    assert sum(counts(filled).values()) == replicas
    arrived = 0.0
    for _, take in sorted(moved.items()):
        arrived += take * 1e-10
        assert abs((0.3 - take * 1e-10) - arrived - 0.1) < 1e-9
