"""Schedule: decide, for every workload, which clusters run how many replicas.

`place` is a pure function of the spec and the previous decisions. Workloads are placed in a
fixed order (namespace, kind, name). For each one, the claiming policy (or the default policy
from dro.yaml) gives the placement; the framework's filters and scorers run over the whole
fleet at once; `division.assign` splits the replicas with Karmada's semantics.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reconciler import claims, demand
from reconciler.domain import (
    Decision,
    Diagnosis,
    Placed,
    Placement,
    PolicyRef,
    ResourceKey,
    Spec,
    Workload,
)
from reconciler.schedule import division, framework, plugins
from reconciler.schedule.fleet import BoolArray, Fleet

__all__ = ["division", "framework", "place", "plugins"]


def place(
    spec: Spec, previous: Mapping[ResourceKey, Decision] | None = None
) -> tuple[Decision, ...]:
    """One decision per workload of `spec`, in (namespace, kind, name) order."""
    fleet = Fleet(clusters=spec.clusters)
    previous = previous or {}
    decisions = []
    for workload in sorted(spec.workloads, key=lambda w: w.key.sort_key):
        claim = claims.claim(spec.placement_policies, workload)
        policy = claim.policy
        placement = policy.placement if policy else spec.config.default_placement
        ref = policy.ref if policy else None
        decisions.append(_decide(spec, fleet, workload, placement, ref, previous.get(workload.key)))
    return tuple(decisions)


def _target_mask(
    fleet: Fleet, placement: Placement, context: framework.Context, weights: Mapping[str, float]
) -> BoolArray | None:
    """For ordered `clusterAffinities`, the first term (with its overflow) that fits."""
    if not placement.affinity_terms:
        return None
    mask = np.zeros(fleet.size, dtype=bool)
    for term in placement.affinity_terms:
        mask = fleet.affinity_mask(term.affinity)
        for _, overflow in term.overflow:
            mask |= fleet.affinity_mask(overflow)
        trial = framework.Context(
            fleet=fleet,
            placement=placement,
            workload=context.workload,
            demand=context.demand,
            target_mask=mask,
        )
        if framework.run(trial, weights).feasible.any():
            return mask
    return mask


def _decide(
    spec: Spec,
    fleet: Fleet,
    workload: Workload,
    placement: Placement,
    ref: PolicyRef | None,
    before: Decision | None,
) -> Decision:
    weights = spec.config.plugin_weights
    context = framework.Context(
        fleet=fleet, placement=placement, workload=workload, demand=demand.per_replica(workload)
    )
    target = _target_mask(fleet, placement, context, weights)
    if target is not None:
        context = framework.Context(
            fleet=fleet,
            placement=placement,
            workload=workload,
            demand=context.demand,
            target_mask=target,
        )
    outcome = framework.run(context, weights)
    strategy = placement.replicas.strategy if workload.replicas is not None else "Duplicated"
    diagnosis = Diagnosis(
        verdicts=outcome.diagnosis.verdicts, weights=outcome.diagnosis.weights, strategy=strategy
    )

    def unschedulable(message: str) -> Decision:
        return Decision(
            key=workload.key,
            api_version=workload.api_version,
            policy=ref,
            clusters=(),
            unschedulable=message,
            diagnosis=diagnosis,
        )

    if outcome.fit_error is not None:
        return unschedulable(outcome.fit_error)
    rows = np.flatnonzero(outcome.feasible)
    # Karmada's candidate order: score descending, then name (available comes with capacity).
    ordered = sorted(rows, key=lambda i: (-outcome.total[i], str(fleet.names[i])))
    candidates = [str(fleet.names[i]) for i in ordered]
    if workload.replicas is None:
        return Decision(
            key=workload.key,
            api_version=workload.api_version,
            policy=ref,
            clusters=tuple(Placed(cluster=c, replicas=None) for c in sorted(candidates)),
            diagnosis=diagnosis,
        )
    try:
        split = division.assign(
            strategy,
            workload.replicas,
            candidates,
            static_weights=_static_weights(fleet, placement, outcome.feasible),
            available=_available(fleet, context.demand, outcome.feasible),
            previous={p.cluster: p.replicas or 0 for p in before.clusters} if before else None,
            uid=workload.uid,
        )
    except division.Unschedulable as error:
        return unschedulable(str(error))
    return Decision(
        key=workload.key,
        api_version=workload.api_version,
        policy=ref,
        clusters=tuple(Placed(cluster=c, replicas=n) for c, n in split.items()),
        diagnosis=diagnosis,
    )


def _static_weights(
    fleet: Fleet, placement: Placement, feasible: BoolArray
) -> list[tuple[str, int]]:
    """(cluster, weight) for every weight rule that matches a feasible cluster."""
    pairs: list[tuple[str, int]] = []
    for affinity, weight in placement.replicas.static_weights:
        matched = fleet.affinity_mask(affinity) & feasible
        pairs.extend((str(name), weight) for name in fleet.names[matched])
    return pairs


def _available(fleet: Fleet, need: Mapping[str, float], feasible: BoolArray) -> dict[str, int]:
    """Replicas each feasible cluster can still take, from declared capacity and allocation.

    Karmada's general estimator: the minimum over requested resources of
    floor((capacity - allocated) / request); a resource the cluster lacks gives 0.
    """
    free = np.maximum(fleet.capacity - fleet.allocated, 0.0)
    fit = np.full(fleet.size, np.iinfo(np.int32).max, dtype=np.int64)
    for resource, amount in need.items():
        if amount <= 0:
            continue
        if resource not in fleet.resources:
            if resource != "pods":
                fit[:] = 0
            continue
        column = free[:, fleet.resources.index(resource)]
        fit = np.minimum(fit, np.floor(column / amount).astype(np.int64))
    return {str(fleet.names[i]): int(fit[i]) for i in np.flatnonzero(feasible)}
