"""Bundling: the objects a workload needs follow it to exactly its clusters.

A ConfigMap, Secret, PVC, ServiceAccount (with its RBAC), Service, HPA, PDB or Namespace that
a pod-running workload needs (`dependencies.find`) and that no policy places explicitly goes
to the union of the clusters its dependents are rendered on (old copies of a move included),
instead of the default placement. One that a policy selects keeps that policy's placement.
A Namespace placed so also goes wherever any other object in it is rendered (a ConfigMap no
workload needs goes by the default placement): an object never lands where its Namespace is
not.

Called by `schedule` and `schedule.moving`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from reconciler.domain import Decision, Diagnosis, Placed, ResourceKey, Trigger, TriggerCode
from reconciler.schedule import facts


def follow(
    dependents: Mapping[ResourceKey, tuple[ResourceKey, ...]],
    order: Sequence[facts.Claimed],
    decisions: Sequence[Decision],
) -> list[Decision]:
    """`decisions` (aligned with `order`), each unclaimed dependency placed where the
    workloads that need it are."""
    if not dependents:
        return list(decisions)
    by_key = {d.key: d for d in decisions}
    result: list[Decision] = []
    namespaces: list[int] = []
    for claimed, decision in zip(order, decisions, strict=True):
        needed_by = dependents.get(decision.key)
        if not needed_by or claimed.ref is not None or claimed.workload.replicas is not None:
            result.append(decision)
            continue
        clusters = sorted(
            {p.cluster for key in needed_by if key in by_key for p in by_key[key].rendered()}
        )
        names = ", ".join(str(key) for key in needed_by)
        # the default placement's verdicts do not apply: the dependents decided
        diagnosis = Diagnosis(
            strategy=decision.diagnosis.strategy, trigger=Trigger(TriggerCode.BUNDLED, names)
        )
        if (decision.key.group, decision.key.kind) == ("", "Namespace"):
            namespaces.append(len(result))
        result.append(placed_for(decision, tuple(Placed(c, None) for c in clusters), diagnosis))
    for index in namespaces:
        result[index] = _covering(result[index], result)
    return result


def _covering(namespace: Decision, decisions: Sequence[Decision]) -> Decision:
    """A bundled Namespace's decision, widened to every cluster an object in it is rendered
    on (after bundling)."""
    held = {p.cluster for p in namespace.clusters}
    inside = {
        p.cluster for d in decisions if d.key.namespace == namespace.key.name for p in d.rendered()
    }
    if inside <= held:
        return namespace
    clusters = tuple(Placed(c, None) for c in sorted(held | inside))
    return replace(namespace, clusters=clusters)


def placed_for(decision: Decision, clusters: tuple[Placed, ...], diagnosis: Diagnosis) -> Decision:
    """A decision that another decides for this object: exactly these clusters, the given
    diagnosis, and none of its own placement's verdicts, moves or retiring copies."""
    return replace(
        decision,
        clusters=clusters,
        retiring=(),
        unschedulable=None,
        diagnosis=diagnosis,
        recorded=None,
        moves=(),
    )
