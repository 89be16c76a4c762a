"""Clusters removed from the source while the last pass still placed replicas on them.

Called by `validate`.
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.domain import Decision, Spec


def removed_clusters(spec: Spec, previous: Iterable[Decision]) -> list[str]:
    """Warnings for clusters whose file was deleted while the last pass still placed replicas
    there (target or retiring), naming them: they are placed elsewhere at once, and dro can no
    longer reach the cluster to remove the old copies."""
    known = {c.name for c in spec.clusters}
    decisions = list(previous)
    names = {p.cluster for d in decisions for p in d.clusters}
    names.update(p.cluster for d in decisions for p in d.retiring)
    missing = names - known
    if not missing:
        return []
    held: dict[str, list[str]] = {}
    stranded = [
        decision
        for decision in decisions
        if any(p.cluster in missing for p in (*decision.clusters, *decision.retiring))
    ]
    for decision in sorted(stranded, key=lambda d: d.key.sort_key):
        for placed in (*decision.clusters, *decision.retiring):
            if placed.cluster not in known:
                runs = decision.effective.get(placed.cluster, placed.replicas)  # an override's
                count = "" if runs is None or placed.replicas is None else f"{runs}× "
                held.setdefault(placed.cluster, []).append(f"{count}{decision.key}")
    return [
        f"cluster {name} was removed while it still holds {', '.join(objects)}: they are "
        f"placed elsewhere, but dro can no longer reach {name} to delete the old copies; "
        "delete them there by hand (next time drain a cluster with spec.drain: true before "
        "removing its file)"
        for name, objects in sorted(held.items())
    ]
