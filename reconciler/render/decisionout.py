"""Decisions in the shapes other tools read: Argo CD's cluster-decision duck type and
SIG-Multicluster's PlacementDecision (KEP-5313). Both are rendered for every workload.

**Argo CD.** An ApplicationSet's `clusterDecisionResource` generator reads a ConfigMap naming
a resource type (`apiVersion`, `kind` as the plural resource, `statusListKey`, `matchKey`),
then one resource of that type in the Argo CD namespace, and makes one Application per entry
of `status.<statusListKey>` whose `<matchKey>` names an Argo CD cluster. dro renders:

- `argocd/cluster-decisions.yaml`: the ConfigMap `dro-cluster-decisions` (`kind:
  clusterdecisions`, `statusListKey: decisions`, `matchKey: clusterName`) and the
  CustomResourceDefinition of `ClusterDecision` (`multicluster.io/v1alpha1`). The CRD has no
  status subresource, so the status is stored as applied from git;
- `argocd/<namespace|_cluster>/<stem>.yaml`: per workload, a `ClusterDecision` named
  `<namespace>.<stem>` (`<stem>` for a cluster-scoped object) whose `status.decisions` lists
  `{clusterName, reason}` per cluster of the decision, by name;
- `argocd/kustomization.yaml`: lists them all, so an Argo CD Application syncs the folder
  (and a kustomize overlay can move them out of the `argocd` namespace).

**KEP-5313.** `kep-5313/<namespace|_cluster>/<stem>.yaml` holds the workload's
`PlacementDecision` (`multicluster.x-k8s.io/v1alpha1`): top-level `decisions[]` of
`{clusterProfileRef: {name: <cluster>}, reason}` (the ClusterProfile of that name in
`spec.output.clusterProfileNamespace`, or when that is unset in the decision's own namespace, as
the KEP's CRD reads an empty `namespace`), `schedulerName: dro`, in
the workload's namespace (`default` for a cluster-scoped object). Past 100 clusters the decision is
cut into slices of 100, as the KEP requires, named `<stem>`, `<stem>-1`, … and labelled
with the same `multicluster.x-k8s.io/decision-key` and their `decision-index`;
`multicluster.x-k8s.io/placement-key` links each slice to the workload.

Reasons name only the policy and the replicas, so a steady pass renders the same bytes.

Called by `render` and `render.shared`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconciler import yamlio
from reconciler.branch import paths
from reconciler.domain import Decision, ResourceKey
from reconciler.kube import inventory
from reconciler.render import dnsnames

GROUP = "multicluster.io"
ARGOCD_API_VERSION = f"{GROUP}/v1alpha1"
ARGOCD_KIND = "ClusterDecision"
ARGOCD_PLURAL = "clusterdecisions"
ARGOCD_NAMESPACE = "argocd"
CONFIGMAP = "dro-cluster-decisions"
STATUS_LIST_KEY = "decisions"
MATCH_KEY = "clusterName"
KEP_GROUP = "multicluster.x-k8s.io"
KEP_API_VERSION = f"{KEP_GROUP}/v1alpha1"
KEP_SLICE = 100
"""Clusters per PlacementDecision slice (KEP-5313, after EndpointSlice)."""
DECISION_KEY = f"{KEP_GROUP}/decision-key"
DECISION_INDEX = f"{KEP_GROUP}/decision-index"
PLACEMENT_KEY = f"{KEP_GROUP}/placement-key"
SCHEDULER = "dro"


def reason(decision: Decision, replicas: int | None) -> str:
    """Why a cluster is in the decision: the policy that placed it, and its replicas."""
    by = str(decision.policy) if decision.policy else "the default placement in dro.yaml"
    count = "" if replicas is None else f", {replicas} replica{'' if replicas == 1 else 's'}"
    return f"placed by {by}{count}"


def argocd_name(key: ResourceKey) -> str:
    """`<namespace>.<stem>` (`<stem>` when cluster-scoped): unique in the Argo CD namespace."""
    return dnsnames.fit(f"{key.namespace}.{key.file_stem}" if key.namespace else key.file_stem)


def files(decision: Decision, profiles: str | None = None) -> dict[str, bytes]:
    """The workload's Argo CD cluster decision and KEP-5313 PlacementDecision files;
    `profiles` is the ClusterProfiles' namespace (`spec.output.clusterProfileNamespace`)."""
    return {
        paths.argocd_path(decision.key): yamlio.dump(cluster_decision(decision)).encode(),
        paths.kep5313_path(decision.key): "---\n".join(
            yamlio.dump(d) for d in placement_decisions(decision, profiles)
        ).encode(),
    }


