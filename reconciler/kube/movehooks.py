"""Data-sync hooks: how a stateful workload's data follows it when it moves.

A stateful move (`reconciler.schedule.moving`) waits in its `Syncing` phase until the data is
in sync on the new cluster. Either of two hooks says so:

- A **hook Job**: a Job in the repo annotated `multicluster.io/data-sync-for: <Kind>/<name>`,
  naming a stateful workload of its namespace. No policy places it: dro renders it on the
  move's target cluster during `Syncing` only, with `DRO_MOVE_FROM`, `DRO_MOVE_TO` and
  `DRO_MOVE_WORKLOAD` in the env of each of its containers, and the move goes on once the Job
  is observed Complete there. The next phase removes it.
- The **annotation** `multicluster.io/data-synced` on the new copy's live object, set by a
  replication operator or by hand
  (`kubectl annotate statefulset/db multicluster.io/data-synced=true`).

A stateful workload with no volume to carry (a StatefulSet without volumeClaimTemplates) has
nothing to sync and leaves `Syncing` at once. Pure: no I/O.

Called by `live.observe`, `render`, `schedule.engine`, `schedule.moving`, `validate` and
`validate.memo`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.domain import Decision, Manifest, ResourceKey, Workload
from reconciler.domain.decision import SYNCING
from reconciler.errors import Problem

SYNC_FOR = "multicluster.io/data-sync-for"
"""On a Job: the stateful workload (`<Kind>/<name>`, same namespace) whose data it syncs."""
DATA_SYNCED = "multicluster.io/data-synced"
"""On a live workload at a move's target: its data is in sync (any non-empty value)."""
_POINTER = "/metadata/annotations/" + SYNC_FOR.replace("/", "~1")


@dataclass(frozen=True, slots=True)
class Hooks:
    """The hooks found in the repo, and what is wrong with them."""

    by_workload: Mapping[ResourceKey, ResourceKey] = field(default_factory=dict)
    """Stateful workload → its hook Job."""
    problems: tuple[Problem, ...] = ()


def find(workloads: Iterable[Workload]) -> Hooks:
    """Every Job annotated `multicluster.io/data-sync-for`, matched to its workload; an
    annotation on anything but a Job, or naming no stateful workload of the repo, or a second
    hook for one workload, is an error at the annotation's line."""
    listed = list(workloads)
    named = {(w.key.kind, w.key.namespace, w.key.name): w for w in listed}
    found: dict[ResourceKey, ResourceKey] = {}
    problems: list[Problem] = []
    for hook in listed:
        value = _annotations(hook.manifest).get(SYNC_FOR)
        if value is None:
            continue
        message = _why_not(hook, value, named, found)
        if message is not None:
            problems.append(
                Problem(
                    path=hook.origin.path,
                    line=hook.origin.line_of(_POINTER),
                    pointer=_POINTER,
                    message=message,
                )
            )
            continue
        kind, _, name = str(value).partition("/")
        found[named[kind, hook.key.namespace, name].key] = hook.key
    return Hooks(by_workload=dict(sorted(found.items())), problems=tuple(problems))


def _why_not(
    hook: Workload,
    value: object,
    named: Mapping[tuple[str, str, str], Workload],
    found: Mapping[ResourceKey, ResourceKey],
) -> str | None:
    if (hook.key.group, hook.key.kind) != ("batch", "Job"):
        return f"{SYNC_FOR} belongs on a Job (batch/v1), not on a {hook.key.kind}"
    kind, _, name = str(value).partition("/")
    if not isinstance(value, str) or not kind or not name or "/" in name:
        return f"{SYNC_FOR} must name a workload as <Kind>/<name>, got {value!r}"
    workload = named.get((kind, hook.key.namespace, name))
    if workload is None:
        return f"{SYNC_FOR} names {kind} {hook.key.namespace}/{name}, which is not in the repo"
    target = workload.key
    if not workload.stateful:
        return f"{target} is not stateful (no StatefulSet, no volume claim): it has no data to sync"
    if target in found:
        return f"{target} already has a data-sync hook: {found[target]}"
    return None


def _annotations(manifest: Manifest) -> Mapping[str, Any]:
    annotations = (manifest.get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def has_volumes(workload: Workload) -> bool:
    """Whether a stateful workload carries data in volumes: claim templates, or a pod volume
    from a PersistentVolumeClaim. Without either, a move has nothing to sync."""
    spec = workload.manifest.get("spec")
    if not isinstance(spec, Mapping):
        return False
    if spec.get("volumeClaimTemplates"):
        return True
    template = spec.get("template")
    pod = template.get("spec") if isinstance(template, Mapping) else None
    volumes = pod.get("volumes") if isinstance(pod, Mapping) else None
    return any(isinstance(v, Mapping) and "persistentVolumeClaim" in v for v in volumes or ())


def with_move_env(manifest: Manifest, source: str, target: str, workload: ResourceKey) -> Manifest:
    """A hook Job's manifest with the move it serves in each container's env."""
    result: dict[str, Any] = copy.deepcopy(dict(manifest))
    pod = ((result.get("spec") or {}).get("template") or {}).get("spec") or {}
    values = {"DRO_MOVE_FROM": source, "DRO_MOVE_TO": target, "DRO_MOVE_WORKLOAD": str(workload)}
    for group in ("initContainers", "containers"):
        for container in pod.get(group) or ():
            env = [e for e in container.get("env") or () if e.get("name") not in values]
            container["env"] = [*env, *({"name": k, "value": v} for k, v in values.items())]
    return result


def syncing(decision: Decision | None) -> tuple[str, str] | None:
    """(old cluster, new cluster) of a decision whose stateful move is in its Syncing phase."""
    entry = decision.moving if decision is not None else None
    if entry is None or entry.phase != SYNCING or decision is None or not decision.clusters:
        return None
    return entry.cluster, decision.clusters[0].cluster


def hook_env(
    hooks: Mapping[ResourceKey, ResourceKey], decisions: Iterable[Decision]
) -> dict[ResourceKey, tuple[str, str, ResourceKey]]:
    """Hook Job → (old cluster, new cluster, workload) of the move it syncs this pass."""
    by_key = {d.key: d for d in decisions}
    found = {}
    for workload, hook in hooks.items():
        move = syncing(by_key.get(workload))
        if move is not None:
            found[hook] = (move[0], move[1], workload)
    return found
