"""The express lane places first placements as the full filter path does.

A pass that explains itself (`diagnose=True`) never takes the express lane, so the two passes
over the same spec must agree on everything but the per-cluster verdicts.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.domain import (
    Cluster,
    ClusterAffinity,
    Decision,
    LabelRequirement,
    LabelSelector,
    Placement,
    ReplicaScheduling,
    SchedulerConfig,
    Source,
    Spec,
    SpreadConstraint,
    Taint,
    Verdicts,
)
from reconciler.kube import demand
from reconciler.schedule import batch, engine, express, facts, framework
from reconciler.schedule.fleet import Fleet
from tests.builders.schedule import GPU, cluster, deployment, labelled, policy

EVICT = Taint(key="maintenance", value="", effect="NoExecute")
DIVISIONS = ("Duplicated", "StaticWeight", "DynamicWeight", "Aggregated")


def without_verdicts(decisions: tuple[Decision, ...]) -> list[Decision]:
    return [replace(d, diagnosis=replace(d.diagnosis, verdicts=Verdicts())) for d in decisions]


def region_targets(regions: tuple[str, ...]) -> tuple[ClusterAffinity, ...]:
    """Clusters in these regions; every cluster when none are named."""
    if not regions:
        return ()
    requirement = LabelRequirement(key="region", operator="In", values=regions)
    return (ClusterAffinity(label_selector=LabelSelector(match_expressions=(requirement,))),)


@st.composite
def placements(draw: st.DrawFn) -> tuple[Placement, bool]:
    division = draw(st.sampled_from(DIVISIONS))
    limit = draw(st.sampled_from([None, 0.5, 0.85, 1.0]))
    spread = draw(st.sampled_from([(), (SpreadConstraint(by="region", min_groups=1),)]))
    ceiling = draw(st.sampled_from([None, 0.9, 1.0]))  # overflow past the limit up to it
    placement = Placement(
        targets=region_targets(draw(st.sampled_from([(), ("eu",), ("eu", "us"), ("us", "ap")]))),
        replicas=ReplicaScheduling(
            type="Duplicated" if division == "Duplicated" else "Divided",
            division="StaticWeight" if division == "Duplicated" else division,
            static_weights=((ClusterAffinity(names=("c0", "c1")), 2),),
        ),
        water_level_limit=MappingProxyType({} if limit is None else {"cpu": limit}),
        water_level_ceiling=MappingProxyType({} if ceiling is None else {"cpu": ceiling}),
        overflow=draw(st.sampled_from(["Always", "Never"])),
        spread=spread,
    )
    return placement, draw(st.booleans())


@settings(max_examples=150, deadline=None)
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
        st.tuples(
            st.sampled_from([0, 1, 2, 3, 5, 8, 13, 40]), st.sampled_from(["0", "500m", "2", "9"])
        ),
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
            policy(j, placement, extensions) for j, (placement, extensions) in enumerate(policies)
        ),
    )
    fast = schedule.place(spec, diagnose=False)
    full = schedule.place(spec, diagnose=True)
    assert without_verdicts(fast) == without_verdicts(full)
    assert_newcomers_pass_alike(spec)
    # The next pass, on changed load, cordons and taints: steady divisions and re-placements.
    previous = {d.key: d for d in fast}
    changed = replace(spec, clusters=tuple(shifted(c, i) for i, c in enumerate(spec.clusters)))
    fast = schedule.place(changed, previous, diagnose=False)
    full = schedule.place(changed, previous, diagnose=True)
    assert without_verdicts(fast) == without_verdicts(full)
    # Once more on the same input: pending replicas are tried again, over-limit ones carried.
    previous = {d.key: d for d in fast}
    fast = schedule.place(changed, previous, diagnose=False)
    full = schedule.place(changed, previous, diagnose=True)
    assert without_verdicts(fast) == without_verdicts(full)


def shifted(item: Cluster, i: int) -> Cluster:
    """The cluster a pass later: its load moved; some cordoned, evicting or drained."""
    used = (item.allocated["cpu"] + 37 * (i + 1)) % 100
    return replace(
        item,
        allocated=MappingProxyType({**item.allocated, "cpu": used}),
        cordon=item.cordon != (i % 4 == 0),
        taints=(EVICT,) if i % 4 == 1 else item.taints,
        drain=i % 4 == 2,
    )


def assert_newcomers_pass_alike(spec: Spec) -> None:
    """`express.feasible` equals the filters' feasible set for every workload as a newcomer
    (re-balancing asks this for replicas it moves)."""
    order = schedule.claimed_workloads(spec)
    fleet = Fleet(clusters=spec.clusters)
    matrix = batch.demand_matrix(fleet, [demand.per_replica(c.workload) for c in order])
    fits, scales = batch.node_fit(fleet, matrix), batch.inverse(matrix)
    run = engine.Pass(fleet, spec.config, {}, diagnose=False, now=0.0)
    for i, claimed in enumerate(order):
        subject = run.facts.newcomer(claimed, matrix[i], scales[i], fits[i], None)
        expected = framework.apply_filters(fleet, subject).feasible
        assert express.feasible(fleet, subject).tolist() == expected.tolist()


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
    assert engine.Pass(fleet, config, {}, diagnose=False, now=0.0).lane.eligible(claimed)
    assert not engine.Pass(fleet, config, {}, diagnose=True, now=0.0).lane.eligible(claimed)
    again = engine.Pass(fleet, config, {workload.key: before}, diagnose=False, now=0.0)
    assert not again.lane.eligible(claimed)


def test_a_workload_scaled_to_zero_still_keeps_off_clusters_above_the_limit() -> None:
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=(cluster("hot", used=90), cluster("cool", used=10)),
        workloads=(deployment("w", 0, "500m"),),
        placement_policies=(),
    )
    for diagnose in (False, True):
        (decision,) = schedule.place(spec, diagnose=diagnose)
        assert [p.cluster for p in decision.clusters] == ["cool"]
    assert_newcomers_pass_alike(spec)


def test_a_refusal_is_worded_anew_once_the_usage_it_read_has_changed() -> None:
    dynamic = Placement(
        replicas=ReplicaScheduling(type="Divided", division="DynamicWeight"), overflow="Never"
    )
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=(cluster("a", used=90), cluster("b", used=80)),
        workloads=(
            labelled(deployment("w1", 1, "9"), "0"),
            labelled(deployment("w2", 1, "9"), "1"),  # Karmada's: fills b above 0.85
            labelled(deployment("w3", 1, "9"), "0"),
        ),
        placement_policies=(policy(0, dynamic, True), policy(1, dynamic, False)),
    )
    first, karmada, again = schedule.place(spec, diagnose=False)
    assert first.unschedulable == (
        "0/2 clusters are available: 1 insufficient cpu, 1 water level above 0.85 (cpu)"
    )
    assert [p.cluster for p in karmada.clusters] == ["b"]
    assert again.unschedulable == "0/2 clusters are available: 2 water level above 0.85 (cpu)"
