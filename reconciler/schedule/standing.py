"""Standing: which previous decisions a pass may start from, and why the others may not.

The output branch is state, never authority. A previous decision is set aside, and its
workload divided again by its policy as if for the first time, when it is not as dro wrote it
(`Decision.distrusted`, from `statefiles`) or when it contradicts its policy in a way no pass
of dro could have produced:

- a negative replica count, or a cluster listed twice (as a target or as retiring);
- replica counts on a kind without replicas, or a target without a count on one with them;
- a spread constraint it violates: more clusters or groups than `maxGroups`, or fewer than
  `minGroups` (StaticWeight ignores spread, as in Karmada; Karmada's kinds group by region).

Counts that do not add up to the workload's replicas, and clusters that are gone or no longer
candidates, are re-divided by the usual triggers (`triggers.trigger`), which name them.
The new decision's trigger says why its previous one was set aside (`explain`), and so does
`dro plan`, which shows the trigger as the reason of a change.

Called by `schedule`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from reconciler.domain import Cluster, Decision, Placed, ResourceKey, Strategy, Trigger, TriggerCode
from reconciler.schedule import facts, triggers

_UNSAID = (Trigger(), triggers.FIRST)
"""Triggers the set-aside one does not repeat: none, and a bare first placement."""


def vet(
    clusters: Sequence[Cluster],
    order: Iterable[facts.Claimed],
    previous: Mapping[ResourceKey, Decision],
    known: dict[ResourceKey, tuple[facts.Claimed, Decision, str | None]] | None = None,
) -> tuple[dict[ResourceKey, Decision], dict[ResourceKey, str]]:
    """(the previous decisions a pass may start from, workload → why its own was set aside).
    `known` holds the last pass's vetting, on the same clusters (`reuse.Memo.vetted`): a
    decision vetted for the very same claim and decision objects is not vetted again, and
    this pass's vetting replaces it."""
    by_name = {c.name: c for c in clusters}
    kept = dict(previous)
    reasons: dict[ResourceKey, str] = {}
    vetted: dict[ResourceKey, tuple[facts.Claimed, Decision, str | None]] = {}
    for claimed in order:
        key = claimed.workload.key
        before = previous.get(key)
        if before is None:
            continue
        last = known.get(key) if known is not None else None
        if last is None or last[0] is not claimed or last[1] is not before:
            last = (claimed, before, before.distrusted or contradiction(claimed, before, by_name))
        vetted[key] = last
        why = last[2]
        if why is not None:
            del kept[key]
            reasons[key] = why
    for key, before in previous.items():  # a workload no longer in the source: nothing to vet
        if key not in reasons and before.distrusted is not None:
            del kept[key]
    if known is not None:
        known.clear()
        known.update(vetted)
    return kept, reasons


def contradiction(
    claimed: facts.Claimed, before: Decision, clusters: Mapping[str, Cluster]
) -> str | None:
    """Why `before` cannot be a decision of this workload under its policy, or None."""
    for label, entries in (("target", before.clusters), ("retiring", before.retiring)):
        names = [p.cluster for p in entries]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            return f"it lists {label} cluster {twice[0]} twice"
        negative = next((p for p in entries if (p.replicas or 0) < 0), None)
        if negative is not None:
            return f"it has {negative.replicas} {label} replicas on {negative.cluster}"
    has_replicas = claimed.workload.replicas is not None
    for placed in before.clusters:
        if (placed.replicas is not None) != has_replicas:
            return (
                f"it has a replica count on {placed.cluster} for a kind without replicas"
                if has_replicas is False
                else f"it has no replica count on {placed.cluster}"
            )
    return _spread_violation(claimed, before.clusters, clusters)


def _spread_violation(
    claimed: facts.Claimed, placed: Sequence[Placed], clusters: Mapping[str, Cluster]
) -> str | None:
    if claimed.strategy is Strategy.STATIC_WEIGHT or not placed:  # an unschedulable one holds none
        return None
    holding = [
        clusters[p.cluster]
        for p in placed
        if p.cluster in clusters and (p.replicas is None or p.replicas > 0)
    ]
    for constraint in claimed.placement.spread:
        if not claimed.extensions and constraint.by not in ("cluster", "region"):
            continue
        groups = {_group(cluster, constraint.by, constraint.by_label) for cluster in holding}
        spread_by = "clusters" if constraint.by == "cluster" else f"{constraint.by} groups"
        if constraint.max_groups is not None and len(groups) > constraint.max_groups:
            return f"it uses {len(groups)} {spread_by}, above maxGroups {constraint.max_groups}"
        if len(groups) < constraint.min_groups:
            return f"it uses {len(groups)} {spread_by}, below minGroups {constraint.min_groups}"
    return None


def _group(cluster: Cluster, by: str, by_label: bool) -> str:
    if by == "cluster":
        return cluster.name
    if by_label:
        return cluster.labels.get(by, "")
    return {"region": cluster.region, "zone": cluster.zone, "provider": cluster.provider}.get(
        by, cluster.labels.get(by, "")
    )


def explain(decisions: Iterable[Decision], reasons: Mapping[ResourceKey, str]) -> list[Decision]:
    """The decisions, each whose previous one was set aside saying why in its trigger."""
    result = []
    for decision in decisions:
        why = reasons.get(decision.key)
        if why is not None:
            made = decision.diagnosis.trigger
            then = None if made in _UNSAID else made
            trigger = Trigger(TriggerCode.SET_ASIDE, why, then=then)
            diagnosis = replace(decision.diagnosis, trigger=trigger)
            result.append(replace(decision, diagnosis=diagnosis, recorded=None))
            continue
        result.append(decision)
    return result
