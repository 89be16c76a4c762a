"""The disruption budget for workloads that re-balancing does not move (StaticWeight,
Duplicated, Karmada's kinds): with two clusters draining and `maxUnavailableClusters: 1` they
leave one cluster per step, the next only once what the last step changed is no longer in
flight; without a budget both go at once, as before."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.cli import report
from reconciler.domain import (
    Decision,
    DisruptionBudget,
    Observation,
    Placement,
    ReplicaScheduling,
    Spec,
)
from reconciler.kube import health
from tests.builders.schedule import cluster, counts, deployment, spec_of

W = deployment("w", 8)
ONE = DisruptionBudget(count=1)
STATIC = ReplicaScheduling(type="Divided", division="StaticWeight")
DUPLICATED = ReplicaScheduling(type="Duplicated")


def spec_for(
    scheduling: ReplicaScheduling, *, drain: str = "", budget: DisruptionBudget | None = ONE
) -> Spec:
    clusters = [replace(cluster(n), drain=n in drain, kubeconfig_context=n) for n in "abcd"]
    return spec_of(clusters, [W], Placement(replicas=scheduling, disruption=budget))


def observed(
    spec: Spec,
    decision: Decision,
    healths: Mapping[str, str] | None = None,
    *,
    still_on: str = "",
) -> dict[str, Observation]:
    """Every cluster observed; `W` found where the decision places it (Healthy unless
    `healths` says otherwise) and where `still_on` names (its removal not done yet)."""
    placed = {p.cluster for p in decision.clusters}
    found = {}
    for c in spec.clusters:
        state = (healths or {}).get(c.name, health.HEALTHY)
        seen = {W.key: (state, "")} if c.name in placed or c.name in still_on else {}
        found[c.name] = Observation(
            cluster=c.name, capacity=c.capacity, used=c.allocated, health=seen
        )
    return found


def waiting(decision: Decision) -> list[tuple[str, int, str]]:
    assert decision.disruption is not None
    return [(w.cluster, w.replicas, w.reason) for w in decision.disruption.waiting]


@pytest.mark.parametrize("diagnose", [True, False], ids=["diagnosed", "large-fleet"])
def test_a_static_weight_workload_leaves_two_draining_clusters_one_step_at_a_time(
    diagnose: bool,
) -> None:
    (first,) = schedule.place(spec_for(STATIC), diagnose=diagnose)
    assert counts(first) == {"a": 2, "b": 2, "c": 2, "d": 2}
    spec = spec_for(STATIC, drain="ab")
    # step 1: a goes, its replicas re-divided onto c and d; b is kept as it was
    seen = observed(spec, first)
    (one,) = schedule.place(spec, {first.key: first}, seen, now=0.0, diagnose=diagnose)
    assert counts(one) == {"b": 2, "c": 3, "d": 3}
    assert one.disruption is not None
    assert (one.disruption.leaving, one.disruption.entering) == (("a",), ("c", "d"))
    reason = "disruption budget: 2 clusters in flight of 1 allowed (leaving a; entering c, d)"
    assert waiting(one) == [("b", 2, reason)]
    assert any("on b, for a later pass: " + reason in str(line) for line in report.explanation(one))
    # c is still rolling out the replica it gained: b stays
    seen = observed(spec, one, {"c": health.PROGRESSING})
    (two,) = schedule.place(spec, {one.key: one}, seen, now=60.0, diagnose=diagnose)
    assert counts(two) == {"b": 2, "c": 3, "d": 3}
    assert [c for c, _, _ in waiting(two)] == ["b"]
    # c and d Healthy, a empty: step 2, b goes
    seen = observed(spec, two)
    (three,) = schedule.place(spec, {two.key: two}, seen, now=120.0, diagnose=diagnose)
    assert counts(three) == {"c": 4, "d": 4}
    assert three.disruption is not None
    assert (three.disruption.leaving, three.disruption.waiting) == (("b",), ())
    for decision in (one, two, three):
        assert sum(p.replicas or 0 for p in decision.clusters) == 8, "the total stays"


def test_a_duplicated_workload_waits_until_the_removal_is_observed_done() -> None:
    (first,) = schedule.place(spec_for(DUPLICATED))
    spec = spec_for(DUPLICATED, drain="ab")
    (one,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert counts(one) == {"b": 8, "c": 8, "d": 8}, "nothing replaces a: b waits"
    assert waiting(one) == [
        ("b", 8, "disruption budget: 1 cluster in flight of 1 allowed (leaving a)")
    ]
    # a still runs the workload (its removal is not done): b stays
    (two,) = schedule.place(spec, {one.key: one}, observed(spec, one, still_on="a"), now=60.0)
    assert counts(two) == {"b": 8, "c": 8, "d": 8}
    assert two.disruption is not None
    assert two.disruption.leaving == ("a",)
    # a observed empty: b goes
    (three,) = schedule.place(spec, {two.key: two}, observed(spec, two), now=120.0)
    assert counts(three) == {"c": 8, "d": 8}
    assert three.disruption is not None
    assert three.disruption.leaving == ("b",)
    (four,) = schedule.place(spec, {three.key: three}, observed(spec, three), now=180.0)
    assert four.disruption is not None
    assert four.disruption.out_of_service == 0


@pytest.mark.parametrize("scheduling", [STATIC, DUPLICATED], ids=["static", "duplicated"])
def test_without_a_budget_every_draining_cluster_goes_at_once(
    scheduling: ReplicaScheduling,
) -> None:
    (first,) = schedule.place(spec_for(scheduling, budget=None))
    spec = spec_for(scheduling, drain="ab", budget=None)
    (after,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert set(counts(after)) == {"c", "d"}
    assert after.disruption is None


def test_a_budget_of_two_lets_both_draining_clusters_go_together() -> None:
    (first,) = schedule.place(spec_for(DUPLICATED))
    spec = spec_for(DUPLICATED, drain="ab", budget=DisruptionBudget(count=2))
    (after,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert set(counts(after)) == {"c", "d"}
    assert after.disruption is not None
    assert after.disruption.leaving == ("a", "b")


def test_an_unobserved_fleet_proves_nothing_and_moves_one_step_per_pass() -> None:
    (first,) = schedule.place(spec_for(DUPLICATED))
    spec = spec_for(DUPLICATED, drain="ab")
    (one,) = schedule.place(spec, {first.key: first}, None, now=0.0)
    assert set(counts(one)) == {"b", "c", "d"}
    (two,) = schedule.place(spec, {one.key: one}, None, now=60.0)
    assert set(counts(two)) == {"c", "d"}


def test_a_duplicated_workload_of_zero_replicas_keeps_its_draining_cluster_too() -> None:
    idle = replace(W, replicas=0)
    spec = replace(spec_for(DUPLICATED), workloads=(idle,))
    (first,) = schedule.place(spec)
    drained = replace(spec_for(DUPLICATED, drain="ab"), workloads=(idle,))
    (one,) = schedule.place(drained, {first.key: first}, observed(drained, first), now=0.0)
    assert counts(one) == {"b": 0, "c": 0, "d": 0}
    assert [c for c, _, _ in waiting(one)] == ["b"]


def test_a_drain_with_a_scale_down_keeps_the_total_and_the_step() -> None:
    (first,) = schedule.place(spec_for(STATIC))
    smaller = replace(W, replicas=4, manifest={**W.manifest, "spec": {"replicas": 4}})
    spec = replace(spec_for(STATIC, drain="ab"), workloads=(smaller,))
    (one,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert sum(p.replicas or 0 for p in one.clusters) == 4
    assert "a" not in counts(one)
    assert counts(one)["b"] == 2, "b is kept while a leaves, though the workload shrank"
    assert [(c, n) for c, n, _ in waiting(one)] == [("b", 2)]


@settings(max_examples=40, deadline=None)
@given(
    replicas=st.integers(min_value=1, max_value=20),
    drain=st.sets(st.sampled_from("abcd"), min_size=1, max_size=3),
    budget=st.integers(min_value=1, max_value=3),
    scheduling=st.sampled_from([STATIC, DUPLICATED]),
)
def test_a_step_keeps_the_total_and_leaves_no_more_than_the_budget(
    replicas: int, drain: set[str], budget: int, scheduling: ReplicaScheduling
) -> None:
    workload = replace(W, replicas=replicas)
    start = replace(
        spec_for(scheduling, budget=DisruptionBudget(count=budget)), workloads=(workload,)
    )
    (first,) = schedule.place(start)
    drained = replace(
        spec_for(scheduling, drain="".join(sorted(drain)), budget=DisruptionBudget(count=budget)),
        workloads=(workload,),
    )
    (one,) = schedule.place(drained, {first.key: first}, observed(drained, first), now=0.0)
    before, after = counts(first), counts(one)
    held = {c for c, n in before.items() if n}
    left = {c for c in held & drain if c not in after}
    assert len(left) <= budget
    assert len(left) == min(budget, len(held & drain)), "the budget's room is used"
    if scheduling is STATIC:
        assert sum(n or 0 for n in after.values()) == replicas
    for name in (held & drain) - left:
        assert after[name] == before[name], "a kept cluster keeps what it ran"
