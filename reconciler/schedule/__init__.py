"""Schedule: decide, for every workload, which clusters run how many replicas.

`place` is a pure function of the spec, the previous decisions and the cluster observations.
The claiming policy (or dro.yaml's default placement) gives each workload its placement; the
capacity-independent work (demand, single-node fit) is done for all workloads at once in
`batch`; `engine.Pass` then places the workloads one by one in priority order, each consuming
the capacity the next one sees, with the filters and scorers of `plugins` and Karmada's
division (`division`).

Called by `pipeline`, `pipeline.warm` and `simulate.replay`.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from reconciler.domain import Decision, Observation, ResourceKey, Spec, claims, durations
from reconciler.domain.data import DataAccess
from reconciler.domain.forecast import Forecasts
from reconciler.kube import demand
from reconciler.render import overridden
from reconciler.schedule import (
    batch,
    bundle,
    disruption,
    division,
    engine,
    facts,
    foresight,
    framework,
    moving,
    plugins,
    pricing,
    rebalance,
    reuse,
    spread,
    standing,
    stci,
)
from reconciler.schedule.fleet import Fleet

__all__ = [
    "Placement",
    "division",
    "engine",
    "framework",
    "place",
    "place_and_project",
    "plugins",
    "pricing",
    "reuse",
    "spread",
    "still_filling",
]

still_filling = rebalance.still_filling


def claimed_workloads(
    spec: Spec, replicas: overridden.Replicas | None = None, memo: reuse.Memo | None = None
) -> list[facts.Claimed]:
    """Every workload with the placement that applies to it, in scheduling order; with a
    `memo`, an unchanged one is the very object of the last pass (`reuse.Memo.claimed`)."""
    replicas = replicas or overridden.Replicas(spec)
    reaching = replicas.reaching
    result = []
    for workload in spec.workloads:
        if spec.claims is not None and workload.key in spec.claims:
            policy = spec.claims[workload.key]
        else:
            policy = claims.claim(spec.placement_policies, workload).policy
        placement = policy.placement if policy else spec.config.default_placement
        ref = policy.ref if policy else None
        priority = policy.priority if policy else 0
        extensions = policy.dro_extensions if policy else True
        touched = reaching and replicas.touched(workload.key)
        if memo is not None:
            last = memo.unchanged(workload, placement, ref, priority, extensions, touched)
            if last is not None:
                result.append(last)
                continue
        claimed = facts.Claimed(
            workload=workload,
            placement=placement,
            ref=ref,
            priority=priority,
            extensions=extensions,
            replicas_overridden=touched,
        )
        result.append(claimed if memo is None else memo.claimed(claimed))
    same = (tuple(c.workload.key for c in result), tuple(c.priority for c in result))
    return (reuse.Sorting() if memo is None else memo.by_priority).sort(result, same, _by_priority)


def _by_priority(claimed: facts.Claimed) -> tuple[int, tuple[str, str, str, str]]:
    """The scheduling order: higher priority first, then (namespace, kind, name, group)."""
    return (-claimed.priority, claimed.workload.key.sort_key)


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """A pass's decisions and the water levels they leave each cluster at."""

    decisions: tuple[Decision, ...]
    water_levels: Mapping[str, Mapping[str, float]]
    """Cluster → resource → projected RWL: the pass's usage ledger (observed or declared
    usage plus the net change of its placements) over capacity, rounded to 4 places.
    Resources without a finite, positive capacity are left out; levels stop at 0."""
    forecasts: Forecasts = field(default_factory=dict)
    """The forecasts the pass scheduled with (empty with prediction off)."""


def data_access(spec: Spec, claimed: facts.Claimed) -> tuple[DataAccess, ...]:
    """What a workload reads and writes: its policy's `placement.data`, then its own
    `multicluster.io/data` annotation (which wins for a data set both name)."""
    own = spec.data_access.get(claimed.workload.key, ())
    if not own:
        return tuple(claimed.placement.data)
    named = {a.dataset for a in own}
    return tuple(a for a in claimed.placement.data if a.dataset not in named) + own


