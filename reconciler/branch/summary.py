"""The documents dro writes beside the manifests: decisions, kustomizations, status, README.

`decision_entry` is the single shape of a decision in `dro schedule -o json` and in the
`status` of every `decisions/` file. The generated README carries no sha and no time, so an
unchanged placement renders the same bytes.

Called by `branch.statefiles`, `cli`, `cli.report`, `render`, `render.shared` and
`render.warmtree`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.branch import overview, phases, rollouts
from reconciler.branch import status as observed
from reconciler.domain import (
    DRO_API_VERSION,
    LISTED_OTHERS,
    Cluster,
    ClusterVerdict,
    Decision,
    Disruption,
    DisruptionBudget,
    Listing,
    Manifest,
    Move,
    MoveReason,
    Placed,
    PolicyRef,
    ResourceKey,
    Spec,
    Waiting,
    durations,
    group_of,
)
from reconciler.domain.forecast import ClusterForecast
from reconciler.kube import quantity


def decision_entry(decision: Decision) -> dict[str, Any]:
    """One decision as pinned: resource, policy (null for the default), clusters, unschedulable
    (and `overLimit`, `pending` when a partial placement has them).

    A cluster's `replicas` is the division's count (what the next pass divides from, summing
    to the workload's replicas); where an override of `spec.replicas` makes the cluster run
    another count, the entry adds `effectiveReplicas`, the count in its rendered manifest."""
    key = decision.key
    policy = decision.policy
    return {
        "resource": {
            "apiVersion": decision.api_version,
            "kind": key.kind,
            "namespace": key.namespace,
            "name": key.name,
        },
        "policy": None
        if policy is None
        else {"kind": policy.kind, "namespace": policy.namespace, "name": policy.name},
        "clusters": [
            _with_effective({"name": p.cluster, "replicas": p.replicas}, decision)
            for p in sorted(decision.clusters, key=lambda p: p.cluster)
        ],
        "unschedulable": decision.unschedulable,
        **_shortfall(decision),
    }


def _shortfall(decision: Decision) -> dict[str, Any]:
    """`overLimit` (replicas past a water-level limit, per cluster) and `pending` (replicas
    that fit nowhere), each only when there are any."""
    found: dict[str, Any] = {}
    if decision.over_limit:
        found["overLimit"] = [
            {"cluster": p.cluster, "replicas": p.replicas} for p in decision.over_limit
        ]
    if decision.pending:
        found["pending"] = decision.pending
    return found


def _with_effective(entry: dict[str, Any], decision: Decision) -> dict[str, Any]:
    """A `clusters` or `retiring` entry, with `effectiveReplicas` where an override of
    `spec.replicas` makes the cluster run another count than the division's `replicas`."""
    runs = decision.effective.get(entry["name"])
    return entry if runs is None else {**entry, "effectiveReplicas": runs}


def diagnosis_document(decision: Decision, *, every: bool = False) -> dict[str, Any]:
    """The why of a decision: strategy, trigger, weights and the clusters' verdicts.

    A decision file lists every selected cluster, then at most `LISTED_OTHERS` others (the
    feasible ones by score, best first, then the rejected ones by name), and counts those left
    out in `omitted` (`feasible`, and `rejectedBy` per filter), as KubeFleet bounds a
    scheduling snapshot's decisions; `every` lists one entry per cluster (`dro explain`)."""
    verdicts = decision.diagnosis.verdicts
    if every:
        listing = Listing(verdicts.every())
    else:
        listing = verdicts.listed(frozenset(p.cluster for p in decision.clusters))
    entries = [_verdict_entry(verdict) for verdict in listing.verdicts]
    diagnosis = decision.diagnosis
    document: dict[str, Any] = {
        "strategy": diagnosis.strategy.value,
        "trigger": diagnosis.trigger.text,
        "fleetWaterLevel": diagnosis.fleet_water_level,
        "weights": dict(diagnosis.weights),
        "clusters": entries,
    }
    if listing.omitted:
        omitted: dict[str, Any] = {}
        if listing.omitted_feasible:
            omitted["feasible"] = listing.omitted_feasible
        if listing.omitted_rejected:
            omitted["rejectedBy"] = dict(listing.omitted_rejected)
        document["omitted"] = omitted
    return document


def _verdict_entry(verdict: ClusterVerdict) -> dict[str, Any]:
    """One cluster of a diagnosis: feasible with its scores (and cost), or who rejected it."""
    entry: dict[str, Any] = {"name": verdict.cluster, "feasible": verdict.rejected_by is None}
    if verdict.rejected_by is not None:
        entry["rejectedBy"] = verdict.rejected_by
        entry["reason"] = verdict.reason
    else:
        entry["scores"] = dict(verdict.scores)
        entry["score"] = verdict.total_score
        if verdict.cost_per_replica_hour is not None:
            entry["costPerReplicaHour"] = verdict.cost_per_replica_hour
    return entry


def decision_document(decision: Decision) -> dict[str, Any]:
    """The PlacementDecision written to `decisions/`: the entry plus the diagnosis, the
    recorded one while the placement stands (unless it predates the bound on what it lists)."""
    key = decision.key
    metadata: dict[str, Any] = {"name": key.file_stem}
    if key.namespace:
        metadata["namespace"] = key.namespace
    status = {**decision_entry(decision), "placementDigest": decision.placement_digest}
    if decision.affinity_term is not None:
        status["affinityTerm"] = decision.affinity_term
    if decision.retiring:
        placed = {p.cluster for p in decision.clusters}
        status["retiring"] = [
            retiring_entry(p)
            if p.cluster in placed
            else _with_effective(retiring_entry(p), decision)
            for p in decision.retiring
        ]
    if decision.moves:
        status["moves"] = [
            {
                "from": m.source,
                "to": m.target,
                "replicas": m.replicas,
                "reason": m.reason.text,
                "at": m.at,
            }
            for m in decision.moves
        ]
    if decision.rebalance_served is not None:
        status["rebalanceServed"] = decision.rebalance_served
    if decision.cost_per_hour is not None:
        status["costPerHour"] = decision.cost_per_hour
    if decision.unpriced:
        status["unpricedReplicas"] = decision.unpriced
    if decision.disruption is not None:
        status["disruption"] = disruption_status(decision.disruption)
    if decision.rollout is not None:
        status["rollout"] = rollouts.document(decision.rollout)
    recorded = decision.recorded
    if recorded is None or (_unbounded(decision, recorded) and decision.diagnosis.verdicts):
        status["diagnosis"] = diagnosis_document(decision)
    else:
        status["diagnosis"] = recorded if isinstance(recorded, str) else dict(recorded)
    return {
        "apiVersion": DRO_API_VERSION,
        "kind": "PlacementDecision",
        "metadata": metadata,
        "status": status,
    }


def _unbounded(decision: Decision, recorded: Manifest | str) -> bool:
    """Whether a recorded diagnosis lists more clusters than a file now may (one written
    before the bound, with a verdict per cluster): it is written afresh once, when the pass has
    the verdicts, so an upgraded fleet's decision files shrink without waiting for a change."""
    most = len(decision.clusters) + LISTED_OTHERS
    if isinstance(recorded, str):  # the block as read back, never parsed: count its entries
        return recorded.count("feasible: true") + recorded.count("feasible: false") > most
    return len(recorded.get("clusters") or ()) > most


def disruption_status(disruption: Disruption) -> dict[str, Any]:
    """`status.disruption`: the budget as written, in clusters for this workload, the clusters
    in flight at each end of its moves, and what waits on the budget (each only when any)."""
    budget = disruption.budget
    entry: dict[str, Any] = {
        "maxUnavailableClusters": budget.count if budget.count is not None else str(budget),
        "allowed": disruption.allowed,
    }
    if disruption.leaving:
        entry["leaving"] = list(disruption.leaving)
    if disruption.entering:
        entry["entering"] = list(disruption.entering)
    if disruption.waiting:
        entry["waiting"] = [
            {"cluster": w.cluster, "replicas": w.replicas, "reason": w.reason}
            for w in disruption.waiting
        ]
    return entry


def _disruption_from(raw: Mapping[str, Any] | None) -> Disruption | None:
    """What `disruption_status` wrote, read back."""
    if raw is None:
        return None
    return Disruption(
        budget=DisruptionBudget.parse(raw["maxUnavailableClusters"]),
        allowed=int(raw["allowed"]),
        leaving=tuple(str(c) for c in raw.get("leaving") or ()),
        entering=tuple(str(c) for c in raw.get("entering") or ()),
        waiting=tuple(
            Waiting(str(w["cluster"]), int(w["replicas"]), str(w["reason"]))
            for w in raw.get("waiting") or ()
        ),
    )


def retiring_entry(placed: Placed) -> dict[str, Any]:
    """One `status.retiring` item: the old cluster and its replicas, and for a stateful move
    its phase and since when."""
    entry: dict[str, Any] = {"name": placed.cluster, "replicas": placed.replicas}
    if placed.phase is not None:
        entry["phase"] = placed.phase
        entry["since"] = placed.since
    return entry


def decision_from_document(document: Mapping[str, Any]) -> Decision:
    """Read back what `decision_document` wrote: the placement the next pass starts from.

    Raises KeyError, TypeError or ValueError on a document of another shape.
    """
    if document.get("kind") != "PlacementDecision":
        raise ValueError("not a PlacementDecision")
    status = document["status"]
    resource = status["resource"]
    policy = status.get("policy")
    return Decision(
        key=ResourceKey(
            group_of(resource["apiVersion"]),
            resource["kind"],
            resource.get("namespace") or "",
            resource["name"],
        ).shared(),  # the source's key of the same object: maps find it by identity
        api_version=resource["apiVersion"],
        policy=None
        if policy is None
        else PolicyRef(kind=policy["kind"], namespace=policy.get("namespace"), name=policy["name"]),
        clusters=tuple(
            Placed(
                cluster=str(c["name"]),
                replicas=None if c.get("replicas") is None else int(c["replicas"]),
            )
            for c in status.get("clusters") or ()
        ),
        unschedulable=status.get("unschedulable"),
        placement_digest=str(status.get("placementDigest") or ""),
        affinity_term=status.get("affinityTerm"),
        recorded=status.get("diagnosis"),
        retiring=tuple(
            Placed(
                str(r["name"]),
                int(r["replicas"]),
                None if r.get("phase") is None else str(r["phase"]),
                None if r.get("since") is None else str(r["since"]),
            )
            for r in status.get("retiring") or ()
        ),
        moves=tuple(
            Move(
                str(m["from"]),
                str(m["to"]),
                int(m["replicas"]),
                MoveReason.read(str(m["reason"])),  # the one place a reason's prose is read
                str(m["at"]),
            )
            for m in status.get("moves") or ()
        ),
        rebalance_served=status.get("rebalanceServed"),
        over_limit=tuple(
            Placed(str(o["cluster"]), int(o["replicas"])) for o in status.get("overLimit") or ()
        ),
        pending=int(status.get("pending") or 0),
        cost_per_hour=None if status.get("costPerHour") is None else float(status["costPerHour"]),
        unpriced=int(status.get("unpricedReplicas") or 0),
        disruption=_disruption_from(status.get("disruption")),
        rollout=rollouts.read(status.get("rollout")),
        effective={
            str(entry["name"]): int(entry["effectiveReplicas"])
            for entry in (*(status.get("clusters") or ()), *(status.get("retiring") or ()))
            if entry.get("effectiveReplicas") is not None
        },
    )


def kustomization(resources: Sequence[str]) -> dict[str, Any]:
    """A kustomization listing one cluster's files, so Argo CD or Flux can sync the folder."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(resources),
    }


def water_levels(cluster: Cluster) -> dict[str, float]:
    """RWL = allocated / capacity per declared resource, rounded to 4 places."""
    return observed.water_level(cluster.capacity, cluster.allocated)


FILLING = phases.FILLING
"""`status.phase` of a cluster that re-balancing is still filling (added or recovered)."""
UNREACHABLE = phases.UNREACHABLE
"""`status.phase` of a cluster whose observation says it could not be listed; the first pass
that reaches it again fills it."""


def observation(
    cluster: Cluster,
    observed: Mapping[str, Any] | None,
    *,
    filling: bool = False,
    placed: Mapping[str, float] | None = None,
    forecast: ClusterForecast | None = None,
) -> dict[str, Any]:
    """`status/clusters/<name>.yaml`: the observation the decisions were made from, the
    cluster's phase when it is not simply in service (`phases`), `placed` (the requests of dro's
    replicas there, the part of `used` that is dro's own: prediction forecasts the rest) and,
    with prediction on, the cluster's `forecast`."""
    if observed is not None:
        status = dict(observed)
    else:
        status = {
            "source": "declared",
            "capacity": quantity.texts(cluster.capacity),
            "allocated": quantity.texts(cluster.allocated),
            "waterLevel": water_levels(cluster),
        }
    if placed:
        status = {**status, "placed": quantity.texts(placed)}
    if forecast is not None:
        status = {**status, "forecast": forecast_status(forecast)}
    phase = phases.of(cluster, observed, filling=filling)
    if phase is not None:
        status = {**status, "phase": phase}
    return {
        "apiVersion": DRO_API_VERSION,
        "kind": "ClusterObservation",
        "metadata": {"name": cluster.name},
        "status": status,
    }


def forecast_status(forecast: ClusterForecast) -> dict[str, Any]:
    """A status file's `forecast`: the level (background peak over the horizon plus the error
    band) and next step as quantities, the model, the recent error and when it peaks (left out
    when the forecast is flat, so a steady fleet's status files stay the same)."""
    result: dict[str, Any] = {
        "model": forecast.model,
        "level": _coarse(forecast.level),
        "nextStep": _coarse(forecast.next_step),
        "error": {r: round(e, 4) for r, e in sorted(forecast.error.items())},
    }
    if forecast.peak_at is not None:
        result["peakAt"] = durations.rfc3339(forecast.peak_at)
    return result


def _coarse(values: Mapping[str, float]) -> dict[str, str]:
    """Forecast amounts as quantities a reader takes in: bytes rounded up to Mi, the rest up
    to thousandths (`37254m`)."""
    return quantity.texts(
        {
            r: math.ceil(v / MI) * MI if quantity.in_bytes(r) else math.ceil(v * 1000) / 1000
            for r, v in values.items()
        }
    )


MI = 2**20


def readme(spec: Spec, decisions: Sequence[Decision], *, in_order: bool = False) -> str:
    """The generated README of the output branch, bounded for a reader (`branch.overview`);
    `in_order`: the decisions are in key order already."""
    return overview.readme(spec, decisions, in_order=in_order)
