"""Scheduling: filters and scorers per plugin, and properties of `place`."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.domain import (
    ClusterAffinity,
    FieldRequirement,
    LabelRequirement,
    LabelSelector,
    Placement,
    ReplicaScheduling,
    SpreadConstraint,
    Taint,
    Toleration,
)
from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet
from tests.builders.schedule import FLEET, GPU, cluster, deployment, spec_of, subject


def check(name: str, item: framework.Subject, fleet: Fleet = FLEET) -> framework.Verdict:
    verdict: framework.Verdict = framework.FILTERS[name].plugin(fleet, item)
    return verdict


def score(name: str, item: framework.Subject, fleet: Fleet = FLEET) -> list[float]:
    feasible = np.ones(fleet.size, dtype=bool)
    scores: list[float] = framework.SCORERS[name].plugin(fleet, item, feasible).tolist()
    return scores


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        ((), [True, True, True, True]),
        ((ClusterAffinity(names=("a", "c")),), [True, False, True, False]),
        (
            (
                ClusterAffinity(
                    label_selector=LabelSelector(match_labels=MappingProxyType({"region": "us"}))
                ),
            ),
            [False, True, True, False],
        ),
        (
            (
                ClusterAffinity(
                    label_selector=LabelSelector(
                        match_expressions=(
                            LabelRequirement(key="region", operator="NotIn", values=("us",)),
                        )
                    )
                ),
            ),
            [True, False, False, True],
        ),
        (
            (
                ClusterAffinity(
                    field_selector=(
                        FieldRequirement(key="provider", operator="In", values=("gcp",)),
                    )
                ),
            ),
            [False, True, False, False],
        ),
        ((ClusterAffinity(exclude=("b",)),), [True, False, True, True]),
        (
            (ClusterAffinity(names=("a",)), ClusterAffinity(names=("d",))),
            [True, False, False, True],
        ),
    ],
)
def test_cluster_affinity_filter(
    targets: tuple[ClusterAffinity, ...], expected: list[bool]
) -> None:
    verdict = check("ClusterAffinity", subject(Placement(targets=targets)))
    assert verdict.passed.tolist() == expected
    for row, ok in enumerate(expected):
        if not ok:
            assert verdict.label(row)[0] == "not targeted by the placement"


@pytest.mark.parametrize(
    ("tolerations", "holders", "expected"),
    [
        ((), (), [True, True, False, True]),
        (
            (Toleration(key="dedicated", operator="Equal", value="gpu", effect="NoSchedule"),),
            (),
            [True, True, True, True],
        ),
        (
            (Toleration(key="dedicated", operator="Equal", value="cpu"),),
            (),
            [True, True, False, True],
        ),
        ((Toleration(operator="Exists"),), (), [True, True, True, True]),
        # A NoSchedule taint keeps what the cluster already holds.
        ((), ("c",), [True, True, True, True]),
    ],
)
def test_taint_filter(
    tolerations: tuple[Toleration, ...], holders: tuple[str, ...], expected: list[bool]
) -> None:
    verdict = check("TaintToleration", subject(Placement(tolerations=tolerations), holders=holders))
    assert verdict.passed.tolist() == expected
    if not expected[2]:
        assert verdict.label(2) == (
            "untolerated taint",
            "untolerated taint dedicated=gpu:NoSchedule",
        )


def test_no_execute_taint_evicts_even_holders() -> None:
    evict = Taint(key="maintenance", value="", effect="NoExecute")
    fleet = Fleet(clusters=(cluster("a", taints=(evict,)), cluster("b")))
    verdict = check("TaintToleration", subject(fleet=fleet, holders=("a",)), fleet)
    assert verdict.passed.tolist() == [False, True]


def test_lifecycle_filter_drains_everything_and_cordons_new_work() -> None:
    fleet = Fleet(
        clusters=(
            replace(cluster("a"), drain=True),
            replace(cluster("b"), cordon=True),
            replace(cluster("c"), cordon=True),
            cluster("d"),
        )
    )
    verdict = check("ClusterLifecycle", subject(fleet=fleet, holders=("a", "b")), fleet)
    assert verdict.passed.tolist() == [False, True, False, True]
    assert verdict.label(0)[0] == "cluster draining"
    assert verdict.label(2)[0] == "cluster cordoned"


def test_spread_filter_needs_the_grouping_field() -> None:
    fleet = Fleet(clusters=(cluster("a"), replace(cluster("b"), labels=MappingProxyType({}))))
    placement = Placement(spread=(SpreadConstraint(by="region", min_groups=1),))
    verdict = check("SpreadConstraint", subject(placement, fleet=fleet), fleet)
    assert verdict.passed.tolist() == [True, False]
    assert verdict.label(1)[0] == "no region to spread by"


@pytest.mark.parametrize(
    ("used", "holders", "expected"),
    [
        ([50, 86, 90], (), [True, False, False]),
        ([50, 86, 90], ("c",), [True, False, True]),
        ([85, 85, 85], (), [True, True, True]),
    ],
)
def test_water_level_filter(
    used: list[int], holders: tuple[str, ...], expected: list[bool]
) -> None:
    fleet = Fleet(clusters=tuple(cluster(n, used=u) for n, u in zip("abc", used, strict=True)))
    item = subject(fleet=fleet, holders=holders, limit={"cpu": 0.85})
    verdict = check("WaterLevel", item, fleet)
    assert verdict.passed.tolist() == expected
    if not expected[1]:
        assert verdict.label(1) == (
            "water level above 0.85 (cpu)",
            "cpu water level 0.86 is above the limit 0.85",
        )


def test_node_fit_filter_uses_the_largest_free_node() -> None:
    small = replace(cluster("a"), largest_node_free=MappingProxyType({"cpu": 4.0}))
    fleet = Fleet(clusters=(small, cluster("b")))
    verdict = check("NodeFit", subject(fleet=fleet, cpu=8), fleet)
    assert verdict.passed.tolist() == [False, True]
    assert verdict.label(0) == (
        "no node fits 8 cpu",
        "the largest free node has 4 cpu; one replica needs 8 cpu",
    )
    held = check("NodeFit", subject(fleet=fleet, cpu=8, holders=("a",)), fleet)
    assert held.passed.tolist() == [True, True]


@pytest.mark.parametrize(
    ("strategy", "allocatable", "expected"),
    [
        ("Duplicated", [5, 4, 0, 9], [True, False, False, True]),
        ("DynamicWeight", [5, 4, 0, 9], [True, True, False, True]),
    ],
)
def test_capacity_filter(strategy: str, allocatable: list[int], expected: list[bool]) -> None:
    placement = Placement(
        replicas=ReplicaScheduling(
            type="Duplicated" if strategy == "Duplicated" else "Divided",
            division="DynamicWeight",
        )
    )
    verdict = check("Capacity", subject(placement, replicas=5, allocatable=allocatable))
    assert verdict.passed.tolist() == expected
    assert verdict.label(2)[0] == "insufficient cpu"


def test_prefer_no_schedule_lowers_the_score() -> None:
    assert score("TaintToleration", subject()) == [100.0, 100.0, 100.0, 75.0]


def test_balance_prefers_the_emptier_cluster() -> None:
    fleet = Fleet(clusters=(cluster("x", used=80), cluster("y", used=20)))
    assert score("Balance", subject(fleet=fleet, cpu=10), fleet) == pytest.approx([10.0, 70.0])


def test_availability_scores_the_share_a_cluster_could_take() -> None:
    item = subject(replicas=4, allocatable=[0, 1, 4, 10])
    assert score("Availability", item) == [0.0, 25.0, 100.0, 100.0]


def test_preference_scores_by_matching_weights() -> None:
    us = ClusterAffinity(
        label_selector=LabelSelector(match_labels=MappingProxyType({"region": "us"}))
    )
    placement = Placement(preferred=((us, 30), (ClusterAffinity(names=("b",)), 10)))
    assert score("Preference", subject(placement)) == [0.0, 100.0, 75.0, 0.0]
    assert score("Preference", subject()) == [0.0, 0.0, 0.0, 0.0]


def test_locality_prefers_current_holders() -> None:
    assert score("ClusterLocality", subject(holders=("b",))) == [0.0, 100.0, 0.0, 0.0]


def test_fit_error_message_counts_each_reason() -> None:
    clusters = [cluster("a", taints=(GPU,)), cluster("b", taints=(GPU,)), cluster("c")]
    placement = Placement(targets=(ClusterAffinity(names=("a", "b")),))
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 2)], placement))
    assert decision.clusters == ()
    assert decision.unschedulable == (
        "0/3 clusters are available: 2 untolerated taint, 1 not targeted by the placement"
    )
    verdicts = {v.cluster: v for v in decision.diagnosis.verdicts.every()}
    assert verdicts["c"].rejected_by == "ClusterAffinity"
    assert verdicts["a"].rejected_by == "TaintToleration"


def test_unschedulable_message_names_every_filter() -> None:
    big = MappingProxyType({"cpu": 4.0})
    clusters = [
        cluster("t1", taints=(GPU,)),
        cluster("t2", taints=(GPU,)),
        cluster("t3", taints=(GPU,)),
        cluster("hot1", used=90),
        cluster("hot2", used=95),
        replace(cluster("small"), largest_node_free=big),
    ]
    placement = Placement(
        replicas=ReplicaScheduling(type="Divided", division="DynamicWeight"), overflow="Never"
    )
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 2, cpu="8")], placement))
    assert decision.pending == 2, "a hard limit: nothing fits, both replicas are pending"
    assert decision.unschedulable == (
        "0/6 clusters are available: 3 untolerated taint, "
        "2 water level above 0.85 (cpu), 1 no node fits 8 cpu"
    )


def test_static_weights_take_the_largest_matching_rule() -> None:
    clusters = [cluster("a", region="eu"), cluster("b", region="us"), cluster("c", region="us")]
    us = ClusterAffinity(
        label_selector=LabelSelector(match_labels=MappingProxyType({"region": "us"}))
    )
    placement = Placement(
        replicas=ReplicaScheduling(
            type="Divided",
            division="StaticWeight",
            static_weights=((ClusterAffinity(names=("a", "b")), 1), (us, 3)),
        )
    )
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 14)], placement))
    assert {p.cluster: p.replicas for p in decision.clusters} == {"a": 2, "b": 6, "c": 6}


def test_dynamic_weight_follows_free_capacity() -> None:
    clusters = [cluster("a", cpu=100, used=90), cluster("b", cpu=100, used=60)]
    placement = Placement(
        replicas=ReplicaScheduling(type="Divided", division="DynamicWeight"),
        water_level_limit=MappingProxyType({"cpu": 1.0}),
    )
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 10, cpu="2")], placement))
    assert {p.cluster: p.replicas for p in decision.clusters} == {"a": 2, "b": 8}


cluster_sets = st.lists(
    st.tuples(st.sampled_from(["eu", "us", "ap"]), st.booleans(), st.integers(0, 90)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(shape=cluster_sets, replicas=st.integers(0, 30), data=st.data())
def test_place_never_uses_rejected_clusters_and_ignores_order(
    shape: list[tuple[str, bool, int]], replicas: int, data: st.DataObject
) -> None:
    clusters = [
        cluster(f"c{i}", region=region, used=used, taints=(GPU,) if tainted else ())
        for i, (region, tainted, used) in enumerate(shape)
    ]
    division = data.draw(
        st.sampled_from(["Duplicated", "StaticWeight", "DynamicWeight", "Aggregated"])
    )
    placement = Placement(
        targets=(
            ClusterAffinity(
                label_selector=LabelSelector(
                    match_expressions=(
                        LabelRequirement(key="region", operator="In", values=("eu", "us")),
                    )
                )
            ),
        ),
        replicas=ReplicaScheduling(
            type="Duplicated" if division == "Duplicated" else "Divided",
            division="StaticWeight" if division == "Duplicated" else division,
        ),
    )
    workloads = [deployment("w", replicas)]
    (decision,) = schedule.place(spec_of(clusters, workloads, placement))
    (again,) = schedule.place(spec_of(list(reversed(clusters)), workloads, placement))
    assert decision == again
    allowed = {c.name for c in clusters if not c.taints and c.labels["region"] != "ap"}
    assert {p.cluster for p in decision.clusters} <= allowed
    for verdict in decision.diagnosis.verdicts.every():
        assert all(0.0 <= s <= framework.SCORE_MAX for s in verdict.scores.values())
    if decision.clusters and division != "Duplicated":
        placed = sum(p.replicas or 0 for p in decision.clusters)
        assert placed == replicas - decision.pending, "what does not fit is pending"
        assert (decision.pending > 0) == (decision.unschedulable is not None)
    if not allowed:
        assert decision.unschedulable is not None


def test_fleet_arrays_are_read_only() -> None:
    assert not FLEET.names.flags.writeable
    assert not FLEET.capacity.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        FLEET.capacity[0, 0] = np.float64(1.0)


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        # core/v1 ToleratesTaint, case by case (k8s.io/api core/v1 toleration.go)
        (Toleration(effect="NoSchedule"), Taint(key="a", effect="NoSchedule"), True),
        (Toleration(effect="NoSchedule"), Taint(key="a", value="x", effect="NoSchedule"), False),
        (Toleration(effect="NoSchedule"), Taint(key="a", effect="NoExecute"), False),
        (Toleration(), Taint(key="any", effect="NoExecute"), True),
        (
            Toleration(operator="Exists", effect="NoSchedule"),
            Taint(key="a", value="x", effect="NoSchedule"),
            True,
        ),
        (
            Toleration(key="a", operator="Exists"),
            Taint(key="a", value="x", effect="NoExecute"),
            True,
        ),
        (Toleration(key="a"), Taint(key="a", value="x", effect="NoSchedule"), False),
        (Toleration(key="a", value="x"), Taint(key="a", value="x", effect="NoSchedule"), True),
        (Toleration(key="b", operator="Exists"), Taint(key="a", effect="NoSchedule"), False),
    ],
)
def test_toleration_matching_is_core_v1(
    toleration: Toleration, taint: Taint, tolerated: bool
) -> None:
    assert toleration.tolerates(taint) is tolerated


@pytest.mark.parametrize(
    ("seconds", "added", "kept"),
    [
        (None, None, True),  # no tolerationSeconds: tolerated for ever
        (0, None, False),  # 0: evicted at once
        (300, None, True),  # counted from now: still tolerated
        (300, 1000.0 - 300, False),  # added 300 s ago: the time is up
        (300, 1000.0 - 299, True),
    ],
)
def test_no_execute_toleration_seconds_bound_the_stay(
    seconds: int | None, added: float | None, kept: bool
) -> None:
    """Karmada's taint manager (GetMinTolerationTimeWithCurrentTime): a tolerated NoExecute
    taint evicts once timeAdded + tolerationSeconds is reached."""
    evict = Taint(key="maintenance", effect="NoExecute", time_added=added)
    fleet = replace(Fleet(clusters=(cluster("a", taints=(evict,)), cluster("b"))), now=1000.0)
    tolerations = (Toleration(key="maintenance", operator="Exists", seconds=seconds),)
    placement = Placement(tolerations=tolerations)
    verdict = check("TaintToleration", subject(placement, fleet=fleet, holders=("a",)), fleet)
    assert verdict.passed.tolist() == [kept, True]
    if not kept:
        assert verdict.label(0)[1] == "tolerationSeconds are up for taint maintenance:NoExecute"
