"""Drains one step at a time for workloads that re-balancing does not move: StaticWeight and
Duplicated workloads, workloads whose replicas an override sets, and those under Karmada's
kinds. For them the engine drops every draining cluster in one pass (it is no longer a
candidate: the ClusterLifecycle filter); under a disruption budget (`disruption.budget_of`)
this step keeps the draining clusters the budget has no room for, as they were, for a later
pass. A workload without a budget is left as the engine decided.

Out of service before this pass, as `schedule.disruption` counts it:

- *leaving*: clusters the workload is no longer on whose copies are still observed there (a
  removal not yet done), and its retiring copies;
- *entering*: clusters it is on whose copies are not observed Healthy (`disruption.unhealthy`).

The room left (`disruption.room`) is how many draining clusters it may leave now, the first by
name first; each one left is a step. A divided workload's replicas from the clusters left are
re-divided onto the others by the engine; a cluster kept gets back what it ran, taken from the
clusters that gained the most (ties by name), so the total stays. A Duplicated workload just
keeps the cluster. The next step waits until what the last one changed is no longer in flight:
the clusters that gained replicas observed Healthy, the cluster left observed without the
workload. The same rule `disruption.Guard` applies to moves; a cluster not observed (no
kubeconfig, an offline pass) or suspended proves nothing and is not counted.

A kept cluster is recorded as waiting (`Disruption.waiting`) with the budget's reason, so
`dro explain` and `status.disruption` say why it is still there.

Called by `schedule.disruption` and `schedule.engine`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

import numpy as np

from reconciler.domain import Decision, DisruptionBudget, Observation, Placed, ResourceKey, Waiting
from reconciler.domain.disruption import in_flight_text
from reconciler.schedule import disruption
from reconciler.schedule.fleet import Fleet, IntArray


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One workload's drain step this pass, for its `disruption.Guard`."""

    decision: Decision
    """The engine's decision with the kept clusters back."""
    allowed: int
    leaving: frozenset[str]
    """Clusters out of service on their way off: left this pass or still being removed."""
    entering: frozenset[str]
    """Clusters gaining copies this pass, or whose copies are not yet Healthy."""
    waiting: tuple[Waiting, ...]
    """The draining clusters kept for a later pass, with why."""
    rows: IntArray
    """Fleet rows whose usage the kept clusters change, and by how many replicas each."""
    replicas: IntArray


def hold(
    fleet: Fleet,
    budget: DisruptionBudget | None,
    before: Decision | None,
    decided: Decision,
    *,
    divides: bool,
) -> Step | None:
    """The step of a workload that re-balancing does not move, under `budget`; None without a
    budget, a previous decision, or anything in flight or draining. `divides`: its replicas
    are divided (StaticWeight), not duplicated."""
    if budget is None or before is None or decided.unschedulable is not None:
        return None
    was = {p.cluster: p.replicas for p in before.clusters}
    now = {p.cluster: p.replicas for p in decided.clusters}
    dropped = sorted(
        name
        for name in was
        if name in fleet.index
        and fleet.draining[fleet.index[name]]
        and (name not in now or (divides and not now[name]))
    )
    observations = fleet.observations
    leaving = _still_there(observations, decided.key, fleet, set(was))
    leaving |= {p.cluster for p in before.retiring}
    entering = disruption.unhealthy(observations, decided.key, was)
    if not dropped and not leaving and not entering:
        return None
    allowed = budget.of(len(was))
    room = disruption.room(budget, len(was), max(len(leaving), len(entering)))
    left, kept = dropped[:room], dropped[room:]
    clusters, taken = _keep(fleet, decided, before, kept, divides=divides)
    gained = {
        p.cluster
        for p in clusters
        if p.cluster not in was or (p.replicas or 0) > (was[p.cluster] or 0)
    }
    leaving |= set(left)
    entering |= gained
    count = max(len(leaving), len(entering))
    reason = (
        f"disruption budget: {count} cluster{'s' if count != 1 else ''} in flight of "
        f"{allowed} allowed ({in_flight_text(leaving, entering)})"
    )
    now_kept = {p.cluster: p.replicas or 0 for p in clusters if p.cluster in kept}
    waiting = tuple(Waiting(name, now_kept.get(name, 0), reason) for name in kept)
    changes = dict(now_kept)
    for name, count in taken.items():
        changes[name] = changes.get(name, 0) - count
    names = sorted(n for n, c in changes.items() if c)
    return Step(
        decision=replace(decided, clusters=clusters) if kept else decided,
        allowed=allowed,
        leaving=frozenset(leaving),
        entering=frozenset(entering),
        waiting=waiting,
        rows=np.array([fleet.index[n] for n in names], dtype=np.int64),
        replicas=np.array([changes[n] for n in names], dtype=np.int64),
    )


def _keep(
    fleet: Fleet, decided: Decision, before: Decision, kept: list[str], *, divides: bool
) -> tuple[tuple[Placed, ...], dict[str, int]]:
    """The decision's clusters with `kept` back as `before` had them (in the fleet's order),
    and the replicas taken from each other cluster to pay for them: a divided workload's
    total stays; a duplicated one's clusters each run the whole count anyway."""
    if not kept:
        return decided.clusters, {}
    was = {p.cluster: p for p in before.clusters}
    counts = {p.cluster: p.replicas for p in decided.clusters}
    taken: dict[str, int] = {}
    for name in kept:
        owed = was[name].replicas or 0
        unpaid = _take(counts, was, owed, taken, kept) if divides else 0
        counts[name] = was[name].replicas if not divides else owed - unpaid
    emptied = {n for n in counts if (n in taken or n in kept) and divides and not counts[n]}
    placed = {p.cluster: p for p in decided.clusters}
    clusters = tuple(
        placed[name]._replace(replicas=replicas) if name in placed else Placed(name, replicas)
        for name, replicas in sorted(counts.items(), key=lambda item: fleet.index[item[0]])
        if name not in emptied
    )
    return clusters, taken


def _take(
    counts: dict[str, int | None],
    was: Mapping[str, Placed],
    owed: int,
    taken: dict[str, int],
    kept: Collection[str],
) -> int:
    """Take `owed` replicas, one at a time, from the clusters that gained the most over `was`
    (ties by name), then, when the workload scaled down meanwhile, from those that run the
    most, never from the `kept` clusters; returns what could not be taken."""
    while owed > 0:
        gains = {
            name: (count or 0) - ((was[name].replicas or 0) if name in was else 0)
            for name, count in counts.items()
            if name not in kept
        }
        if not any(g > 0 for g in gains.values()):
            gains = {n: c or 0 for n, c in counts.items() if n not in kept}
        name = min(
            (n for n, g in gains.items() if g > 0), key=lambda n: (-gains[n], n), default=None
        )
        if name is None:
            return owed
        counts[name] = (counts[name] or 0) - 1
        taken[name] = taken.get(name, 0) + 1
        owed -= 1
    return 0


def _still_there(
    observations: Mapping[str, Observation], key: ResourceKey, fleet: Fleet, held: set[str]
) -> set[str]:
    """Clusters the workload is not on whose fresh observation still finds it: a removal
    that is not done yet."""
    return {
        name
        for name in fleet.name_list
        if name not in held
        and (seen := observations.get(name)) is not None
        and not seen.stale
        and key in seen.health
    }
