"""A workload that falls to `defaultPlacement` by what looks like a slip: warned at its line.

`defaultPlacement` in dro.yaml places every workload that no placement policy claims, which is
how a repo places its odds and ends on purpose (the example repo's `platform/status-page`). A
typo in a namespace takes a workload to it silently too: `namespace: shopp` leaves the shop's
policy, and a Duplicated default runs 3 replicas on each of 5 clusters instead of 3 in all.

The rule, so that a repo that uses the default on purpose stays quiet: a workload is warned
about when no policy claims it, it is not bundled with a workload that a policy places
(`dependencies`), and some placement policy *would* select it, by kind, name and labels, in
another namespace N, while its own namespace is close to N (`difflib`, ratio ≥ 0.75) or is not
written at all (kubectl's `default`). The warning names the workload, N and that policy, the
replicas, and the clusters `defaultPlacement` targets.

Called by `validate`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection, Iterable, Mapping

from reconciler.domain import (
    Cluster,
    PlacementPolicy,
    ResourceKey,
    SchedulerConfig,
    Workload,
    claims,
)
from reconciler.errors import Problem, Severity

_REPELLING = ("NoSchedule", "NoExecute")
_BY_LABELS = 2
"""`ResourceSelector.specificity` of a selector by labels (3 is by name, 1 kind only)."""
CLOSE = 0.75
"""How alike two namespace names must be (difflib's ratio) to count as a likely typo."""


def warnings(
    objects: Iterable[Workload],
    placement: Collection[PlacementPolicy],
    claimed_by: Mapping[ResourceKey, PlacementPolicy | None],
    bundled: Mapping[ResourceKey, tuple[ResourceKey, ...]],
    config: SchedulerConfig,
    clusters: Iterable[Cluster],
) -> list[Problem]:
    """A WARNING per workload that the default placement takes by a likely slip."""
    targets = _default_targets(config, clusters)
    found = []
    for workload in objects:
        if workload.key not in claimed_by or claimed_by[workload.key] is not None:
            continue
        if workload.key.namespace == "":
            continue
        if any(claimed_by.get(owner) is not None for owner in bundled.get(workload.key, ())):
            continue
        meant = _meant(workload, placement)
        if meant is None:
            continue
        namespace, policy = meant
        found.append(_warning(workload, namespace, policy, targets, config))
    return found


def _meant(
    workload: Workload, placement: Iterable[PlacementPolicy]
) -> tuple[str, PlacementPolicy] | None:
    """The namespace the workload was most likely meant for, and the policy selecting it."""
    written = (workload.manifest.get("metadata") or {}).get("namespace")
    best: tuple[tuple[float, int] | tuple[int, float], str, PlacementPolicy] | None = None
    for policy in sorted(placement, key=lambda p: (p.origin.path, p.origin.line)):
        for namespace in _namespaces(policy):
            if namespace == workload.key.namespace:
                continue
            moved = dataclasses.replace(workload, key=workload.key._replace(namespace=namespace))
            if not claims.policy_selects(policy, moved):
                continue
            ratio = difflib.SequenceMatcher(None, workload.key.namespace, namespace).ratio()
            specific = claims.best_specificity(policy.selectors, moved)
            if written and ratio < CLOSE:
                continue
            # with no namespace written, only a selector by name or labels says it was meant
            if not written and specific < _BY_LABELS:
                continue
            rank = (ratio, specific) if written else (specific, ratio)
            if best is None or rank > best[0]:
                best = (rank, namespace, policy)
    return None if best is None else (best[1], best[2])


def _namespaces(policy: PlacementPolicy) -> list[str]:
    """The namespaces a policy selects in by name (a namespaced policy: its own)."""
    if policy.namespaced and policy.ref.namespace:
        return [policy.ref.namespace]
    return sorted({s.namespace for s in policy.selectors if s.namespace})


def _default_targets(config: SchedulerConfig, clusters: Iterable[Cluster]) -> list[str]:
    """The clusters defaultPlacement's targetClusters match (all when it names none) and
    whose NoSchedule and NoExecute taints it tolerates, drained and cordoned ones aside."""
    placement = config.default_placement
    return sorted(
        c.name
        for c in clusters
        if not (c.drain or c.cordon)
        and (not placement.targets or any(t.matches(c.name, c.labels) for t in placement.targets))
        and all(
            taint.effect not in _REPELLING or any(t.tolerates(taint) for t in placement.tolerations)
            for taint in c.taints
        )
    )


def _warning(
    workload: Workload,
    namespace: str,
    policy: PlacementPolicy,
    targets: list[str],
    config: SchedulerConfig,
) -> Problem:
    key = workload.key
    written = "namespace" in (workload.manifest.get("metadata") or {})
    how = config.default_placement.replicas
    if workload.replicas is None:
        what = "a copy on each"
    elif not how.strategy.divides:
        what = f"{workload.replicas} replicas on each"
    else:
        what = f"{workload.replicas} replicas divided ({how.strategy})"
    where = ", ".join(targets) if targets else "no cluster"
    if workload.replicas is not None and not how.strategy.divides and len(targets) > 1:
        where += f" ({workload.replicas * len(targets)} in all)"
    said = f"namespace {key.namespace!r}" if written else "no namespace (so 'default')"
    message = (
        f"{key.kind} {key.namespace}/{key.name} has {said}, which no placement policy "
        f"selects, so defaultPlacement places it: {what} of {where}; {policy.ref} "
        f"({policy.origin.path}) selects it in namespace {namespace!r}: did you mean "
        f"{namespace!r}?"
    )
    pointer = "/metadata/namespace" if written else "/metadata"
    return Problem(
        path=workload.origin.path,
        line=workload.origin.line_of(pointer),
        pointer=pointer,
        message=message,
        severity=Severity.WARNING,
    )
