"""Scheduling: filters and scorers per plugin, and properties of `place`."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.domain import (
    Cluster,
    ClusterAffinity,
    FieldRequirement,
    LabelRequirement,
    LabelSelector,
    Origin,
    Placement,
    PlacementPolicy,
    PolicyRef,
    ReplicaScheduling,
    ResourceKey,
    ResourceSelector,
    SchedulerConfig,
    Source,
    Spec,
    Taint,
    Toleration,
    Workload,
)
from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet

ORIGIN = Origin(path="test.yaml", line=1)


def cluster(
    name: str,
    *,
    region: str = "r1",
    provider: str = "aws",
    cpu: float = 100,
    used: float = 10,
    taints: tuple[Taint, ...] = (),
) -> Cluster:
    return Cluster(
        name=name,
        origin=ORIGIN,
        labels=MappingProxyType({"region": region, "provider": provider}),
        capacity=MappingProxyType({"cpu": cpu, "memory": 1e12, "pods": 1000}),
        allocated=MappingProxyType({"cpu": used, "memory": 1e11, "pods": 10}),
        taints=taints,
    )


def deployment(name: str, replicas: int, cpu: str = "1") -> Workload:
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "prod"},
        "spec": {
            "replicas": replicas,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                    ]
                }
            },
        },
    }
    return Workload(
        key=ResourceKey("apps", "Deployment", "prod", name),
        api_version="apps/v1",
        manifest=manifest,
        origin=ORIGIN,
        replicas=replicas,
    )


def spec_of(clusters: list[Cluster], workloads: list[Workload], placement: Placement) -> Spec:
    policy = PlacementPolicy(
        ref=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name="p"),
        origin=ORIGIN,
        api_version="multicluster.io/v1alpha1",
        namespaced=False,
        selectors=(ResourceSelector(api_version="apps/v1", kind="Deployment"),),
        placement=placement,
    )
    return Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=tuple(clusters),
        workloads=tuple(workloads),
        placement_policies=(policy,),
    )


GPU = Taint(key="dedicated", value="gpu", effect="NoSchedule")
SOFT = Taint(key="spot", value="", effect="PreferNoSchedule")
FLEET = Fleet(
    clusters=(
        cluster("a", region="eu"),
        cluster("b", region="us", provider="gcp"),
        cluster("c", region="us", taints=(GPU,)),
        cluster("d", region="ap", taints=(SOFT,)),
    )
)


def context(placement: Placement) -> framework.Context:
    return framework.Context(
        fleet=FLEET,
        placement=placement,
        workload=deployment("w", 1),
        demand={"cpu": 1.0, "pods": 1.0},
    )


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
    verdict = framework.FILTERS["ClusterAffinity"](context(Placement(targets=targets)))
    assert verdict.passed.tolist() == expected
    assert all((r is None) == ok for r, ok in zip(verdict.reasons, expected, strict=True))


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ((), [True, True, False, True]),
        (
            (Toleration(key="dedicated", operator="Equal", value="gpu", effect="NoSchedule"),),
            [True, True, True, True],
        ),
        ((Toleration(key="dedicated", operator="Equal", value="cpu"),), [True, True, False, True]),
        ((Toleration(operator="Exists"),), [True, True, True, True]),
    ],
)
def test_taint_filter(tolerations: tuple[Toleration, ...], expected: list[bool]) -> None:
    verdict = framework.FILTERS["TaintToleration"](context(Placement(tolerations=tolerations)))
    assert verdict.passed.tolist() == expected
    if not expected[2]:
        assert verdict.reasons[2] == "untolerated taint dedicated=gpu:NoSchedule"


def test_prefer_no_schedule_lowers_the_score() -> None:
    scores = framework.SCORERS["TaintToleration"](context(Placement()))
    assert scores.tolist() == [100.0, 100.0, 100.0, 75.0]


def test_balance_prefers_the_emptier_cluster() -> None:
    fleet = Fleet(clusters=(cluster("x", used=80), cluster("y", used=20)))
    ctx = framework.Context(
        fleet=fleet, placement=Placement(), workload=deployment("w", 1), demand={"cpu": 10.0}
    )
    scores = framework.SCORERS["Balance"](ctx)
    assert scores.tolist() == pytest.approx([10.0, 70.0])


def test_fit_error_message_counts_each_reason() -> None:
    clusters = [cluster("a", taints=(GPU,)), cluster("b", taints=(GPU,)), cluster("c")]
    placement = Placement(targets=(ClusterAffinity(names=("a", "b")),))
    (decision,) = schedule.place(spec_of(clusters, [deployment("w", 2)], placement))
    assert decision.clusters == ()
    assert decision.unschedulable == (
        "0/3 clusters are available: 2 untolerated taint, "
        "1 cluster(s) did not match the placement's targets"
    )
    verdicts = {v.cluster: v for v in decision.diagnosis.verdicts}
    assert verdicts["c"].rejected_by == "ClusterAffinity"
    assert verdicts["a"].rejected_by == "TaintToleration"


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
    placement = Placement(replicas=ReplicaScheduling(type="Divided", division="DynamicWeight"))
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
    for verdict in decision.diagnosis.verdicts:
        assert all(0.0 <= s <= framework.SCORE_MAX for s in verdict.scores.values())
    if decision.clusters and division != "Duplicated":
        assert sum(p.replicas or 0 for p in decision.clusters) == replicas
    if not allowed:
        assert decision.unschedulable is not None


def test_fleet_arrays_are_read_only() -> None:
    assert not FLEET.names.flags.writeable
    assert not FLEET.capacity.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        FLEET.capacity[0, 0] = np.float64(1.0)
