"""The pass: capacity accounting, steady state, affinity fallback, spread, explain."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from reconciler import cli, schedule
from reconciler.branch import summary
from reconciler.domain import (
    AffinityTerm,
    ClusterAffinity,
    Decision,
    Placed,
    Placement,
    ReplicaScheduling,
    SchedulerConfig,
    Scoring,
    SpreadConstraint,
    Strategy,
    Taint,
)
from reconciler.schedule import facts, spread
from reconciler.schedule.fleet import Fleet
from tests.builders.schedule import cluster, deployment, spec_of

DYNAMIC = ReplicaScheduling(type="Divided", division="DynamicWeight")


def counts(decision: Decision) -> dict[str, int | None]:
    return {p.cluster: p.replicas for p in decision.clusters}


def test_a_pass_never_overcommits_a_cluster() -> None:
    # Each cluster has room for 8 one-cpu replicas under the 0.85 limit (85 - 77).
    clusters = [cluster("a", used=77), cluster("b", used=77)]
    workloads = [deployment(f"w{i}", 6) for i in range(4)]
    hard = Placement(replicas=DYNAMIC, overflow="Never")
    decisions = schedule.place(spec_of(clusters, workloads, hard))
    placed = [counts(d) for d in decisions]
    assert placed[:2] == [{"a": 3, "b": 3}, {"a": 3, "b": 3}]
    assert all(d.unschedulable for d in decisions[2:])
    assert placed[2] == {"a": 2, "b": 2}, "a hard limit: the third takes what is left"
    assert (decisions[2].pending, decisions[3].pending) == (2, 6)
    assert decisions[3].clusters == ()
    for name in "ab":
        assert sum(p.get(name) or 0 for p in placed) <= 8


def test_own_previous_replicas_are_added_back() -> None:
    # The cluster is full, but the replicas filling it are this workload's own.
    clusters = [cluster("a", used=85)]
    spec = spec_of(clusters, [deployment("w", 5)], Placement(replicas=DYNAMIC, overflow="Never"))
    (first,) = schedule.place(spec)
    assert first.unschedulable is not None
    previous = Decision(
        key=first.key,
        api_version="apps/v1",
        policy=first.policy,
        clusters=(Placed(cluster="a", replicas=4),),
        placement_digest="",
    )
    (scaled,) = schedule.place(spec, {first.key: previous})
    assert scaled.unschedulable is not None
    assert counts(scaled) == {"a": 4}, "a capacity shortage keeps the running copies"
    assert scaled.pending == 1


def test_steady_state_keeps_the_previous_division() -> None:
    clusters = [cluster("a", used=10), cluster("b", used=10)]
    spec = spec_of(clusters, [deployment("w", 4), deployment("x", 4)], Placement(replicas=DYNAMIC))
    first = schedule.place(spec)
    previous = {d.key: d for d in first}
    # A cluster gets busier: nothing moves without a trigger.
    busier = replace(spec, clusters=(cluster("a", used=70), cluster("b", used=10)))
    again = schedule.place(busier, previous)
    assert [counts(d) for d in again] == [counts(d) for d in first]
    assert again[0].diagnosis.trigger.text == "steady: the previous division stands"
    # Scaling one workload re-divides only that one.
    scaled = replace(busier, workloads=(deployment("w", 6), deployment("x", 4)))
    after = schedule.place(scaled, previous)
    assert counts(after[1]) == counts(first[1])
    assert sum(counts(after[0]).values()) == 6  # type: ignore[arg-type]
    assert (
        after[0].diagnosis.trigger.text == "replicas changed from 4 to 6; went to the coolest: b +2"
    )


def test_a_lost_cluster_triggers_a_new_division() -> None:
    clusters = [cluster("a"), cluster("b"), cluster("c")]
    spec = spec_of(clusters, [deployment("w", 6)], Placement(replicas=DYNAMIC))
    (first,) = schedule.place(spec)
    evicting = Taint(key="maintenance", value="", effect="NoExecute")
    drained = replace(spec, clusters=(cluster("a", taints=(evicting,)), cluster("b"), cluster("c")))
    (after,) = schedule.place(drained, {first.key: first})
    assert "a" not in counts(after)
    assert sum(counts(after).values()) == 6  # type: ignore[arg-type]
    assert after.diagnosis.trigger.text == "cluster a is no longer a candidate"


def test_cluster_affinities_fall_back_in_order_and_stay() -> None:
    clusters = [cluster("a", used=99), cluster("b")]
    terms = (
        AffinityTerm(name="primary", affinity=ClusterAffinity(names=("a",))),
        AffinityTerm(name="backup", affinity=ClusterAffinity(names=("b",))),
    )
    spec = spec_of(
        clusters, [deployment("w", 2)], Placement(affinity_terms=terms, replicas=DYNAMIC)
    )
    (decision,) = schedule.place(spec)
    assert counts(decision) == {"b": 2}
    assert decision.affinity_term == "backup"
    freed = replace(spec, clusters=(cluster("a"), cluster("b")))
    (again,) = schedule.place(freed, {decision.key: decision})
    assert again.affinity_term == "backup", "only a Fresh run returns to an earlier term"


def test_overflow_tier_takes_only_what_the_primary_cannot() -> None:
    clusters = [cluster("a", used=80), cluster("b")]
    term = AffinityTerm(
        name="primary",
        affinity=ClusterAffinity(names=("a",)),
        overflow=(("burst", ClusterAffinity(names=("b",))),),
    )
    placement = Placement(affinity_terms=(term,), replicas=DYNAMIC)
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 8)], placement))
    assert counts(decision) == {"a": 5, "b": 3}


def test_karmada_cluster_spread_swaps_in_capacity() -> None:
    # Karmada's own example: scores 60/50/40, available 40/30/60, 80 replicas, 2 clusters.
    fleet = Fleet(clusters=(cluster("m1"), cluster("m2"), cluster("m3")))
    chosen = spread.select(
        fleet,
        np.array([0, 1, 2]),
        (SpreadConstraint(by="cluster", min_groups=1, max_groups=2),),
        scores=np.array([60.0, 50.0, 40.0]),
        available=np.array([40, 30, 60]),
        replicas=80,
        strategy=Strategy.DYNAMIC_WEIGHT,
        karmada=True,
    )
    assert fleet.names[chosen].tolist() == ["m1", "m3"]


def test_region_spread_reaches_min_groups() -> None:
    clusters = [cluster("a", region="eu"), cluster("b", region="eu"), cluster("c", region="us")]
    placement = Placement(
        replicas=DYNAMIC, spread=(SpreadConstraint(by="region", min_groups=2, max_groups=2),)
    )
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 4)], placement))
    regions = {"a": "eu", "b": "eu", "c": "us"}
    assert {regions[name] for name in counts(decision)} == {"eu", "us"}


@pytest.mark.parametrize(("load", "favoured"), [(0.1, "Availability"), (0.95, "Balance")])
def test_weights_follow_fleet_load(load: float, favoured: str) -> None:
    weights = facts.effective_weights(SchedulerConfig(), load)
    other = "Balance" if favoured == "Availability" else "Availability"
    assert weights[favoured] > weights[other]
    fixed = facts.effective_weights(SchedulerConfig(scoring=Scoring(adaptive=False)), load)
    assert fixed["Balance"] == fixed["Availability"] == 1.0


def test_karmada_policies_use_only_karmada_plugins() -> None:
    clusters = [cluster("a", used=95), cluster("b", used=10)]
    spec = spec_of(clusters, [deployment("w", 2)], Placement(replicas=DYNAMIC))
    policy = replace(spec.placement_policies[0], dro_extensions=False)
    (decision,) = schedule.place(replace(spec, placement_policies=(policy,)))
    verdicts = {v.cluster: v for v in decision.diagnosis.verdicts.every()}
    assert verdicts["a"].rejected_by is None, "no water-level filter for Karmada's kinds"
    assert set(decision.diagnosis.weights) == {"ClusterLocality"}


def test_explain_prints_a_row_per_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", "example-repo", "payments/Deployment/checkout", "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in document["diagnosis"]["clusters"]}
    assert len(rows) == 7
    assert rows["us-east-gpu"]["rejectedBy"] == "TaintToleration"
    assert rows["eu-west-1"]["feasible"] is True
    assert set(rows["eu-west-1"]["scores"]) == set(document["diagnosis"]["weights"])
    assert cli.main(["explain", "example-repo", "payments/Deployment/checkout"]) == 0
    table = capsys.readouterr().out
    assert "untolerated taint dedicated=gpu:NoSchedule" in table
    assert cli.main(["explain", "example-repo", "payments/Deployment/nope"]) == 1


def test_decision_files_round_trip_and_stay_put() -> None:
    clusters = [cluster("a"), cluster("b")]
    spec = spec_of(clusters, [deployment("w", 3)], Placement(replicas=DYNAMIC))
    (first,) = schedule.place(spec)
    back = summary.decision_from_document(summary.decision_document(first))
    assert back.clusters == first.clusters
    assert back.placement_digest == first.placement_digest
    (second,) = schedule.place(spec, {back.key: back})
    assert summary.decision_document(second) == summary.decision_document(first)