def cluster_decision(decision: Decision) -> dict[str, Any]:
    """The `ClusterDecision` the clusterDecisionResource generator reads."""
    key = decision.key
    labels = {inventory.MANAGED_BY[0]: inventory.MANAGED_BY[1]}
    if key.namespace:
        labels[f"{GROUP}/namespace"] = key.namespace
    return {
        "apiVersion": ARGOCD_API_VERSION,
        "kind": ARGOCD_KIND,
        "metadata": {
            "name": argocd_name(key),
            "namespace": ARGOCD_NAMESPACE,
            "labels": labels,
            "annotations": {inventory.PLACEMENT_ANNOTATION: inventory.placement_name(key)},
        },
        "status": {
            STATUS_LIST_KEY: [
                {MATCH_KEY: p.cluster, "reason": reason(decision, p.replicas)}
                for p in sorted(decision.clusters, key=lambda p: p.cluster)
            ]
        },
    }


def placement_decisions(decision: Decision, profiles: str | None = None) -> list[dict[str, Any]]:
    """The KEP-5313 PlacementDecision slices of a decision (one when ≤ 100 clusters), each
    ClusterProfile referred to in namespace `profiles` (None: the decision's own)."""
    key = decision.key
    stem = key.file_stem
    label = dnsnames.fit(stem, dnsnames.LABEL_VALUE)
    entries = [
        {
            "clusterProfileRef": {
                "name": p.cluster,
                **({"namespace": profiles} if profiles else {}),
            },
            "reason": reason(decision, p.replicas),
        }
        for p in sorted(decision.clusters, key=lambda p: p.cluster)
    ]
    slices = [entries[i : i + KEP_SLICE] for i in range(0, len(entries), KEP_SLICE)] or [[]]
    return [
        {
            "apiVersion": KEP_API_VERSION,
            "kind": "PlacementDecision",
            "metadata": {
                "name": dnsnames.fit(stem if index == 0 else f"{stem}-{index}"),
                "namespace": key.namespace or "default",
                "labels": {
                    DECISION_KEY: label,
                    DECISION_INDEX: str(index),
                    PLACEMENT_KEY: label,
                    inventory.MANAGED_BY[0]: inventory.MANAGED_BY[1],
                },
                "annotations": {inventory.PLACEMENT_ANNOTATION: inventory.placement_name(key)},
            },
            "decisions": chunk,
            "schedulerName": SCHEDULER,
        }
        for index, chunk in enumerate(slices)
    ]


def shared_files(decisions: Sequence[Decision]) -> dict[str, bytes]:
    """`argocd/cluster-decisions.yaml` (the ConfigMap and the CRD) and the folder's
    kustomization listing it and every workload's ClusterDecision."""
    shared = "---\n".join(yamlio.dump(d) for d in (configmap(), crd()))
    listed = [paths.ARGOCD_SHARED, *sorted(paths.argocd_path(d.key) for d in decisions)]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [path.removeprefix(paths.ARGOCD) for path in listed],
    }
    return {
        paths.ARGOCD_SHARED: shared.encode(),
        f"{paths.ARGOCD}{paths.KUSTOMIZATION}": yamlio.dump(kustomization).encode(),
    }


def configmap() -> dict[str, Any]:
    """The ConfigMap a clusterDecisionResource generator names in `configMapRef`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": ARGOCD_NAMESPACE},
        "data": {
            "apiVersion": ARGOCD_API_VERSION,
            "kind": ARGOCD_PLURAL,
            "statusListKey": STATUS_LIST_KEY,
            "matchKey": MATCH_KEY,
        },
    }


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition of ClusterDecision: a status that git sets (no status
    subresource, so `kubectl apply` and Argo CD store it as written)."""
    entry = {
        "type": "object",
        "required": [MATCH_KEY],
        "properties": {MATCH_KEY: {"type": "string"}, "reason": {"type": "string"}},
    }
    schema = {
        "type": "object",
        "properties": {
            "status": {
                "type": "object",
                "properties": {STATUS_LIST_KEY: {"type": "array", "items": entry}},
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{ARGOCD_PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": ARGOCD_KIND,
                "listKind": f"{ARGOCD_KIND}List",
                "plural": ARGOCD_PLURAL,
                "singular": ARGOCD_KIND.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def readme_section(karmada: bool) -> str:
    """The generated README's paragraph on the interop folders."""
    lines = [
        "",
        "## Other tools",
        "",
        "- `argocd/`: Argo CD cluster decisions. Sync this folder into the Argo CD namespace "
        f"and point an ApplicationSet's `clusterDecisionResource` generator at ConfigMap "
        f"`{CONFIGMAP}` and the workload's ClusterDecision (`<namespace>.<stem>`).",
        "- `kep-5313/`: SIG-Multicluster PlacementDecisions (KEP-5313), one per workload.",
    ]
    if karmada:
        lines.append(
            "- `karmada/`: per workload, its template with a PropagationPolicy and "
            "OverridePolicy pinning this placement, for a Karmada control plane."
        )
    return "\n".join(lines) + "\n"
