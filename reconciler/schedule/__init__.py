"""Schedule: decide, for every workload, which clusters run how many replicas.

`place` is a pure function of the spec, the previous decisions and the cluster observations.
The claiming policy (or dro.yaml's default placement) gives each workload its placement; the
capacity-independent work (demand, single-node fit) is done for all workloads at once in
`batch`; `engine.Pass` then places the workloads one by one in priority order, each consuming
the capacity the next one sees, with the filters and scorers of `plugins` and Karmada's
division (`division`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Collection, Iterator, Mapping

from reconciler import claims, demand
from reconciler.domain import Decision, Observation, ResourceKey, Spec
from reconciler.schedule import (
    batch,
    division,
    engine,
    facts,
    framework,
    plugins,
    rebalance,
    spread,
)
from reconciler.schedule.fleet import Fleet

__all__ = ["division", "engine", "framework", "place", "plugins", "spread", "still_filling"]

still_filling = rebalance.still_filling


def claimed_workloads(spec: Spec) -> list[facts.Claimed]:
    """Every workload with the placement that applies to it, in scheduling order."""
    result = []
    for workload in spec.workloads:
        if spec.claims is not None and workload.key in spec.claims:
            policy = spec.claims[workload.key]
        else:
            policy = claims.claim(spec.placement_policies, workload).policy
        result.append(
            facts.Claimed(
                workload=workload,
                placement=policy.placement if policy else spec.config.default_placement,
                ref=policy.ref if policy else None,
                priority=policy.priority if policy else 0,
                extensions=policy.dro_extensions if policy else True,
            )
        )
    result.sort(key=lambda c: (-c.priority, c.workload.key.sort_key))
    return result


def place(
    spec: Spec,
    previous: Mapping[ResourceKey, Decision] | None = None,
    observations: Mapping[str, Observation] | None = None,
    *,
    diagnose: bool = True,
    now: float = 0.0,
    filling: Collection[str] = (),
) -> tuple[Decision, ...]:
    """One decision per workload of `spec`, in (namespace, kind, name) order.

    `previous` holds the decisions of the last pass (from the output branch); `observations`
    the live resources per cluster, which replace the declared ones. `diagnose=False` skips
    the per-cluster verdicts, which large fleets do not need outside `dro explain`. `now`
    (seconds since the epoch) stamps moves and measures cooldowns. `filling` names the
    clusters that re-balancing fills (added or recovered; see `rebalance.still_filling`).
    """
    with _no_cyclic_gc():
        return _place(spec, previous, observations, diagnose=diagnose, now=now, filling=filling)


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
    now: float,
    filling: Collection[str],
) -> tuple[Decision, ...]:
    order = claimed_workloads(spec)
    demands = [demand.per_replica(c.workload) for c in order]
    fleet = Fleet(
        clusters=spec.clusters,
        observations=observations or {},
        extra_resources=sorted({r for d in demands for r in d}),
        now=now,
        failover_after=spec.config.rebalance.failover_after,
        unschedulable_after=spec.config.rebalance.unschedulable_after,
    )
    matrix = batch.demand_matrix(fleet, demands)
    fits = batch.node_fit(fleet, matrix)
    scales = batch.inverse(matrix)
    run = engine.Pass(
        fleet, spec.config, previous or {}, diagnose=diagnose, now=now, filling=filling
    )
    decisions = [run.decide(c, matrix[i], scales[i], fits[i]) for i, c in enumerate(order)]
    decisions = rebalance.run(run, order, decisions, matrix, scales, fits)
    return tuple(sorted(decisions, key=lambda d: d.key.sort_key))