def place(
    spec: Spec,
    previous: Mapping[ResourceKey, Decision] | None = None,
    observations: Mapping[str, Observation] | None = None,
    *,
    diagnose: bool = True,
    now: float = 0.0,
    filling: Collection[str] = (),
    forecasts: Forecasts | None = None,
    explained: Callable[[ResourceKey], bool] | None = None,
) -> tuple[Decision, ...]:
    """One decision per workload of `spec`, in (namespace, kind, name) order.

    `previous` holds the decisions of the last pass (from the output branch); `observations`
    the live resources per cluster, which replace the declared ones. `diagnose=False` skips
    the per-cluster verdicts, which large fleets do not need outside `dro explain`. `now`
    (seconds since the epoch) stamps moves and measures cooldowns. `filling` names the
    clusters that re-balancing fills (added or recovered; see `rebalance.still_filling`).
    `forecasts` (prediction on) make every stage see each cluster's forecast usage where it
    is higher than now (`foresight`); None or empty schedules on the usage now. A decision
    keeps the verdicts its file lists (`keptverdicts`); those of the workloads `explained`
    selects keep every cluster's (`dro explain`).
    """
    return place_and_project(
        spec,
        previous,
        observations,
        diagnose=diagnose,
        now=now,
        filling=filling,
        forecasts=forecasts,
        explained=explained,
    ).decisions


def place_and_project(
    spec: Spec,
    previous: Mapping[ResourceKey, Decision] | None = None,
    observations: Mapping[str, Observation] | None = None,
    *,
    diagnose: bool = True,
    standing_verdicts: bool = True,
    now: float = 0.0,
    filling: Collection[str] = (),
    forecasts: Forecasts | None = None,
    explained: Callable[[ResourceKey], bool] | None = None,
    memo: reuse.Memo | None = None,
) -> Placement:
    """`place`, with the water levels its decisions leave each cluster at (`dro plan`).
    `standing_verdicts=False` lets a placement that stands keep the diagnosis recorded when
    it was made, instead of scoring every cluster again for it: what a pass writes, since an
    unchanged placement's file keeps that diagnosis anyway (`record`). `memo` holds the last
    pass's turns (`dro run`): a workload whose turn would go as it went is not decided again
    (`reuse`)."""
    with _no_cyclic_gc():
        return _place(
            spec,
            previous,
            observations,
            diagnose=diagnose,
            standing_verdicts=standing_verdicts,
            now=now,
            filling=filling,
            forecasts=forecasts or {},
            explained=explained,
            memo=memo,
        )


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for one pass. A pass allocates many small objects
    and no reference cycles, and each collection would walk the whole parsed spec; reference
    counting frees everything as usual, and the collector resumes (as it was) afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _place(
    spec: Spec,
    previous: Mapping[ResourceKey, Decision] | None,
    observations: Mapping[str, Observation] | None,
    *,
    diagnose: bool,
    standing_verdicts: bool,
    now: float,
    filling: Collection[str],
    forecasts: Forecasts,
    explained: Callable[[ResourceKey], bool] | None = None,
    memo: reuse.Memo | None = None,
) -> Placement:
    replicas = overridden.Replicas(spec)
    reusing = memo is not None and not forecasts and explained is None
    kept = memo if reusing else None
    order = claimed_workloads(spec, replicas, kept)
    demands = [demand.per_replica(c.workload) if kept is None else kept.demand(c) for c in order]
    fleet = Fleet(
        clusters=spec.clusters,
        observations=observations or {},
        extra_resources=sorted(set().union(*demands)),
        now=now,
        failover_after=spec.config.rebalance.failover_after,
        unschedulable_after=spec.config.rebalance.unschedulable_after,
    )
    last = None if kept is None else kept.rows
    matrix = batch.demand_matrix(fleet, demands, last)
    fits = batch.node_fit(fleet, matrix, last)
    scales = batch.inverse(matrix)
    accesses = [data_access(spec, c) for c in order]
    data = stci.data_costs(fleet, spec.links, spec.data_sets, accesses) if any(accesses) else None
    turns = None
    if kept is not None:
        whole = _whole(spec, observations, fleet, filling, accesses, (diagnose, standing_verdicts))
        turns = kept.begin(whole)
    standing_previous, set_aside = standing.vet(
        spec.clusters, order, previous or {}, None if kept is None else kept.vetted
    )
    rows = {c.workload.key: i for i, c in enumerate(order)}
    seen = foresight.build(fleet, forecasts, standing_previous, rows, matrix) if forecasts else None
    run = (engine.Pass if kept is None else reuse.Recording)(
        fleet,
        spec.config,
        standing_previous,
        diagnose=diagnose,
        standing_verdicts=standing_verdicts,
        now=now,
        filling=filling,
        data=data,
        rows=rows,
        hooks=spec.sync_hooks,
        replicas=replicas,
        foresight=seen,
        explained=explained,
    )
    if kept is not None and turns is not None and isinstance(run, reuse.Recording):
        decisions = reuse.decide_all(run, turns, order, (matrix, scales, fits), accesses, kept)
    else:
        decisions = [run.decide(c, matrix[i], scales[i], fits[i]) for i, c in enumerate(order)]
    budgets = disruption.Tracker(
        spec.config, order, decisions, standing_previous, fleet.observations, run.steps
    )
    decisions = rebalance.run(run, order, decisions, matrix, scales, fits, budgets)
    decisions = budgets.annotate(decisions, durations.rfc3339(now))
    decisions = moving.place_hooks(spec.sync_hooks, decisions)
    decisions = bundle.follow(spec.dependents, order, decisions)
    decisions = standing.explain(decisions, set_aside)
    decisions = overridden.annotate(replicas, decisions)
    decisions = pricing.priced(
        fleet, [c.workload.key for c in order], matrix, decisions, egress=_egress(order, data)
    )
    by_key = reuse.Sorting() if kept is None else kept.by_key
    in_order = by_key.sort(decisions, tuple(d.key for d in decisions), lambda d: d.key.sort_key)
    return Placement(
        decisions=tuple(in_order),
        forecasts=forecasts,
        water_levels=_levels(
            fleet, run.usage if seen is None else run.usage - seen.base + seen.now
        ),
    )


