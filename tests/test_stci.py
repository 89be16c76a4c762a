"""STCI: rates and annotations, the link tiers, the (workloads × clusters) data costs, the
DataLatency filter and the DataLocality scorer with its auto-adjusted weight, and a whole pass
that keeps a data-heavy workload beside its data."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import numpy as np
import pytest

from reconciler import schedule
from reconciler.domain import Origin
from reconciler.domain.data import DataAccess, DataSet, Link, Topology
from reconciler.errors import Problem
from reconciler.schedule import framework, placing, stci
from reconciler.schedule.fleet import Fleet
from reconciler.schedule.plugins import data_locality
from reconciler.validate import datamodel
from tests.builders.schedule import deployment, spec_of, subject
from tests.builders.stci import GIB, ORIGIN, STORES, TIB, cluster, divided, stateful_spec

# a and b share a zone; c is in a's region; d is across regions; e is another provider
FLEET = Fleet(
    clusters=(
        cluster("a", "aws", "eu", "eu-1a"),
        cluster("b", "aws", "eu", "eu-1a"),
        cluster("c", "aws", "eu", "eu-1b"),
        cluster("d", "aws", "us", "us-1a"),
        cluster("e", "gcp", "eu", "eu-1a"),
    )
)
DATA = {"logs": DataSet(name="logs", origin=ORIGIN, primary="a", replicas=("d",))}


@pytest.mark.parametrize(
    ("text", "per_day"),
    [
        ("200Gi/d", 200 * GIB),
        ("1Gi/h", 24 * GIB),
        ("5Mi/s", 5 * 2**20 * 86_400),
        ("10", 10.0),
        (1024, 1024.0),
    ],
)
def test_rates_are_bytes_per_day(text: object, per_day: float) -> None:
    assert datamodel.per_day(text) == pytest.approx(per_day)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("10Gi/w", "must be s, m, h or d"),
        ("lots/d", "is not a quantity"),
        ("ten", "not a quantity"),
    ],
)
def test_bad_rates_say_why(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        datamodel.per_day(text)


def test_the_annotation_declares_accesses_and_bad_entries_are_located() -> None:
    problems: list[Problem] = []
    origin = Origin(path="workloads/app.yaml", line=3, lines={"/metadata/annotations": 5})
    text = "logs:read:50Gi/d, models:write:1Gi/h, broken:delete"
    found = datamodel.annotated({datamodel.DATA_ANNOTATION: text}, origin, problems)
    assert found == (
        DataAccess(dataset="logs", access="read", rate=50 * GIB),
        DataAccess(dataset="models", access="write", rate=24 * GIB),
    )
    (problem,) = problems
    assert problem.path == "workloads/app.yaml"
    assert "broken:delete" in problem.message
    assert problem.pointer == "/metadata/annotations/multicluster.io~1data"


def test_links_follow_the_tiers_and_measured_pairs_win() -> None:
    measured = Link(latency_ms=7.0, bandwidth=GIB, cost_per_gib=0.05)
    net = stci.links(FLEET, Topology(links={("a", "d"): measured, ("d", "a"): measured}))
    latency = net.latency_ms
    assert latency[0].tolist() == [0.0, 0.5, 2.0, 7.0, 90.0]
    assert latency[1, 3] == 80.0, "b to d: cross-region, not measured"
    assert net.cost_per_gib[3, 0] == 0.05
    assert np.isinf(net.bandwidth[2, 2])


def test_data_costs_read_from_the_nearest_copy_and_write_to_the_primary() -> None:
    reader = [DataAccess(dataset="logs", access="read", rate=TIB)]
    writer = [DataAccess(dataset="logs", access="write", rate=TIB)]
    costs = stci.data_costs(FLEET, Topology(), DATA, [reader, writer, []])
    assert costs.bytes_per_day[0].tolist() == [0.0, TIB, TIB, 0.0, TIB], "a and d hold copies"
    assert costs.bytes_per_day[1].tolist() == [0.0, TIB, TIB, TIB, TIB], "writes go to a"
    assert costs.egress_per_day[0, 1] == pytest.approx(1024 * 0.0), "same zone is free"
    assert costs.egress_per_day[0, 2] == pytest.approx(1024 * 0.01)
    assert costs.egress_per_day[0, 4] == pytest.approx(1024 * 0.09)
    assert costs.latency_ms[0].tolist() == [0.0, 0.5, 2.0, 0.0, 90.0]
    assert costs.uses_data.tolist() == [True, True, False]
    assert costs.rate.tolist() == [TIB, TIB, 0.0]


def row(costs: stci.DataCosts, index: int) -> framework.DataRow:
    return framework.DataRow(
        bytes_per_day=costs.bytes_per_day[index],
        egress_per_day=costs.egress_per_day[index],
        transfer_seconds=costs.transfer_seconds[index],
        latency_ms=costs.latency_ms[index],
        rate=float(costs.rate[index]),
    )


READER = stci.data_costs(
    FLEET, Topology(), DATA, [[DataAccess(dataset="logs", access="read", rate=TIB)]]
)


@pytest.mark.parametrize(
    ("limit", "passed"),
    [
        (None, [True, True, True, True, True]),
        (1.0, [True, True, False, True, False]),
        (0.0, [True, False, False, True, False]),
    ],
)
def test_data_latency_filter(limit: float | None, passed: list[bool]) -> None:
    item = dataclasses.replace(
        subject(dataclasses.replace(subject().placement, max_data_latency_ms=limit), fleet=FLEET),
        data=row(READER, 0),
    )
    verdict = framework.FILTERS["DataLatency"].plugin(FLEET, item)
    assert verdict.passed.tolist() == passed
    rejected = [i for i, ok in enumerate(passed) if not ok]
    if rejected:
        assert "ms to its data" in verdict.label(rejected[0])[1]


def test_data_locality_scores_local_clusters_highest() -> None:
    item = dataclasses.replace(subject(fleet=FLEET), data=row(READER, 0))
    feasible = np.ones(FLEET.size, dtype=bool)
    scores = framework.SCORERS["DataLocality"].plugin(FLEET, item, feasible).tolist()
    assert scores[0] == scores[3] == 100.0, "the clusters holding a copy"
    assert scores[4] == 0.0, "another provider: the costliest"
    assert 0.0 < scores[2] < 100.0
    assert scores[1] > scores[2], "same zone beats same region"
    plain = subject(fleet=FLEET)
    assert framework.SCORERS["DataLocality"].plugin(FLEET, plain, feasible).tolist() == [0.0] * 5


@pytest.mark.parametrize(("rate", "factor"), [(0.0, 1.0), (TIB, 2.0), (3 * TIB, 3.0)])
def test_a_data_heavy_workload_weights_locality_more(rate: float, factor: float) -> None:
    data = dataclasses.replace(row(READER, 0), rate=rate)
    assert data_locality.weight_factor(data) == pytest.approx(factor)
    assert data_locality.weight_factor(None) == 1.0


def test_a_pass_keeps_a_data_heavy_workload_beside_its_data() -> None:
    clusters = [cluster("a", "aws", "eu", "eu-1a"), cluster("d", "aws", "us", "us-1a")]
    # a is busier, so without data the balance scorer alone would pick d
    clusters[0] = dataclasses.replace(
        clusters[0], allocated=MappingProxyType({"cpu": 60.0, "memory": 5e11, "pods": 10.0})
    )
    placement = dataclasses.replace(
        subject().placement,
        replicas=dataclasses.replace(
            subject().placement.replicas, type="Divided", division="Aggregated"
        ),
    )
    base = spec_of(clusters, [deployment("etl", 2)], placement)
    data = {"logs": DataSet(name="logs", origin=ORIGIN, primary="a")}
    without = schedule.place(base)
    heavy = dataclasses.replace(
        placement, data=(DataAccess(dataset="logs", access="read", rate=5 * TIB),)
    )
    with_data = schedule.place(
        dataclasses.replace(
            spec_of(clusters, [deployment("etl", 2)], heavy), data_sets=MappingProxyType(data)
        )
    )
    assert [p.cluster for p in without[0].clusters] == ["d"]
    assert [p.cluster for p in with_data[0].clusters] == ["a"]
    assert with_data[0].diagnosis.weights["DataLocality"] == pytest.approx(
        1 + np.log2(1 + 5), abs=1e-3
    )


@pytest.mark.parametrize(
    ("replicas", "allocatable", "chosen"),
    [
        (2, [5, 5, 5, 5, 5], [0, 3]),  # the two holders of a copy take it all
        (8, [5, 5, 5, 5, 5], [0, 3]),
        (12, [5, 5, 5, 5, 5], [0, 1, 3]),  # and the free link in the same zone
        (30, [5, 5, 5, 5, 5], [0, 1, 2, 3, 4]),  # not even all of them: every candidate
        (2, [0, 5, 5, 0, 5], [0, 1, 3]),  # holders full: the nearest with room joins
    ],
)
def test_a_divided_workload_keeps_to_the_clusters_nearest_its_data(
    replicas: int, allocatable: list[int], chosen: list[int]
) -> None:
    item = dataclasses.replace(
        subject(fleet=FLEET, replicas=replicas, allocatable=allocatable), data=row(READER, 0)
    )
    everyone = np.arange(FLEET.size)
    assert placing.near_data(FLEET, item, everyone, FLEET.load()).tolist() == chosen


def test_replicas_spill_past_a_holder_filled_to_the_fleet_level_plus_the_margin() -> None:
    busy = dataclasses.replace(
        FLEET.clusters[0],
        allocated=MappingProxyType({"cpu": 55.0, "memory": 1e11, "pods": 10.0}),
    )
    fleet = Fleet(clusters=(busy, *FLEET.clusters[1:]))
    only_primary = {"logs": DataSet(name="logs", origin=ORIGIN, primary="a")}
    reads = [[DataAccess(dataset="logs", access="read", rate=TIB)]]
    data = row(stci.data_costs(fleet, Topology(), only_primary, reads), 0)
    level = fleet.load() + placing.SPILL
    room = int(100 * level - 55)  # replicas of 1 cpu a can take before it passes that level
    item = dataclasses.replace(
        subject(fleet=fleet, replicas=room + 2, allocatable=[40] * 5), data=data
    )
    assert placing.near_data(fleet, item, np.arange(5), fleet.load()).tolist() == [0, 1]
    fewer = dataclasses.replace(item, replicas=room)
    assert placing.near_data(fleet, fewer, np.arange(5), fleet.load()).tolist() == [0]


@pytest.mark.parametrize(
    ("changes", "data", "expected"),
    [
        ({}, None, {"a": 6}),  # whole on one cluster (the roomiest, then by name)
        ({}, "b", {"b": 6}),  # whole, beside the primary of the data it writes
        ({"allowSplit": True}, None, {"a": 3, "b": 3}),  # the policy lets it split
    ],
)
def test_a_stateful_workload_runs_whole_beside_its_data(
    changes: dict[str, object], data: str | None, expected: dict[str, int]
) -> None:
    placement = divided(allow_split=bool(changes.get("allowSplit")))
    if data is not None:
        placement = dataclasses.replace(
            placement, data=(DataAccess(dataset="db", access="write", rate=GIB),)
        )
    spec = stateful_spec(STORES, 6, placement)
    sets = {"db": DataSet(name="db", origin=ORIGIN, primary=data)} if data else {}
    spec = dataclasses.replace(spec, data_sets=MappingProxyType(sets))
    (decision,) = schedule.place(spec)
    assert {p.cluster: p.replicas for p in decision.clusters} == expected


def test_a_stateful_workload_no_single_cluster_can_hold_is_unschedulable() -> None:
    small = [
        dataclasses.replace(
            c, capacity=MappingProxyType({"cpu": 14.0, "memory": 1e12, "pods": 100})
        )
        for c in STORES
    ]
    (decision,) = schedule.place(stateful_spec(small, 8, divided()))
    assert decision.unschedulable is not None
    assert "allowSplit" in decision.unschedulable
