"""Prices: what a replica costs per hour on each cluster, and what a placement costs.

`Cluster.spec.cost` prices resources per hour: a resource counted in bytes (memory,
ephemeral-storage, storage, hugepages-*) per GiB-hour, any other (cpu, nvidia.com/gpu, …) per
unit-hour, e.g. `{cpu: 0.031, memory: 0.004}` is 0.031 per core-hour and 0.004 per GiB-hour.
A cluster with a `cost` charges the resources it lists and nothing for the others (pods are
part of the node); a cluster without any `cost` is unpriced: its replicas cost an unknown
amount, NaN here, never 0, so an unpriced cluster never looks free.

- `prices(fleet)`: (resources × clusters) price per base unit-hour (per core, per byte),
  `table` over the fleet;
- `per_replica_hour(fleet, demand, …)`: one replica's cost per hour on each cluster, Σ_r
  request_r × price_r, plus its share of the workload's data egress (STCI's egress price per
  day on that cluster, over 24 hours and the workload's replicas);
- `cost_per_hour(fleet, demand, counts, …)`: replicas per cluster × that, the cost per hour
  of one decision (priced clusters only; `unpriced` says how many replicas were left out);
- `priced(fleet, demands, decisions, …)`: every decision of a pass with its cost per hour,
  counting what runs (retiring copies included, an override's count where one applies).

`table(clusters, resources)` is the price table itself, which `dro simulate` prices each step
with. Pure numpy over clusters.

Called by `schedule`, `schedule.economy`, `schedule.plugins.cost` and `simulate.seams`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from reconciler.domain import Cluster, ClusterVerdict, Decision, ResourceKey
from reconciler.kube import quantity
from reconciler.schedule.fleet import Fleet, FloatArray, IntArray, frozen

GIB = float(2**30)
HOURS_PER_DAY = 24.0
DIGITS = 4
"""Costs are rounded to this many decimal places where they are recorded."""


_MEMO = "_pricing_prices"


def unit_price(resource: str, price: float) -> float:
    """The price per base unit-hour of `resource` (per byte for memory-like resources,
    which are priced per GiB-hour; per unit otherwise)."""
    return price / GIB if quantity.in_bytes(resource) else price


def table(clusters: Sequence[Cluster], resources: Sequence[str]) -> FloatArray:
    """(resources × clusters) price per base unit-hour, in the order given: 0 for a resource
    a priced cluster does not list, NaN in every row of an unpriced cluster (`dro simulate`
    prices its steps with this too)."""
    result = np.zeros((len(resources), len(clusters)), dtype=np.float64)
    for i, cluster in enumerate(clusters):
        if not cluster.cost:
            result[:, i] = np.nan
            continue
        for j, resource in enumerate(resources):
            price = cluster.cost.get(resource)
            if price is not None:
                result[j, i] = unit_price(resource, float(price))
    return result


def prices(fleet: Fleet) -> FloatArray:
    """`table` over the fleet's clusters and resources. Memoised on the fleet."""
    cached: FloatArray | None = fleet.__dict__.get(_MEMO)  # as a cached_property keeps it
    if cached is not None:
        return cached
    found = frozen(table(fleet.clusters, fleet.resources))
    fleet.__dict__[_MEMO] = found
    return found


def per_replica_hour(
    fleet: Fleet,
    demand: FloatArray,
    *,
    egress_per_day: FloatArray | None = None,
    replicas: int | None = None,
) -> FloatArray:
    """One replica's cost per hour on each cluster (NaN where unpriced): its requests
    (`demand`, per replica over `fleet.resources`) at the cluster's prices, plus, for a
    workload that uses data, its share of the workload's egress price per day on that cluster
    (`egress_per_day`, STCI), spread over 24 hours and its `replicas`."""
    if not fleet.resources:
        return np.full(fleet.size, np.nan)
    compute: FloatArray = demand @ prices(fleet)
    if egress_per_day is not None:
        share = max(1, replicas or 1)
        finite = np.where(np.isfinite(egress_per_day), egress_per_day, 0.0)
        compute = compute + finite / (HOURS_PER_DAY * share)
    return compute


@dataclass(frozen=True, slots=True)
class Cost:
    """The cost per hour of replicas spread over clusters."""

    per_hour: float
    """Over the priced clusters."""
    unpriced: int
    """Replicas on clusters without a price, left out of `per_hour`."""


