"""Re-balancing weighs data locality (STCI): a replica leaving a hot cluster goes to the
cluster nearest its data that relieves the source, and filling never takes a workload farther
from its data."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from reconciler import schedule
from reconciler.domain import (
    Cluster,
    Decision,
    MoveBudget,
    Placed,
    Placement,
    Rebalance,
    SchedulerConfig,
)
from reconciler.domain.data import DataAccess, DataSet
from tests.builders.schedule import DYNAMIC, counts, deployment, spec_of
from tests.builders.stci import ORIGIN, TIB, cluster

LOGS = {"logs": DataSet(name="logs", origin=ORIGIN, primary="a", replicas=("c",))}
HOUR = 3600.0


def busy(base: Cluster, cpu: float) -> Cluster:
    return replace(base, allocated=MappingProxyType({**base.allocated, "cpu": cpu}))


def fleet(used: dict[str, float]) -> list[Cluster]:
    """a and c hold copies of the logs (a the primary); d is across regions, holding none."""
    clusters = [
        cluster("a", "aws", "eu", "eu-1a"),
        cluster("c", "aws", "eu", "eu-1b"),
        cluster("d", "aws", "us", "us-1a"),
    ]
    return [busy(c, used.get(c.name, 10.0)) for c in clusters]


def first_and_hot(reads: bool) -> tuple[Decision, object]:
    data = (DataAccess(dataset="logs", access="read", rate=5 * TIB),) if reads else ()
    placement = Placement(replicas=DYNAMIC, data=data)
    calm = spec_of(fleet({"d": 14.0}), [deployment("w", 8)], placement)
    calm = replace(calm, data_sets=MappingProxyType(LOGS))
    (first,) = schedule.place(calm)
    hot = replace(
        calm,
        clusters=tuple(fleet({"a": 90.0, "c": 16.0, "d": 14.0})),
        config=SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100))),
    )
    return first, hot


def test_a_replica_off_a_hot_cluster_goes_nearest_its_data() -> None:
    first, hot = first_and_hot(reads=True)
    assert counts(first) == {"a": 4, "c": 4}, "placed on the two holders of a copy"
    (after,) = schedule.place(hot, {first.key: first}, now=HOUR)  # type: ignore[arg-type]
    assert {m.target for m in after.moves} == {"c"}, "c holds a replica; d is across regions"
    assert counts(after) == {"c": 8}


def test_without_data_the_lowest_water_level_wins() -> None:
    first, hot = first_and_hot(reads=False)
    before = replace(first, clusters=(Placed("a", 4), Placed("c", 4)))  # as with data
    (after,) = schedule.place(hot, {first.key: before}, now=HOUR)  # type: ignore[arg-type]
    assert {m.target for m in after.moves} == {"d"}


def test_filling_leaves_a_workload_where_its_data_is() -> None:
    moved = {}
    for reads in (False, True):
        data = (DataAccess(dataset="logs", access="read", rate=5 * TIB),) if reads else ()
        placement = Placement(replicas=DYNAMIC, data=data)
        two = [c for c in fleet({"a": 50.0, "c": 50.0}) if c.name != "d"]
        spec = replace(
            spec_of(two, [deployment("w", 8)], placement), data_sets=MappingProxyType(LOGS)
        )
        (first,) = schedule.place(spec)
        grown = replace(
            spec,
            clusters=tuple(fleet({"a": 50.0, "c": 50.0})),
            config=SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100))),
        )
        (after,) = schedule.place(grown, {first.key: first}, now=HOUR, filling={"d"})
        moved[reads] = counts(after).get("d", 0)
    assert moved[False] > 0, "without data, the new cluster is filled"
    assert moved[True] == 0, "with data, d is farther from it than a or c"
