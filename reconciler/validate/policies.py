"""Normalise every policy kind into `PlacementPolicy` and `OverridePolicy` values.

Kinds: dro's ResourcePlacementPolicy, ClusterOverridePolicy and the draft's PropagationPolicy
(`multicluster.io/v1alpha1`); Karmada's PropagationPolicy, ClusterPropagationPolicy,
OverridePolicy and ClusterOverridePolicy (`policy.karmada.io/v1alpha1`), with Karmada's defaults:
no replicaScheduling means Duplicated, Divided without a preference is Weighted, Weighted
without a weightPreference gives every candidate weight 1. Documents are schema-valid here.

Called by `validate` and `validate.files`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from reconciler.domain import (
    DRO_API_VERSION,
    AffinityTerm,
    ClusterAffinity,
    DisruptionBudget,
    DivisionPreference,
    Document,
    Location,
    MoveBudget,
    OverridePolicy,
    OverrideRule,
    Placement,
    PlacementPolicy,
    PolicyRef,
    ReplicaScheduling,
    ReplicaType,
    ResourceSelector,
    SpreadConstraint,
    Strategy,
)
from reconciler.validate import datamodel, rollouts, selectors

EXTENSIONS_ANNOTATION = "multicluster.io/extensions"
KARMADA_OPERATION_ORDER = (
    "imageOverrider",
    "commandOverrider",
    "argsOverrider",
    "labelsOverrider",
    "annotationsOverrider",
    "fieldOverrider",
    "plaintext",
)


def _ref(doc: Document) -> PolicyRef:
    meta = doc.body["metadata"]
    return PolicyRef(kind=doc.body["kind"], namespace=meta.get("namespace"), name=meta["name"])


def digest(value: Any) -> str:
    """A short, stable hash of a placement as written (canonical JSON, sorted keys)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def default_placement(raw: Mapping[str, Any]) -> Placement:
    """`defaultPlacement` of dro.yaml: a placement with its `targetClusters` beside it."""
    return dro_placement({"targetClusters": raw.get("targetClusters"), "placement": raw})


def dro_placement(spec: Mapping[str, Any]) -> Placement:
    """The placement of a ResourcePlacementPolicy: `targetClusters` and `placement`."""
    placement = spec.get("placement") or {}
    replica = placement.get("replicaScheduling") or {}
    weights = tuple(
        (selectors.dro_cluster_term(w), int(w["weight"])) for w in replica.get("weights") or ()
    )
    rebalance = placement.get("rebalance") or {}
    moves = rebalance.get("maxMovesPerPass")
    # neither the budgets, the takeover rule nor the rollout changes where replicas go
    paced = ("rebalance", "apply", "disruption", "rollout")
    as_written = {k: v for k, v in placement.items() if k not in paced}
    locations = tuple(
        Location(city_codes=tuple(entry["cityCodes"])) for entry in placement.get("locations") or ()
    )
    return Placement(
        locations=locations,
        affinity_terms=tuple(location.term() for location in locations),
        digest=digest({"targetClusters": spec.get("targetClusters"), "placement": as_written}),
        max_moves=None if moves is None else MoveBudget.parse(moves),
        rebalance_requested_at=rebalance.get("requestedAt"),
        preferred=tuple(
            (selectors.dro_cluster_term(p), int(p["weight"]))
            for p in placement.get("preferred") or ()
        ),
        targets=selectors.target_clusters(spec.get("targetClusters")),
        tolerations=selectors.tolerations(placement.get("tolerations")),
        replicas=ReplicaScheduling(
            type=replica.get("type", ReplicaType.DUPLICATED),
            division=replica.get("division", Strategy.STATIC_WEIGHT),
            static_weights=weights,
        ),
        spread=tuple(
            SpreadConstraint(
                by=s["by"], min_groups=s.get("minGroups", 1), max_groups=s.get("maxGroups")
            )
            for s in placement.get("spread") or ()
        ),
        water_level_limit=MappingProxyType(dict(placement.get("waterLevelLimit") or {})),
        water_level_ceiling=MappingProxyType(dict(placement.get("waterLevelCeiling") or {})),
        overflow=placement.get("overflow", "Always"),
        # a rate that does not parse counts as 0 here; validate reports it with its line
        data=datamodel.accesses(placement.get("data") or (), None, "", []),
        max_data_latency_ms=placement.get("maxDataLatencyMs"),
        allow_split=bool(placement.get("allowSplit", False)),
        takeover=(placement.get("apply") or {}).get("takeover", "IfNoDiff"),
        drift=(placement.get("apply") or {}).get("drift", "Correct"),
        disruption=disruption_budget(placement),
        rollout=rollouts.parse(placement.get("rollout")),
    )


