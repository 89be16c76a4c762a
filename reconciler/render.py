"""Render: the output-branch tree, from the spec and the decisions, as path → bytes.

For every decision and each of its clusters, the source manifest gets the divided replicas,
dro's label and placement annotation, then the override policies in their stacking order.
Renders that come out identical (same replicas, same overrides) are dumped once and shared.
Fields a server owns (status, uid, resourceVersion …) are dropped. Nothing time- or
commit-dependent is written: provenance lives in the commit trailers, so a steady pass renders
the same bytes and makes no commit.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reconciler import claims, overrides, selectors, summary, yamlio
from reconciler.domain import (
    Cluster,
    Decision,
    OverridePolicy,
    OverrideRule,
    ResourceKey,
    Spec,
    Workload,
)
from reconciler.errors import Problem, ValidationFailed

MANAGED_BY = ("app.kubernetes.io/managed-by", "dro")
PLACEMENT_ANNOTATION = "multicluster.io/placement"
SERVER_FIELDS = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
CORE_GROUPS = ("", "apps")

decision_entry = summary.decision_entry
"""One entry of `dro schedule -o json` (re-exported: the decision files share it)."""


def object_path(cluster: str, key: ResourceKey) -> str:
    """`clusters/<cluster>/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    kind = key.kind if key.group in CORE_GROUPS else f"{key.kind}.{key.group}"
    folder = key.namespace or "_cluster"
    return f"clusters/{cluster}/{folder}/{kind}-{key.name}.yaml".lower()


def decision_path(key: ResourceKey) -> str:
    """`decisions/<namespace|_cluster>/<kind>[.<group>]-<name>.yaml`, lowercase."""
    kind = key.kind if key.group in CORE_GROUPS else f"{key.kind}.{key.group}"
    return f"decisions/{key.namespace or '_cluster'}/{kind}-{key.name}.yaml".lower()


def _rules_for(
    workload: Workload, policies: Sequence[OverridePolicy]
) -> list[tuple[OverridePolicy, int, OverrideRule]]:
    """Override rules that apply to a workload, in stacking order (DESIGN: Overrides stack)."""

    def selects(policy: OverridePolicy) -> int:
        if policy.namespaced and policy.ref.namespace != workload.key.namespace:
            return 0
        if not policy.selectors:
            return 1
        return claims.best_specificity(policy.selectors, workload)

    chosen = [(p, selects(p)) for p in policies]
    ordered = sorted(
        ((p, s) for p, s in chosen if s > 0),
        key=lambda item: (item[0].namespaced, item[1], item[0].ref.name, item[0].origin.path),
    )
    return [(p, index, rule) for p, _ in ordered for index, rule in enumerate(p.rules)]


def _base(workload: Workload) -> dict[str, Any]:
    manifest = copy.deepcopy(dict(workload.manifest))
    manifest.pop("status", None)
    metadata = manifest.setdefault("metadata", {})
    for field in SERVER_FIELDS:
        metadata.pop(field, None)
    if workload.key.namespace:
        metadata["namespace"] = workload.key.namespace
    metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_BY[0]: MANAGED_BY[1]}
    key = workload.key
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        PLACEMENT_ANNOTATION: f"{key.group}/{key.kind}/{key.namespace}/{key.name}",
    }
    return manifest


def _render_one(
    base: Mapping[str, Any],
    replicas: int | None,
    rules: Iterable[tuple[OverridePolicy, int, OverrideRule]],
    cluster: str,
    key: ResourceKey,
) -> bytes:
    manifest = copy.deepcopy(dict(base))
    if replicas is not None:
        manifest.setdefault("spec", {})["replicas"] = replicas
    for policy, index, rule in rules:
        for operation, op in rule.operations:
            try:
                overrides.apply(manifest, operation, op)
            except overrides.OverrideError as error:
                raise ValidationFailed(
                    [
                        Problem(
                            path=policy.origin.path,
                            line=policy.origin.line,
                            pointer=f"/spec (rule {index})",
                            message=f"{policy.ref}: {operation} failed on {key} "
                            f"for cluster {cluster}: {error}",
                        )
                    ]
                ) from error
    return yamlio.dump(manifest).encode("utf-8")


def _cluster_rules(
    rules: Sequence[tuple[OverridePolicy, int, OverrideRule]], cluster: Cluster
) -> tuple[tuple[OverridePolicy, int, OverrideRule], ...]:
    return tuple(
        item
        for item in rules
        if item[2].target is None
        or selectors.affinity_matches(item[2].target, cluster.name, cluster.labels)
    )


def tree(
    spec: Spec,
    decisions: Sequence[Decision],
    *,
    observations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, bytes]:
    """The whole output-branch tree: manifests, kustomizations, decisions, status, README."""
    workloads = {w.key: w for w in spec.workloads}
    clusters = {c.name: c for c in spec.clusters}
    files: dict[str, bytes] = {}
    per_cluster: dict[str, list[str]] = {name: [] for name in clusters}
    for decision in sorted(decisions, key=lambda d: d.key.sort_key):
        workload = workloads[decision.key]
        files[decision_path(decision.key)] = yamlio.dump(
            summary.decision_document(decision)
        ).encode("utf-8")
        if not decision.clusters:
            continue
        base = _base(workload)
        rules = _rules_for(workload, spec.override_policies)
        rendered: dict[tuple[int | None, tuple[int, ...]], bytes] = {}
        for placed in decision.clusters:
            applied = _cluster_rules(rules, clusters[placed.cluster])
            fingerprint = (placed.replicas, tuple(id(rule) for _, _, rule in applied))
            if fingerprint not in rendered:
                rendered[fingerprint] = _render_one(
                    base, placed.replicas, applied, placed.cluster, decision.key
                )
            path = object_path(placed.cluster, decision.key)
            files[path] = rendered[fingerprint]
            per_cluster[placed.cluster].append(path.split("/", 2)[2])
    for name, resources in per_cluster.items():
        files[f"clusters/{name}/kustomization.yaml"] = yamlio.dump(
            summary.kustomization(sorted(resources))
        ).encode("utf-8")
    for name, cluster in clusters.items():
        observed = (observations or {}).get(name)
        files[f"status/clusters/{name}.yaml"] = yamlio.dump(
            summary.observation(cluster, observed)
        ).encode("utf-8")
    files["README.md"] = summary.readme(spec, decisions).encode("utf-8")
    return dict(sorted(files.items()))
