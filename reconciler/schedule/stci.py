"""Storage-Transmission-Compute Integration: what running each workload on each cluster costs
in data that crosses domains, as (workloads × clusters) numpy matrices.

A workload reads a data set wherever a copy is (its primary or a replica) and writes it at
its primary. On a cluster holding what it needs, nothing crosses a domain; elsewhere its rate
(bytes per day) travels from the nearest holder. For each (workload, cluster):

- `bytes_per_day`: the bytes that cross domains;
- `egress_per_day`: their price, at the link's cost per GiB;
- `transfer_seconds`: the time they take at the link's bandwidth (seconds per day);
- `latency_ms`: the worst latency to any data set it uses (for `maxDataLatencyMs`).

The links come from `Topology`: a measured pair, else the defaults of the pair's tier (same
zone, same region, cross-region, cross-provider). Everything is a matrix product or a
broadcast over clusters; the only Python loops run over data sets, links and accesses.

Called by `schedule`, `schedule.engine`, `schedule.facts` and `simulate.replay`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reconciler.domain.data import READ, TIERS, DataAccess, DataSet, Link, Topology
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, frozen

GIB = float(2**30)


@dataclass(frozen=True, slots=True, kw_only=True)
class Links:
    """(clusters × clusters) latency, bandwidth and price per GiB, from row to column."""

    latency_ms: FloatArray
    bandwidth: FloatArray
    cost_per_gib: FloatArray


def links(fleet: Fleet, topology: Topology) -> Links:
    """Every pair's link: measured where `topology.links` lists it, else its tier's."""
    provider, region, zone = (fleet.topology(by) for by in ("provider", "region", "zone"))
    tier = np.full((fleet.size, fleet.size), TIERS.index("sameZone"), dtype=np.int64)
    unknown_zone = zone == None  # noqa: E711 - elementwise
    zone_differs = (zone[:, None] != zone[None, :]) | unknown_zone[:, None] | unknown_zone[None, :]
    tier[zone_differs] = TIERS.index("sameRegion")
    tier[region[:, None] != region[None, :]] = TIERS.index("crossRegion")
    tier[provider[:, None] != provider[None, :]] = TIERS.index("crossProvider")
    table = [topology.tiers[name] for name in TIERS]
    latency = np.array([t.latency_ms for t in table], dtype=np.float64)[tier]
    bandwidth = np.array([t.bandwidth for t in table], dtype=np.float64)[tier]
    cost = np.array([t.cost_per_gib for t in table], dtype=np.float64)[tier]
    index = fleet.index
    for (a, b), link in sorted(topology.links.items()):
        if a in index and b in index:
            i, j = index[a], index[b]
            latency[i, j], bandwidth[i, j], cost[i, j] = _figures(link)
    local = np.eye(fleet.size, dtype=bool)
    latency[local], bandwidth[local], cost[local] = 0.0, np.inf, 0.0
    return Links(latency_ms=frozen(latency), bandwidth=frozen(bandwidth), cost_per_gib=frozen(cost))


def _figures(link: Link) -> tuple[float, float, float]:
    return link.latency_ms, link.bandwidth, link.cost_per_gib


@dataclass(frozen=True, slots=True, kw_only=True)
class DataCosts:
    """The STCI matrices of one pass, one row per workload in scheduling order."""

    bytes_per_day: FloatArray
    egress_per_day: FloatArray
    transfer_seconds: FloatArray
    latency_ms: FloatArray
    uses_data: BoolArray
    """Rows of workloads that read or write any data set."""
    rate: FloatArray
    """Each workload's total data rate (bytes per day), local or not."""


def data_costs(
    fleet: Fleet,
    topology: Topology,
    datasets: Mapping[str, DataSet],
    accesses: Sequence[Sequence[DataAccess]],
) -> DataCosts:
    """The matrices for workloads that use `accesses[row]`, over `fleet`'s clusters."""
    names = sorted(datasets)
    column = {name: j for j, name in enumerate(names)}
    workloads = len(accesses)
    reads = np.zeros((workloads, len(names)))
    writes = np.zeros((workloads, len(names)))
    for row, declared in enumerate(accesses):
        for access in declared:
            if access.dataset in column:
                target = reads if access.access == READ else writes
                target[row, column[access.dataset]] += access.rate
    net = links(fleet, topology)
    near_read = _nearest(fleet, net, [datasets[n].holders for n in names])
    near_write = _nearest(fleet, net, [_primary(datasets[n]) for n in names])
    bytes_ = reads @ near_read.remote + writes @ near_write.remote
    egress = (reads @ near_read.cost + writes @ near_write.cost) / GIB
    seconds = reads @ near_read.seconds_per_byte + writes @ near_write.seconds_per_byte
    used = (reads + writes) > 0
    latency = np.zeros((workloads, fleet.size))
    for j in range(len(names)):  # one broadcast per data set, over its users only
        users = used[:, j].nonzero()[0]
        if users.size:
            worst = _worst(near_read, near_write, j, writes[users, j])
            latency[users] = np.maximum(latency[users], worst)
    return DataCosts(
        bytes_per_day=frozen(bytes_),
        egress_per_day=frozen(egress),
        transfer_seconds=frozen(seconds),
        latency_ms=frozen(latency),
        uses_data=frozen(np.asarray(used.any(axis=1), dtype=bool)),
        rate=frozen((reads + writes).sum(axis=1)),
    )


@dataclass(frozen=True, slots=True)
class _Nearest:
    """(data sets × clusters): reaching the nearest holder of each data set from each cluster."""

    remote: FloatArray
    """1 where the cluster holds no copy, else 0."""
    cost: FloatArray
    seconds_per_byte: FloatArray
    latency: FloatArray


def _primary(dataset: DataSet) -> tuple[str, ...]:
    return (dataset.primary,) if dataset.primary else dataset.holders


def _nearest(fleet: Fleet, net: Links, holders: Sequence[Sequence[str]]) -> _Nearest:
    index = fleet.index
    held = np.zeros((len(holders), fleet.size), dtype=bool)
    for j, names in enumerate(holders):
        rows = [index[n] for n in names if n in index]
        held[j, rows] = True
    nowhere = ~held.any(axis=1)  # a data set with no known copy costs nothing anywhere
    held[nowhere] = True
    mask = held[:, :, None]  # (data sets × holder × reader)
    cost = np.where(mask, net.cost_per_gib[None], np.inf).min(axis=1)
    bandwidth = np.where(mask, net.bandwidth[None], 0.0).max(axis=1)
    latency = np.where(mask, net.latency_ms[None], np.inf).min(axis=1)
    with np.errstate(divide="ignore"):
        seconds = np.where(bandwidth > 0, 1.0 / bandwidth, 0.0)
    return _Nearest(
        remote=(~held).astype(np.float64),
        cost=cost,
        seconds_per_byte=seconds,
        latency=latency,
    )


def _worst(read: _Nearest, write: _Nearest, j: int, writes: FloatArray) -> FloatArray:
    """Per user of data set j: the latency to it (to its primary for a writer)."""
    worst: FloatArray = np.where(
        writes[:, None] > 0, np.maximum(read.latency[j], write.latency[j]), read.latency[j]
    )
    return worst