def disruption_budget(raw: Mapping[str, Any]) -> DisruptionBudget | None:
    """`disruption.maxUnavailableClusters` of a placement or of dro.yaml's spec, or None."""
    value = (raw.get("disruption") or {}).get("maxUnavailableClusters")
    return None if value is None else DisruptionBudget.parse(value)


def _rpp(doc: Document) -> PlacementPolicy:
    spec = doc.body["spec"]
    namespace = doc.body["metadata"].get("namespace")
    raw = spec.get("resourceSelectors") or [spec["resourceSelector"]]
    return PlacementPolicy(
        ref=_ref(doc),
        origin=doc.origin,
        api_version=DRO_API_VERSION,
        namespaced=namespace is not None,
        priority=int(spec.get("priority", 0)),
        selectors=tuple(selectors.resource_selector(r, namespace) for r in raw),
        placement=dro_placement(spec),
    )


def _draft_pp(doc: Document) -> PlacementPolicy:
    spec = doc.body["spec"]
    kind = spec["resourceType"]
    api_version = _API_VERSION_OF_KIND.get(kind, "v1")
    placement = Placement(
        targets=(ClusterAffinity(names=tuple(spec["targetClusters"])),),
        digest=digest(spec["targetClusters"]),
    )
    return PlacementPolicy(
        ref=_ref(doc),
        origin=doc.origin,
        api_version=DRO_API_VERSION,
        namespaced=False,
        priority=0,
        selectors=(
            ResourceSelector(api_version=api_version, kind=kind, namespace=spec.get("namespace")),
        ),
        placement=placement,
    )


_API_VERSION_OF_KIND = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Ingress": "networking.k8s.io/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
    "PodDisruptionBudget": "policy/v1",
}
"""The draft's `resourceType` is a bare kind; these are the groups of the common ones."""


def karmada_replicas(raw: Mapping[str, Any] | None) -> ReplicaScheduling:
    """Karmada's replicaScheduling with its webhook and runtime defaults."""
    if not raw:
        return ReplicaScheduling(type=ReplicaType.DUPLICATED)
    if raw.get("replicaSchedulingType", ReplicaType.DIVIDED) == ReplicaType.DUPLICATED:
        return ReplicaScheduling(type=ReplicaType.DUPLICATED)
    preferred = raw.get("replicaDivisionPreference", DivisionPreference.WEIGHTED)
    if preferred == DivisionPreference.AGGREGATED:
        return ReplicaScheduling(type=ReplicaType.DIVIDED, division=Strategy.AGGREGATED)
    preference = raw.get("weightPreference") or {}
    if preference.get("dynamicWeight"):
        return ReplicaScheduling(type=ReplicaType.DIVIDED, division=Strategy.DYNAMIC_WEIGHT)
    weights = tuple(
        (selectors.karmada_affinity(w["targetCluster"]), int(w["weight"]))
        for w in preference.get("staticWeightList") or ()
    )
    return ReplicaScheduling(
        type=ReplicaType.DIVIDED, division=Strategy.STATIC_WEIGHT, static_weights=weights
    )


def _karmada_spread(raw: Mapping[str, Any]) -> SpreadConstraint:
    by_label = raw.get("spreadByLabel")
    minimum = raw.get("minGroups") or 1
    return SpreadConstraint(
        by=by_label or raw.get("spreadByField") or "cluster",
        min_groups=minimum,
        max_groups=raw.get("maxGroups"),
        by_label=bool(by_label),
    )


