"""Normalise `clusters/<name>.yaml` documents into `Cluster` values.

Quantities are parsed with Kubernetes' own rules (`quantity.parse_quantity`) into floats in base
units: cores for cpu, bytes for memory and storage, counts for pods and extended resources.

Called by `validate.files`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from reconciler.domain import Cluster, Document, Taint, durations
from reconciler.errors import Problem
from reconciler.kube import quantity
from reconciler.yamlio import escape_pointer_token

QUANTITY_FIELDS = ("capacity", "allocated", "largestNodeFree")


def _problem(doc: Document, pointer: str, message: str) -> Problem:
    return Problem(
        path=doc.origin.path, line=doc.origin.line_of(pointer), pointer=pointer, message=message
    )


def quantities(doc: Document, field: str, problems: list[Problem]) -> Mapping[str, float]:
    """Parse one resource map of a Cluster spec, reporting each bad value with its line."""
    parsed: dict[str, float] = {}
    for resource, value in (doc.body.get("spec", {}).get(field) or {}).items():
        pointer = f"/spec/{field}/{escape_pointer_token(resource)}"
        message = quantity.problem(value)
        if message is not None:
            problems.append(_problem(doc, pointer, message))
            continue
        amount = float(quantity.parse_quantity(value))
        if amount < 0:
            problems.append(_problem(doc, pointer, f"{quantity.shown(value)} is negative"))
            continue
        parsed[resource] = amount
    return MappingProxyType(parsed)


def cluster(doc: Document, problems: list[Problem]) -> Cluster:
    """A `Cluster` from a schema-valid document; quantity problems go to `problems`."""
    meta = doc.body["metadata"]
    spec: Mapping[str, Any] = doc.body.get("spec") or {}
    amounts = {field: quantities(doc, field, problems) for field in QUANTITY_FIELDS}
    capacity, allocated = amounts["capacity"], amounts["allocated"]
    for resource, used in allocated.items():
        if resource in capacity and used > capacity[resource]:
            pointer = f"/spec/allocated/{escape_pointer_token(resource)}"
            message = f"allocated {resource} exceeds the cluster's capacity"
            problems.append(_problem(doc, pointer, message))
    return Cluster(
        name=meta["name"],
        origin=doc.origin,
        labels=MappingProxyType({str(k): str(v) for k, v in (meta.get("labels") or {}).items()}),
        capacity=capacity,
        allocated=allocated,
        largest_node_free=amounts["largestNodeFree"],
        taints=tuple(
            Taint(
                key=t["key"],
                value=str(t.get("value", "")),
                effect=t["effect"],
                time_added=_time_added(doc, i, t.get("timeAdded"), problems),
            )
            for i, t in enumerate(spec.get("taints") or ())
        ),
        cost=MappingProxyType({k: float(v) for k, v in (spec.get("cost") or {}).items()}),
        kubeconfig_context=(spec.get("kubeconfig") or {}).get("context"),
        in_cluster=bool((spec.get("kubeconfig") or {}).get("inCluster", False)),
        suspend=bool(spec.get("suspend", False)),
        cordon=bool(spec.get("cordon", False)),
        drain=bool(spec.get("drain", False)),
        zones=tuple(str(z) for z in spec.get("zones") or ()),
    )


def _time_added(doc: Document, index: int, raw: Any, problems: list[Problem]) -> float | None:
    """A taint's `timeAdded` as epoch seconds; a time that does not parse is a problem."""
    if raw is None:
        return None
    try:
        return durations.epoch(str(raw))
    except ValueError as error:
        problems.append(_problem(doc, f"/spec/taints/{index}/timeAdded", f"timeAdded: {error}"))
        return None
