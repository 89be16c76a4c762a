"""Takeover: whether apply may touch an object that exists on a cluster and that dro did not
create, and whether an object on a cluster is dro's at all.

dro holds an object when its inventory says it created or adopted it. Anything else that exists
under a rendered name belongs to someone else, and `placement.apply.takeover` decides:

- `IfNoDiff` (the default): adopt it only when it already equals what dro would apply: a
  server-side dry run of the rendered manifest over it changes nothing but dro's own
  bookkeeping (its `managed-by` label and `multicluster.io/placement` annotations);
- `Always`: adopt it (Karmada's `conflictResolution: Overwrite`);
- `Never`: never adopt it (Karmada's default, `Abort`).

An object that is not adopted is reported, with its source file and line and why, and left
exactly as it is. An adopted object is never deleted by a prune: it is released.

Called by 7 modules, among them `live`, `pipeline.clusters`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.domain import ResourceKey, Spec
from reconciler.kube import inventory
from reconciler.kube.client import FIELD_MANAGER, Connection

IF_NO_DIFF, ALWAYS, NEVER = "IfNoDiff", "Always", "Never"
CORRECT, REPORT = "Correct", "Report"
"""`placement.apply.drift`: apply a drifted object again, or only report it."""
VOLATILE = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")
"""Metadata the API server sets on its own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Where a rendered object comes from, and its takeover and drift rules."""

    where: str = ""
    """`FILE:LINE` of the source manifest, for reports; empty when not known."""
    takeover: str = IF_NO_DIFF
    drift: str = CORRECT


def provenance(spec: Spec) -> dict[ResourceKey, Provenance]:
    """Each source object's `FILE:LINE`, takeover and drift rules (from the policy that
    claims it, or dro.yaml's default placement), for apply's reports and decisions. The
    same spec (a frozen value) gives the same mapping, made once: callers must not change
    it."""
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is spec:
        return last[1]
    found = _provenance(spec)
    _LAST[:] = [(spec, found)]
    return found


_LAST: list[tuple[Spec, dict[ResourceKey, Provenance]]] = []
"""The last spec `provenance` was asked for, and its answer."""


def _provenance(spec: Spec) -> dict[ResourceKey, Provenance]:
    found = {}
    for workload in spec.workloads:
        policy = (spec.claims or {}).get(workload.key)
        placement = policy.placement if policy is not None else spec.config.default_placement
        found[workload.key] = Provenance(
            where=f"{workload.origin.path}:{workload.origin.line}",
            takeover=placement.takeover,
            drift=placement.drift,
        )
    return found


def labelled(live: Mapping[str, Any]) -> bool:
    """Whether a live object carries dro's `managed-by` label."""
    labels = (live.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(inventory.MANAGED_BY[0]) == inventory.MANAGED_BY[1])


def applied_by_dro(live: Mapping[str, Any]) -> bool:
    """Whether dro has applied this live object: it carries dro's label and dro is one of its
    field managers. A pre-existing object dro never wrote has neither."""
    fields = (live.get("metadata") or {}).get("managedFields") or ()
    managers = {entry.get("manager") for entry in fields if isinstance(entry, Mapping)}
    return labelled(live) and FIELD_MANAGER in managers


def refusal(
    connection: Connection, obj: Mapping[str, Any], live: Mapping[str, Any], rule: str
) -> str | None:
    """Why `obj` may not take over `live` under `rule`, or None when it may. A dry run the
    API rejects raises `kube.Rejected`."""
    if rule == ALWAYS:
        return None
    if rule == NEVER:
        return "takeover is Never"
    preview = connection.apply(obj, dry_run=True)
    differences = differences_of(own(comparable(live)), own(comparable(preview)))
    if not differences:
        return None
    return (
        f"it differs from the rendered manifest at {', '.join(differences)} "
        "(takeover IfNoDiff adopts only an identical object; set placement.apply.takeover: "
        "Always to adopt it anyway)"
    )


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without what the server changes on its own: status and bookkeeping."""
    result = {k: v for k, v in obj.items() if k != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in VOLATILE}
    result["metadata"] = metadata
    return result


def own(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without dro's bookkeeping (its label and placement annotations), and without the
    empty label and annotation maps that removing them leaves."""
    result = dict(obj)
    result["metadata"] = _without_bookkeeping(obj.get("metadata") or {})
    spec = obj.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if isinstance(template, Mapping) and isinstance(template.get("metadata"), Mapping):
        template = {**template, "metadata": _without_bookkeeping(template["metadata"])}
        result["spec"] = {**spec, "template": template}  # type: ignore[dict-item]
    return result


def _without_bookkeeping(metadata: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(metadata)
    for field, key in (
        ("labels", inventory.MANAGED_BY[0]),
        ("annotations", inventory.PLACEMENT_ANNOTATION),
    ):
        values = {k: v for k, v in (result.get(field) or {}).items() if k != key}
        if values:
            result[field] = values
        else:
            result.pop(field, None)
    return result


def differences_of(live: Any, wanted: Any, path: str = "") -> list[str]:
    """The paths (`.spec.replicas`) where `live` differs from `wanted`, first 5."""
    if isinstance(live, Mapping) and isinstance(wanted, Mapping):
        found: list[str] = []
        for key in sorted(set(live) | set(wanted)):
            found += differences_of(live.get(key), wanted.get(key), f"{path}.{key}")
        return found[:5]
    return [] if live == wanted else [path or "."]