def _karmada_pp(doc: Document) -> PlacementPolicy:
    spec = doc.body["spec"]
    namespaced = doc.body["kind"] == "PropagationPolicy"
    namespace = doc.body["metadata"].get("namespace", "default") if namespaced else None
    placement = spec.get("placement") or {}
    terms = tuple(
        AffinityTerm(
            name=t["affinityName"],
            affinity=selectors.karmada_affinity(t),
            overflow=tuple(
                (o["affinityName"], selectors.karmada_affinity(o))
                for o in t.get("overflowAffinities") or ()
            ),
        )
        for t in placement.get("clusterAffinities") or ()
    )
    affinity = placement.get("clusterAffinity")
    annotations = doc.body["metadata"].get("annotations") or {}
    suspension = spec.get("suspension") or {}
    return PlacementPolicy(
        ref=PolicyRef(
            kind=doc.body["kind"], namespace=namespace, name=doc.body["metadata"]["name"]
        ),
        origin=doc.origin,
        api_version=doc.body["apiVersion"],
        namespaced=namespaced,
        priority=int(spec.get("priority", 0)),
        selectors=tuple(
            selectors.resource_selector(r, namespace) for r in spec["resourceSelectors"]
        ),
        placement=Placement(
            digest=digest(placement),
            targets=(selectors.karmada_affinity(affinity),) if affinity is not None else (),
            affinity_terms=terms,
            tolerations=selectors.tolerations(placement.get("clusterTolerations")),
            replicas=karmada_replicas(placement.get("replicaScheduling")),
            spread=tuple(_karmada_spread(s) for s in placement.get("spreadConstraints") or ()),
            failover=spec.get("failover") is not None,
            takeover="Always" if spec.get("conflictResolution") == "Overwrite" else "Never",
            suspended_dispatching=bool(suspension.get("dispatching")),
            suspended_on=tuple(
                (suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or ()
            ),
        ),
        dro_extensions=annotations.get(EXTENSIONS_ANNOTATION) == "enabled",
    )


def placement_policy(doc: Document) -> PlacementPolicy:
    """Normalise one placement policy document of any supported kind."""
    kind = doc.body["kind"]
    if doc.body["apiVersion"] == DRO_API_VERSION:
        return _rpp(doc) if kind == "ResourcePlacementPolicy" else _draft_pp(doc)
    return _karmada_pp(doc)


def _dro_overrides(doc: Document) -> OverridePolicy:
    spec = doc.body["spec"]
    raw = spec.get("resourceSelectors") or (
        [spec["resourceSelector"]] if spec.get("resourceSelector") else []
    )
    rules = tuple(
        OverrideRule(
            target=(
                selectors.dro_cluster_term(o["clusterSelector"])
                if o.get("clusterSelector")
                else None
            ),
            operations=tuple(("fieldPatch", MappingProxyType(dict(p))) for p in o["fieldPatches"]),
            pointers=tuple(
                f"/spec/overrides/{i}/fieldPatches/{j}/path" for j in range(len(o["fieldPatches"]))
            ),
        )
        for i, o in enumerate(spec["overrides"])
    )
    return OverridePolicy(
        ref=_ref(doc),
        origin=doc.origin,
        namespaced=False,
        selectors=tuple(selectors.resource_selector(r, None) for r in raw),
        rules=rules,
    )


_LOCATED_AT = {"plaintext": "/path", "fieldOverrider": "/fieldPath"}
"""The line an operation's failure points at, inside the operation."""


def _karmada_rule(
    target: Mapping[str, Any] | None, overriders: Mapping[str, Any], pointer: str
) -> OverrideRule:
    operations: list[tuple[str, Mapping[str, Any]]] = []
    pointers: list[str] = []
    for name in KARMADA_OPERATION_ORDER:
        for index, op in enumerate(overriders.get(name) or ()):
            operations.append((name, MappingProxyType(dict(op))))
            pointers.append(f"{pointer}/{name}/{index}" + _LOCATED_AT.get(name, ""))
    return OverrideRule(
        target=selectors.karmada_affinity(target) if target is not None else None,
        operations=tuple(operations),
        pointers=tuple(pointers),
    )


def _karmada_overrides(doc: Document) -> OverridePolicy:
    spec = doc.body["spec"]
    namespaced = doc.body["kind"] == "OverridePolicy"
    namespace = doc.body["metadata"].get("namespace", "default") if namespaced else None
    if spec.get("overrideRules"):
        rules = tuple(
            _karmada_rule(
                r.get("targetCluster"), r["overriders"], f"/spec/overrideRules/{i}/overriders"
            )
            for i, r in enumerate(spec["overrideRules"])
        )
    else:
        overriders = spec.get("overriders") or {}
        rules = (_karmada_rule(spec.get("targetCluster"), overriders, "/spec/overriders"),)
    return OverridePolicy(
        ref=PolicyRef(
            kind=doc.body["kind"], namespace=namespace, name=doc.body["metadata"]["name"]
        ),
        origin=doc.origin,
        namespaced=namespaced,
        selectors=tuple(
            selectors.resource_selector(r, namespace) for r in spec.get("resourceSelectors") or ()
        ),
        rules=rules,
    )


def override_policy(doc: Document) -> OverridePolicy:
    """Normalise one override policy document of any supported kind."""
    if doc.body["apiVersion"] == DRO_API_VERSION:
        return _dro_overrides(doc)
    return _karmada_overrides(doc)


def is_placement_kind(api_version: str, kind: str) -> bool:
    """True for the kinds `placement_policy` accepts."""
    return (api_version, kind) in {
        (DRO_API_VERSION, "ResourcePlacementPolicy"),
        (DRO_API_VERSION, "PropagationPolicy"),
        ("policy.karmada.io/v1alpha1", "PropagationPolicy"),
        ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy"),
    }


def is_override_kind(api_version: str, kind: str) -> bool:
    """True for the kinds `override_policy` accepts."""
    return (api_version, kind) in {
        (DRO_API_VERSION, "ClusterOverridePolicy"),
        ("policy.karmada.io/v1alpha1", "OverridePolicy"),
        ("policy.karmada.io/v1alpha1", "ClusterOverridePolicy"),
    }


KARMADA_POLICY_GROUP = "policy.karmada.io"


def is_policy_document(api_version: str, kind: str) -> bool:
    """True for a document that is a policy wherever it sits (`workloads/` too): dro's own
    placement and override kinds, and every kind of Karmada's policy group (a kind dro does not
    support is then reported as one, never rendered into member clusters)."""
    if api_version.split("/", 1)[0] == KARMADA_POLICY_GROUP:
        return True
    return is_placement_kind(api_version, kind) or is_override_kind(api_version, kind)


def without_nulls(value: Any) -> Any:
    """`value` with every map entry whose value is null removed, at any depth: how the API
    server reads a custom resource (apiextensions.k8s.io/v1 prunes nulls of non-nullable
    fields before defaulting), so `overrideRules:` with no value is as if absent. Nulls
    inside lists stay, and are reported as the API server reports them."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


UNSUPPORTED_KARMADA_FIELDS = (
    ("/spec/schedulePriority", "schedulePriority"),
    ("/spec/placement/workloadAffinity", "workloadAffinity"),
)
"""Karmada fields dro reads but does not implement: an error, since ignoring them would
place differently than Karmada does."""


def karmada_problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(pointer, message) for each Karmada field in `body` that dro does not implement, and
    for what Karmada's webhook rejects beyond the schema (suspension's two fields together)."""
    if not str(body.get("apiVersion", "")).startswith(KARMADA_POLICY_GROUP + "/"):
        return []
    spec = body.get("spec") or {}
    placement = spec.get("placement") or {}
    found = []
    for pointer, name in UNSUPPORTED_KARMADA_FIELDS:
        holder = placement if pointer.startswith("/spec/placement/") else spec
        if isinstance(holder, Mapping) and holder.get(name) is not None:
            found.append((pointer, f"Karmada field {name} is not supported by dro"))
    suspension = spec.get("suspension") or {}
    on_clusters = suspension.get("dispatchingOnClusters") or {}
    if suspension.get("dispatching") and on_clusters.get("clusterNames"):
        message = "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames"
        found.append(("/spec/suspension", message))
    return found
