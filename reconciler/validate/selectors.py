"""Parse selector shapes shared by every policy kind into domain values.

Label selectors, Karmada's ClusterAffinity, dro's `targetClusters` and weight rules, and
tolerations all arrive as plain mappings; this module turns them into the frozen values the
scheduler and renderer match with.

Called by `validate.dependencies`, `validate.guard` and `validate.policies`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast

from reconciler.domain import (
    ClusterAffinity,
    FieldRequirement,
    LabelRequirement,
    LabelSelector,
    ResourceSelector,
    Toleration,
)


def label_selector(raw: Mapping[str, Any] | None) -> LabelSelector | None:
    """A metav1.LabelSelector, or None when absent."""
    if raw is None:
        return None
    expressions = tuple(
        LabelRequirement(
            key=e["key"],
            operator=e["operator"],
            values=tuple(str(v) for v in e.get("values") or ()),
        )
        for e in raw.get("matchExpressions") or ()
    )
    labels = {str(k): str(v) for k, v in (raw.get("matchLabels") or {}).items()}
    return LabelSelector(match_labels=MappingProxyType(labels), match_expressions=expressions)


def karmada_affinity(raw: Mapping[str, Any] | None) -> ClusterAffinity:
    """Karmada's ClusterAffinity: clusterNames, labelSelector, fieldSelector, exclude."""
    raw = raw or {}
    names = raw.get("clusterNames")
    fields = tuple(
        FieldRequirement(
            key=e["key"],
            operator=e["operator"],
            values=tuple(str(v) for v in e.get("values") or ()),
        )
        for e in (raw.get("fieldSelector") or {}).get("matchExpressions") or ()
    )
    return ClusterAffinity(
        names=tuple(names) if names else None,
        label_selector=label_selector(raw.get("labelSelector")),
        field_selector=fields,
        exclude=tuple(raw.get("exclude") or ()),
    )


def parse_label_term(term: str) -> tuple[str, str]:
    """`key=value` from dro's label targets; raises ValueError on any other shape."""
    key, sep, value = term.partition("=")
    if not sep or not key:
        raise ValueError(f"label target {term!r} must look like key=value")
    return key.strip(), value.strip()


def target_clusters(raw: Sequence[Mapping[str, Any]] | None) -> tuple[ClusterAffinity, ...]:
    """dro's `targetClusters`: each value is an alternative (ORed) cluster term."""
    terms: list[ClusterAffinity] = []
    for entry in raw or ():
        if entry["selectorType"] == "name":
            terms.append(ClusterAffinity(names=tuple(entry["values"])))
            continue
        for value in entry["values"]:
            key, label = parse_label_term(value)
            selector = LabelSelector(match_labels=MappingProxyType({key: label}))
            terms.append(ClusterAffinity(label_selector=selector))
    return tuple(terms)


def dro_cluster_term(raw: Mapping[str, Any]) -> ClusterAffinity:
    """dro's `{clusters: [...]}` / `{names: [...]}` and/or `{labels: {...}}` cluster term."""
    names = raw.get("clusters") or raw.get("names")
    labels = raw.get("labels")
    return ClusterAffinity(
        names=tuple(names) if names else None,
        label_selector=(
            LabelSelector(
                match_labels=MappingProxyType({str(k): str(v) for k, v in labels.items()})
            )
            if labels
            else None
        ),
    )


def tolerations(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Toleration, ...]:
    """core/v1 tolerations; `operator` defaults to Equal as in Kubernetes."""
    return tuple(
        Toleration(
            key=t.get("key") or "",
            operator=cast(Any, t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=t.get("effect") or "",
            seconds=t.get("tolerationSeconds"),
        )
        for t in raw or ()
    )


def resource_selector(raw: Mapping[str, Any], default_namespace: str | None) -> ResourceSelector:
    """A resource selector; an empty namespace takes `default_namespace` (Karmada's webhook)."""
    return ResourceSelector(
        api_version=raw["apiVersion"],
        kind=raw["kind"],
        namespace=raw.get("namespace") or default_namespace,
        name=raw.get("name") or None,
        label_selector=label_selector(raw.get("labelSelector")),
    )