def cost_per_hour(
    fleet: Fleet,
    demand: FloatArray,
    counts: IntArray,
    *,
    egress_per_day: FloatArray | None = None,
    replicas: int | None = None,
) -> Cost:
    """The cost per hour of `counts` replicas per cluster (a decision) of a workload whose
    replicas request `demand`; see `per_replica_hour` for the egress share."""
    each = per_replica_hour(
        fleet, demand, egress_per_day=egress_per_day, replicas=replicas or int(counts.sum())
    )
    known = ~np.isnan(each)
    total = float(np.dot(counts[known], each[known])) if known.any() else 0.0
    return Cost(per_hour=total, unpriced=int(counts[~known].sum()))


def priced(
    fleet: Fleet,
    keys: Sequence[ResourceKey],
    demands: FloatArray,
    decisions: Sequence[Decision],
    *,
    egress: Mapping[ResourceKey, FloatArray] | None = None,
) -> list[Decision]:
    """The decisions with `cost_per_hour` and `unpriced` filled in, and each feasible
    verdict's cost per replica-hour when the decision explains itself. `keys[i]` has the
    per-replica demand `demands[i]`; `egress` gives, for the workloads that use data, STCI's
    egress price per day on each cluster. What runs is counted: the target plus retiring copies,
    an override's `spec.replicas` where one applies. Objects without replicas, workloads not
    in `keys`, and every decision when no cluster declares a price, are left as they are.
    Numpy over each decision's clusters only."""
    table = prices(fleet)
    if not table.size or np.isnan(table[0]).all():
        return list(decisions)  # no cluster declares a price: no cost to record
    row_of = {key: i for i, key in enumerate(keys)}
    index = fleet.index
    result = []
    for decided in decisions:
        row = row_of.get(decided.key)
        runs = decided.rendered()
        if row is None or not runs or runs[0].replicas is None:
            result.append(decided)
            continue
        effective = decided.effective
        placed = [(index[p.cluster], p) for p in runs if p.cluster in index]
        rows = np.array([r for r, _ in placed], dtype=np.int64)
        counts = np.array(
            [effective.get(p.cluster, p.replicas or 0) for _, p in placed], dtype=np.float64
        )
        data = (egress or {}).get(decided.key)
        replicas = max(1, sum(p.replicas or 0 for p in decided.clusters))
        each = demands[row] @ table[:, rows] if len(rows) else np.zeros(0)
        if data is not None:
            each = each + np.where(np.isfinite(data[rows]), data[rows], 0.0) / (
                HOURS_PER_DAY * replicas
            )
        known = ~np.isnan(each)
        total = float(np.dot(counts[known], each[known]))
        unpriced = int(counts[~known].sum())
        everywhere_unknown = unpriced > 0 and not (counts[known] > 0).any()
        priced_one = replace(
            decided,
            cost_per_hour=None if everywhere_unknown else round(total, DIGITS),
            unpriced=unpriced,
        )
        if priced_one.diagnosis.verdicts:
            costs = _Costs(fleet, demands[row].copy(), data, replicas)
            verdicts = priced_one.diagnosis.verdicts.mapped(costs.verdict)
            priced_one = replace(
                priced_one, diagnosis=replace(decided.diagnosis, verdicts=verdicts)
            )
        result.append(priced_one)
    return result


class _Costs:
    """One workload's cost per replica-hour on each cluster, computed on the first verdict
    that asks (the verdicts are built only when read)."""

    __slots__ = ("_demand", "_each", "_egress", "_fleet", "_replicas")

    def __init__(
        self, fleet: Fleet, demand: FloatArray, egress: FloatArray | None, replicas: int
    ) -> None:
        self._fleet = fleet
        self._demand = demand
        self._egress = egress
        self._replicas = replicas
        self._each: FloatArray | None = None

    def verdict(self, verdict: ClusterVerdict) -> ClusterVerdict:
        """A feasible verdict with its cost per replica-hour (None: unpriced or rejected)."""
        if verdict.rejected_by is not None:
            return replace(verdict, cost_per_replica_hour=None)
        if self._each is None:
            self._each = per_replica_hour(
                self._fleet, self._demand, egress_per_day=self._egress, replicas=self._replicas
            )
        index = self._fleet.index.get(verdict.cluster)
        value = float(self._each[index]) if index is not None else math.nan
        return replace(
            verdict, cost_per_replica_hour=None if math.isnan(value) else round(value, 6)
        )
