"""Identity, scope and replicas of the Kubernetes objects under `workloads/`.

A namespaced object without a namespace is in `default`, as with kubectl. Cluster-scoped
built-in kinds are listed here; a custom resource's scope comes from its CRD in the repo.

Called by `validate.references`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.domain import CLUSTER_SCOPED_KINDS, Document, ResourceKey, Workload, group_of

REPLICATED_KINDS = frozenset(
    {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")}
)
"""Kinds whose `spec.replicas` dro divides; every other kind is placed whole."""


def is_cluster_scoped(
    api_version: str, kind: str, crd_scopes: Mapping[tuple[str, str], str]
) -> bool:
    """True for cluster-scoped kinds: the built-in list, or a CRD with scope Cluster."""
    group = group_of(api_version)
    if (group, kind) in CLUSTER_SCOPED_KINDS:
        return True
    return crd_scopes.get((group, kind)) == "Cluster"


def key_of(body: Mapping[str, Any], cluster_scoped: bool) -> ResourceKey:
    """The `ResourceKey` of an object, with kubectl's `default` namespace rule."""
    meta = body.get("metadata") or {}
    namespace = "" if cluster_scoped else str(meta.get("namespace") or "default")
    return ResourceKey(
        group=group_of(str(body["apiVersion"])),
        kind=str(body["kind"]),
        namespace=namespace,
        name=str(meta["name"]),
    ).shared()


def workload(doc: Document, cluster_scoped: bool) -> Workload:
    """A `Workload` from a validated object document."""
    key = key_of(doc.body, cluster_scoped)
    replicas: int | None = None
    if (key.group, key.kind) in REPLICATED_KINDS:
        raw = (doc.body.get("spec") or {}).get("replicas")
        replicas = 1 if raw is None else int(raw)
    return Workload(
        key=key,
        api_version=str(doc.body["apiVersion"]),
        manifest=doc.body,
        origin=doc.origin,
        replicas=replicas,
    )


def crd_facts(body: Mapping[str, Any]) -> tuple[str, str, str, dict[str, Mapping[str, Any]]]:
    """(group, kind, scope, {version: openAPIV3Schema}) of a CustomResourceDefinition."""
    spec = body.get("spec") or {}
    names = spec.get("names") or {}
    schemas = {
        str(v.get("name")): (v.get("schema") or {}).get("openAPIV3Schema") or {}
        for v in spec.get("versions") or ()
    }
    return (
        str(spec.get("group", "")),
        str(names.get("kind", "")),
        str(spec.get("scope", "")),
        schemas,
    )
