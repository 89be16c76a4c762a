"""Clusters removed from the source while the last pass still placed replicas on them.

Called by `validate`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

from reconciler.domain import Decision, Spec


class Holders:
    """The clusters that a list of decisions places or retires replicas on, kept from one call
    to the next by the decisions' identity: a pass of `dro run` reads back mostly the very
    decision objects of the pass before (`branch.readback`), so only the new ones are walked."""

    def __init__(self) -> None:
        self._decisions: dict[int, Decision] = {}
        self._count: Counter[str] = Counter()
        self._lock = threading.Lock()

    def names(self, decisions: Iterable[Decision]) -> set[str]:
        """Every cluster a decision in `decisions` places or retires replicas on."""
        now = {id(d): d for d in decisions}
        with self._lock:
            last = self._decisions
            for gone in last.keys() - now.keys():
                self._count.subtract(_clusters(last[gone]))
            for new in now.keys() - last.keys():
                self._count.update(_clusters(now[new]))
            self._decisions = now
            return {name for name, count in self._count.items() if count > 0}


def _clusters(decision: Decision) -> list[str]:
    """The clusters `decision` places or retires replicas on, once per entry."""
    return [p.cluster for p in (*decision.clusters, *decision.retiring)]


HOLDERS = Holders()
"""The process's `Holders` for the passes of `dro run` and each command's one call."""


def removed_clusters(spec: Spec, previous: Iterable[Decision]) -> list[str]:
    """Warnings for clusters whose file was deleted while the last pass still placed replicas
    there (target or retiring), naming them: they are placed elsewhere at once, and dro can no
    longer reach the cluster to remove the old copies."""
    known = {c.name for c in spec.clusters}
    decisions = list(previous)
    missing = HOLDERS.names(decisions) - known
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
