"""Karmada output (`spec.output.karmada: true`): per placed workload, one file under `karmada/`
that makes a Karmada control plane place the workload exactly as dro decided.

The file holds three documents, applied together to a Karmada API server:

1. the resource template: the manifest as dro renders it before any per-cluster change, with
   `spec.replicas` set to the total dro placed (so the division below has nothing left over);
2. a `PropagationPolicy` (a `ClusterPropagationPolicy` for a cluster-scoped object) that
   selects the object by name and pins the clusters: `clusterAffinity.clusterNames` lists the
   decision's clusters, and a divided decision becomes `Divided` + `Weighted` with one static
   weight per cluster equal to its replicas. Karmada divides by Webster's method, and weights
   equal to the seats divide the total back into exactly those seats (the quotient of every
   cluster is a whole number, so no remainder is handed out). A cluster with 0 replicas is left
   out, as Karmada drops weight-0 candidates; a duplicated decision (or a kind without
   replicas) becomes `Duplicated`;
3. an `OverridePolicy` (a `ClusterOverridePolicy` for a cluster-scoped object), only when some
   cluster's rendered manifest differs from the template as Karmada divides it: one rule per
   distinct difference, `targetCluster.clusterNames` naming its clusters and the difference as
   `plaintext` JSON-patch operations (`render.patchdiff`). These carry dro's override
   policies, image pins and a rollout's template in force alike, and reproduce the rendered
   manifest exactly.

A decision with no clusters gets no file: an empty `clusterNames` would select every cluster.
The policies' names are `dro-<kind>[.<group>]-<name>`, lowercase and DNS-safe (shortened with a
hash past 253 characters), so they do not clash with a user's own Karmada policies.

Called by `render`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reconciler import yamlio
from reconciler.branch import paths
from reconciler.domain import Decision, Workload
from reconciler.render import dnsnames, patchdiff

API_VERSION = "policy.karmada.io/v1alpha1"
PREFIX = "dro-"


def policy_name(workload: Workload) -> str:
    """`dro-<kind>[.<group>]-<name>`, lowercase, at most 253 characters."""
    return dnsnames.fit(f"{PREFIX}{workload.key.file_stem}")


def pinned(decision: Decision) -> tuple[list[str], dict[str, int] | None]:
    """The clusters the PropagationPolicy names, and cluster → static weight for a divided
    decision (None for a duplicated one). Clusters with 0 replicas are left out, unless every
    cluster has 0 (then each keeps weight 1 and is divided nothing)."""
    divides = decision.diagnosis.strategy.divides and all(
        p.replicas is not None for p in decision.clusters
    )
    if not divides:
        return sorted(p.cluster for p in decision.clusters), None
    weights = {p.cluster: p.replicas for p in decision.clusters if p.replicas}
    if not weights:
        weights = {p.cluster: 1 for p in decision.clusters}
    return sorted(weights), {name: int(w) for name, w in sorted(weights.items())}


def files(
    workload: Workload,
    decision: Decision,
    base: Mapping[str, Any],
    rendered: Mapping[str, bytes],
) -> dict[str, bytes]:
    """`{karmada/<namespace|_cluster>/<stem>.yaml: the three documents}`, or `{}` when the
    decision has no cluster. `base` is the manifest before replicas and overrides
    (`render.base_manifest`), `rendered` the output-branch files rendered for the decision."""
    if not decision.clusters:
        return {}
    clusters, weights = pinned(decision)
    template = json.loads(json.dumps(base))
    per_cluster = {p.cluster: p.replicas for p in decision.clusters}
    if weights is not None:
        template.setdefault("spec", {})["replicas"] = sum(
            per_cluster[name] or 0 for name in clusters
        )
    policy = propagation_policy(workload, clusters, weights)
    if workload.sealed:
        # SOPS-encrypted: the template is the source's bytes, as on every cluster, since the
        # MAC covers every value; overrides cannot change it (validate refuses), so no rules
        sealed = workload.sealed.decode()
        text = sealed.removeprefix("---\n") + ("" if sealed.endswith("\n") else "\n")
        return {paths.karmada_path(decision.key): (text + "---\n" + yamlio.dump(policy)).encode()}
    documents = [template, policy]
    rules = _override_rules(decision, template, clusters, weights, rendered)
    if rules:
        documents.append(_policy(workload, "OverridePolicy", {"overrideRules": rules}))
    text = "---\n".join(yamlio.dump(document) for document in documents)
    return {paths.karmada_path(decision.key): text.encode()}


def propagation_policy(
    workload: Workload, clusters: list[str], weights: Mapping[str, int] | None
) -> dict[str, Any]:
    """The (Cluster)PropagationPolicy pinning `clusters`, with `weights` as static weights."""
    if weights is None:
        scheduling: dict[str, Any] = {"replicaSchedulingType": "Duplicated"}
    else:
        scheduling = {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [name]}, "weight": weight}
                    for name, weight in weights.items()
                ]
            },
        }
    placement = {"clusterAffinity": {"clusterNames": clusters}, "replicaScheduling": scheduling}
    return _policy(workload, "PropagationPolicy", {"placement": placement})


def _policy(workload: Workload, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    key = workload.key
    selector = {"apiVersion": workload.api_version, "kind": key.kind, "name": key.name}
    metadata: dict[str, Any] = {"name": policy_name(workload)}
    if key.namespace:
        metadata["namespace"] = key.namespace
        selector["namespace"] = key.namespace
    else:
        kind = f"Cluster{kind}"
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "spec": {"resourceSelectors": [selector], **body},
    }


def _override_rules(
    decision: Decision,
    template: Mapping[str, Any],
    clusters: list[str],
    weights: Mapping[str, int] | None,
    rendered: Mapping[str, bytes],
) -> list[dict[str, Any]]:
    """One rule per distinct difference between a cluster's rendered manifest and the
    template as Karmada gives it to that cluster, in the order of their first cluster."""
    by_patch: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    for name in clusters:
        path = paths.object_path(name, decision.key)
        data = rendered.get(path)
        if data is None:  # held back (suspended dispatching): nothing rendered to pin
            continue
        divided: dict[str, Any] = json.loads(json.dumps(template))
        if weights is not None:
            divided["spec"]["replicas"] = _karmada_replicas(template, weights, name)
        operations = patchdiff.diff(divided, yamlio.load_own(path, data))
        if operations:
            entry = by_patch.setdefault(json.dumps(operations, sort_keys=True), ([], operations))
            entry[0].append(name)
    return [
        {"targetCluster": {"clusterNames": names}, "overriders": {"plaintext": operations}}
        for names, operations in by_patch.values()
    ]


def _karmada_replicas(template: Mapping[str, Any], weights: Mapping[str, int], name: str) -> int:
    """What Karmada gives `name` of the template's replicas: its weight when the weights sum
    to the total (every cluster with replicas), else 0 (the all-zero case, weight 1 each)."""
    total = template["spec"]["replicas"]
    return weights[name] if sum(weights.values()) == total else 0
