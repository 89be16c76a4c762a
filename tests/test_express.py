"""The express lane places first placements as the full filter path does.

A pass that explains itself (`diagnose=True`) never takes the express lane, so the two passes
over the same spec must agree on everything but the per-cluster verdicts.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st
from test_schedule import GPU, ORIGIN, cluster, deployment

from reconciler import schedule
from reconciler.domain import (
    ClusterAffinity,
    Decision,
    LabelRequirement,
    LabelSelector,
    Placement,
    PlacementPolicy,
    PolicyRef,
    ReplicaScheduling,
    ResourceSelector,
    SchedulerConfig,
    Source,
    Spec,
    SpreadConstraint,
    Workload,
)
from reconciler.schedule import engine, express, facts
from reconciler.schedule.fleet import Fleet

DIVISIONS = ("Duplicated", "StaticWeight", "DynamicWeight", "Aggregated")


def without_verdicts(decisions: tuple[Decision, ...]) -> list[Decision]:
    return [replace(d, diagnosis=replace(d.diagnosis, verdicts=())) for d in decisions]


def labelled(workload: Workload, group: str) -> Workload:
    metadata = {**workload.manifest["metadata"], "labels": {"p": group}}
    return replace(workload, manifest={**workload.manifest, "metadata": metadata})


def region_targets(regions: tuple[str, ...]) -> tuple[ClusterAffinity, ...]:
    requirement = LabelRequirement(key="region", operator="In", values=regions)
    return (ClusterAffinity(label_selector=LabelSelector(match_expressions=(requirement,))),)


@st.composite
def placements(draw: st.DrawFn) -> tuple[Placement, bool]:
    division = draw(st.sampled_from(DIVISIONS))
    limit = draw(st.sampled_from([None, 0.5, 0.85, 1.0]))
    spread = draw(st.sampled_from([(), (SpreadConstraint(by="region", min_groups=1),)]))
    placement = Placement(
        targets=region_targets(tuple(draw(st.sets(st.sampled_from(["eu", "us", "ap"]))))),
        replicas=ReplicaScheduling(
            type="Duplicated" if division == "Duplicated" else "Divided",
            division="StaticWeight" if division == "Duplicated" else division,
            static_weights=((ClusterAffinity(names=("c0", "c1")), 2),),
        ),
        water_level_limit=MappingProxyType({} if limit is None else {"cpu": limit}),
        spread=spread,
    )
    return placement, draw(st.booleans())


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(
        st.tuples(
            st.sampled_from(["eu", "us", "ap"]),
            st.booleans(),
            st.integers(0, 95),
            st.booleans(),
        ),
        min_size=1,
        max_size=7,
    ),
    policies=st.lists(placements(), min_size=1, max_size=3),
    workloads=st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from(["0", "500m", "2", "9"])),
        min_size=1,
        max_size=8,
    ),
)
def test_the_express_lane_decides_as_the_filters_do(
    shape: list[tuple[str, bool, int, bool]],
    policies: list[tuple[Placement, bool]],
    workloads: list[tuple[int, str]],
) -> None:
    clusters = [
        replace(
            cluster(f"c{i}", region=region, used=used, taints=(GPU,) if tainted else ()),
            cordon=cordoned,
            largest_node_free=MappingProxyType({"cpu": 4.0}),
        )
        for i, (region, tainted, used, cordoned) in enumerate(shape)
    ]
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=tuple(clusters),
        workloads=tuple(
            labelled(deployment(f"w{i}", replicas, cpu), str(i % 3))
            for i, (replicas, cpu) in enumerate(workloads)
        ),
        placement_policies=tuple(
            PlacementPolicy(
                ref=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name=f"p{j}"),
                origin=ORIGIN,
                api_version="multicluster.io/v1alpha1",
                namespaced=False,
                selectors=(
                    ResourceSelector(
                        api_version="apps/v1",
                        kind="Deployment",
                        label_selector=LabelSelector(match_labels=MappingProxyType({"p": str(j)})),
                    ),
                ),
                placement=placement,
                dro_extensions=extensions,
            )
            for j, (placement, extensions) in enumerate(policies)
        ),
    )
    fast = schedule.place(spec, diagnose=False)
    full = schedule.place(spec, diagnose=True)
    assert without_verdicts(fast) == without_verdicts(full)


def test_only_unexplained_first_placements_take_the_lane() -> None:
    spec_cluster = cluster("a")
    workload = deployment("w", 3)
    claimed = facts.Claimed(
        workload=workload, placement=Placement(), ref=None, priority=0, extensions=True
    )
    fleet = Fleet(clusters=(spec_cluster,))
    config = SchedulerConfig()
    (before,) = schedule.place(
        Spec(
            source=Source(files=()),
            config=config,
            clusters=(spec_cluster,),
            workloads=(workload,),
            placement_policies=(),
        )
    )
    assert express.eligible(engine.Pass(fleet, config, {}, diagnose=False, now=0.0), claimed)
    assert not express.eligible(engine.Pass(fleet, config, {}, diagnose=True, now=0.0), claimed)
    again = engine.Pass(fleet, config, {workload.key: before}, diagnose=False, now=0.0)
    assert not express.eligible(again, claimed)