def _whole(
    spec: Spec,
    observations: Mapping[str, Observation] | None,
    fleet: Fleet,
    filling: Collection[str],
    accesses: list[tuple[DataAccess, ...]],
    flags: tuple[bool, bool],
) -> tuple[object, ...]:
    """What every workload's turn reads alike (`reuse.Memo.begin`): when any of it changes,
    no turn of the last pass is reused. The observations count without the time they were
    made at, which no turn reads: an online pass on clusters as they were reuses turns too."""
    return (
        spec.config,
        spec.clusters,
        spec.override_policies,
        spec.links,
        dict(spec.data_sets),
        dict(spec.sync_hooks),
        {name: replace(seen, observed_at=None) for name, seen in (observations or {}).items()},
        tuple(fleet.resources),
        frozenset(filling),
        tuple(accesses) if any(accesses) else (),
        flags,
    )


def _egress(
    order: list[facts.Claimed], data: stci.DataCosts | None
) -> dict[ResourceKey, np.ndarray]:
    """The STCI egress price per day on each cluster of the workloads that use data."""
    if data is None:
        return {}
    rows = np.flatnonzero(data.uses_data).tolist()
    return {order[i].workload.key: data.egress_per_day[i] for i in rows}


def _levels(fleet: Fleet, usage: np.ndarray) -> dict[str, dict[str, float]]:
    """Cluster → resource → usage / capacity, for finite positive capacities."""
    capacity = fleet.capacity_by_resource
    bounded = np.isfinite(capacity) & (capacity > 0)
    levels = np.divide(usage, capacity, out=np.zeros_like(usage), where=bounded)
    # declared usage that leaves out replicas dro placed before would go below 0 as they move
    levels = np.round(np.maximum(levels, 0.0), 4)
    return {
        name: {r: float(levels[j, i]) for j, r in enumerate(fleet.resources) if bounded[j, i]}
        for i, name in enumerate(fleet.name_list)
    }
