"""What a pass knows about each placement and workload, memoised for the pass.

`Claimed` pairs a workload with the placement that applies to it. `Facts` answers, once per
placement (one typed memo per answer, keyed by the placement's `memo.Ref`), its RWL limits,
the clusters its targets (or an affinity term) select, its static weights and its capacity
ceiling; and, against the live usage ledger, a workload's headroom and how many replicas each
cluster can still take (Karmada's AllocatableReplicas). It builds the `framework.Subject` the
filters and scorers see, with the pass's `memo.Memos`.

Called by 13 modules, among them `schedule`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from reconciler.domain import Placement, PolicyRef, ResourceKey, SchedulerConfig, Strategy, Workload
from reconciler.schedule import division, framework, stci, triggers
from reconciler.schedule.fleet import (
    BoolArray,
    Fleet,
    FloatArray,
    IntArray,
    frozen,
    rows_of,
    some,
)
from reconciler.schedule.memo import Memos, Ref, ref


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed:
    """A workload with the placement that applies to it."""

    workload: Workload
    placement: Placement
    ref: PolicyRef | None
    priority: int
    extensions: bool
    replicas_overridden: bool = False
    """An override sets its `spec.replicas` on some cluster (`reconciler.render.overridden`)."""
    movable: bool = field(init=False)
    """Re-balancing may move its replicas: a stateless DynamicWeight or Aggregated workload
    under dro's policies (or a Karmada policy that opts in), whose `spec.replicas` no
    override sets: there, moving divided replicas would not change what runs."""

    @property
    def strategy(self) -> Strategy:
        """How its replicas are divided; objects without replicas go everywhere they are
        placed, like Duplicated."""
        replicas = self.workload.replicas
        return self.placement.replicas.strategy if replicas is not None else Strategy.DUPLICATED

    def __post_init__(self) -> None:
        strategy = self.placement.replicas.strategy
        movable = triggers.is_movable(self.extensions, strategy, self.workload)
        movable = movable and not self.replicas_overridden
        object.__setattr__(self, "movable", movable)


def heat(config: SchedulerConfig, load: float) -> float:
    """How hot the fleet is for the automatic weights: s = clip((load − low) / (high − low),
    0, 1) with `scoring.lowWaterLevel` and `highWaterLevel`; 0 when `scoring.adaptive` is off
    (the base weights then stand, and cost counts as on a cool fleet)."""
    scoring = config.scoring
    if not scoring.adaptive:
        return 0.0
    low, high = scoring.low_water_level, scoring.high_water_level
    if high > low:
        return min(1.0, max(0.0, (load - low) / (high - low)))
    return 1.0 if load >= high else 0.0


def effective_weights(config: SchedulerConfig, load: float) -> dict[str, float]:
    """Scorer weights for this pass: the base weights, adjusted for the fleet's load.

    With s = `heat(config, load)`, Balance is multiplied by (0.5 + s), Availability by
    (1.5 − s) and Cost by 2 × (1 − s): a loaded fleet spreads, an idle fleet aggregates on the
    cheapest clusters. Each counts its base weight at s = 0.5; Cost counts nothing at s = 1.
    """
    weights = framework.default_weights()
    weights.update(config.plugin_weights)
    if config.scoring.adaptive:
        s = heat(config, load)
        weights["Balance"] = weights.get("Balance", 1.0) * (0.5 + s)
        weights["Availability"] = weights.get("Availability", 1.0) * (1.5 - s)
        weights["Cost"] = weights.get("Cost", 1.0) * 2.0 * (1.0 - s)
    return {name: round(float(value), 4) for name, value in sorted(weights.items())}


class Facts:
    """The per-pass memo, keyed by placement, over the pass's usage ledger."""

    def __init__(
        self,
        fleet: Fleet,
        config: SchedulerConfig,
        usage: FloatArray,
        data: stci.DataCosts | None = None,
        rows: Mapping[ResourceKey, int] | None = None,
    ) -> None:
        self.fleet = fleet
        self.config = config
        self.usage = usage
        self.data = data
        self.rows = rows or {}
        self._data_rows: dict[ResourceKey, framework.DataRow | None] = {}
        """Workload key → its row in `data`."""
        self.memos = Memos()
        """The memos the framework and the plugins keep for the pass (`Subject.memos`)."""
        self._limits: dict[tuple[Ref, bool], FloatArray] = {}
        """(placement, extensions) → its RWL limit per resource."""
        self._targets: dict[tuple[Ref, int | None], tuple[BoolArray, IntArray]] = {}
        """(placement, affinity term) → the clusters it selects, and their overflow tiers."""
        self._tiered: dict[Ref, tuple[IntArray, bool]] = {}
        """A tiers array → (the array, held so its identity stays its own; has tiers)."""
        self._static: dict[Ref, IntArray | None] = {}
        """Placement → each cluster's largest static weight (None: it lists none)."""
        self._ceilings: dict[Ref, FloatArray] = {}
        """A limit array of `_limits` → capacity × limit."""
        self._any_cordoned = some(fleet.cordoned)
        self._requested: dict[bytes, IntArray] = {}
        self._nothing = frozen(np.zeros(fleet.size, dtype=np.int64))
        self._nowhere = frozen(np.zeros(fleet.size, dtype=bool))

    def limit(self, claimed: Claimed) -> FloatArray:
        """The RWL limit per resource that applies to this workload; 1 where none does."""
        key = (ref(claimed.placement), claimed.extensions)
        found = self._limits.get(key)
        if found is None:
            limits = np.ones(len(self.fleet.resources), dtype=np.float64)
            if claimed.extensions:
                for j, resource in enumerate(self.fleet.resources):
                    value = claimed.placement.water_level_limit.get(
                        resource, self.config.water_level_limit.get(resource, 1.0)
                    )
                    limits[j] = float(value)
            found = self._limits[key] = limits
        return found

    def target(self, placement: Placement, term: int | None) -> tuple[BoolArray, IntArray]:
        """Clusters the targets (or one affinity term with its overflow) select, and tiers."""
        key = (ref(placement), term)
        found = self._targets.get(key)
        if found is None:
            fleet = self.fleet
            tiers = np.zeros(fleet.size, dtype=np.int64)
            if term is None:
                mask = fleet.any_affinity(placement.targets)
            else:
                chosen = placement.affinity_terms[term]
                mask = fleet.affinity_mask(chosen.affinity) & fleet.any_affinity(placement.targets)
                for tier, (_, overflow) in enumerate(chosen.overflow, start=1):
                    extra = fleet.affinity_mask(overflow) & ~mask
                    tiers[extra] = tier
                    mask = mask | extra
            found = self._targets[key] = (mask, tiers)
        return found

    def tiered(self, tiers: IntArray) -> bool:
        """Whether a `target` tiers array has overflow tiers at all; memoised per array."""
        key = ref(tiers)
        found = self._tiered.get(key)
        if found is None:
            found = self._tiered[key] = (tiers, some(tiers))
        return found[1]

    def static(self, placement: Placement) -> IntArray | None:
        """Each cluster's largest matching static weight; None when the policy lists none."""
        key = ref(placement)
        if key not in self._static:
            rules = placement.replicas.static_weights
            weights = None
            if rules:
                weights = np.zeros(self.fleet.size, dtype=np.int64)
                for affinity, weight in rules:
                    matched = self.fleet.affinity_mask(affinity)
                    weights[matched] = np.maximum(weights[matched], weight)
            self._static[key] = weights
        return self._static[key]

    def requested(self, demand: FloatArray) -> IntArray:
        """Indices of the resources one replica requests; memoised per distinct demand."""
        key = demand.tobytes()
        found: IntArray | None = self._requested.get(key)
        if found is None:
            found = self._requested[key] = frozen(rows_of(demand > 0))
        return found

    def ceiling(self, limit: FloatArray) -> FloatArray:
        """(resources × clusters) capacity × RWL limit; unbounded resources stay inf."""
        key = ref(limit)
        found = self._ceilings.get(key)
        if found is None:
            found = self._ceilings[key] = self.fleet.capacity_by_resource * limit[:, np.newaxis]
        return found

    def room(
        self, scale: FloatArray, requested: IntArray, limit: FloatArray, replicas: int
    ) -> tuple[FloatArray, IntArray]:
        """Headroom per resource, and the replicas each cluster can still take within its
        limit (Karmada's estimator). `scale` is 1/demand per resource, NaN where the workload
        requests none, so `fmin` skips those resources."""
        fleet = self.fleet
        headroom: FloatArray = self.ceiling(limit) - self.usage
        if not len(requested):
            allocatable = np.full(fleet.size, division.MAX_REPLICAS, dtype=np.int64)
        else:
            # the resources it requests alone bound it (`scale` is NaN at the others)
            fit = np.fmin.reduce(headroom[requested] * scale[requested, np.newaxis], axis=0)
            fit += 1e-9
            np.floor(fit, out=fit)
            np.maximum(fit, 0.0, out=fit)
            np.minimum(fit, float(division.MAX_REPLICAS), out=fit)
            allocatable = fit.astype(np.int64)
        if self._any_cordoned:
            allocatable[fleet.cordoned] = 0
        allocatable[allocatable >= division.MAX_REPLICAS] = replicas
        return headroom, allocatable

    def newcomer(
        self,
        claimed: Claimed,
        demand: FloatArray,
        scale: FloatArray,
        node_fit: BoolArray,
        term: str | None,
    ) -> framework.Subject:
        """The workload as the filters see a new replica of it now: no holders, the current
        ledger. Re-balancing uses it to find where moved replicas may go. Its `previous` and
        `holders` are shared read-only arrays."""
        names = [t.name for t in claimed.placement.affinity_terms]
        index = names.index(term) if term in names else (0 if names else None)
        target = self.target(claimed.placement, index)[0]
        return self.subject(claimed, demand, scale, node_fit, self._nothing, self._nowhere, target)

    def subject(
        self,
        claimed: Claimed,
        demand: FloatArray,
        scale: FloatArray,
        node_fit: BoolArray,
        previous: IntArray,
        holders: BoolArray,
        target: BoolArray,
    ) -> framework.Subject:
        """The workload at its turn, as the filters see it on the `target` clusters."""
        replicas = claimed.workload.replicas
        limit = self.limit(claimed)
        requested = self.requested(demand)
        headroom, allocatable = self.room(scale, requested, limit, replicas or 0)
        return framework.Subject(
            workload=claimed.workload,
            placement=claimed.placement,
            extensions=claimed.extensions,
            movable=claimed.movable,
            strategy=claimed.strategy,
            replicas=replicas,
            demand=demand,
            requested=requested,
            limit=limit,
            target=target,
            holders=holders,
            previous=previous,
            usage=self.usage,
            headroom=headroom,
            allocatable=allocatable,
            node_fit=node_fit,
            memos=self.memos,
            data=self.data_row(claimed.workload.key),
        )

    def data_row(self, key: ResourceKey) -> framework.DataRow | None:
        """The workload's STCI row, or None when it uses no data set; built once per pass
        (the express lane, the subject and the recorded weights all ask for it)."""
        if key not in self._data_rows:
            self._data_rows[key] = self._build_data_row(key)
        return self._data_rows[key]

    def _build_data_row(self, key: ResourceKey) -> framework.DataRow | None:
        row = self.rows.get(key)
        data = self.data
        if data is None or row is None or not data.uses_data[row]:
            return None
        return framework.DataRow(
            bytes_per_day=data.bytes_per_day[row],
            egress_per_day=data.egress_per_day[row],
            transfer_seconds=data.transfer_seconds[row],
            latency_ms=data.latency_ms[row],
            rate=float(data.rate[row]),
        )
