"""Moves in flight: make-before-break across passes, the old copies kept as `retiring`.

A stateless move (re-balancing, `keep_retiring`) keeps what the last pass rendered on each
cluster it leaves until the new copies are observed Healthy, then drops it.

A stateful move goes in phases recorded on the retiring entry (`step`).

A stateful workload that runs whole (`placing.one_home`) changes cluster only when it must: its
cluster drains, is no longer a candidate, or a Fresh request asks. The old copy holds the data,
so the decision keeps it as a `retiring` entry whose `phase` (and `since`) says where the move
stands; one phase per pass at most:

- `Provisioning`: the new copy is rendered on the target at full size, beside the old one,
  which keeps its replicas. Over when the new copy is observed Healthy.
- `Syncing`: the data-sync hook runs on the target (`reconciler.kube.movehooks`). Over when the
  data is in sync: the hook Job is Complete there, or the new copy's live object carries
  `multicluster.io/data-synced`, or there is no volume to carry.
- `CutOver`: the old copy is scaled to zero, its volumes kept; the new copy serves. Over when
  the old cluster is observed with the copy scaled down (Healthy at zero).
- `Done`: the old copy is no longer rendered, so apply prunes it with the objects bundled with
  it (standalone PVCs included; the claims of `volumeClaimTemplates` follow the StatefulSet's
  `persistentVolumeClaimRetentionPolicy`, kept by default). The next pass drops the entry.

A cluster dro does not observe (no kubeconfig, or an offline pass) proves each step at the next
pass, as for stateless moves; a stale observation (unreachable) proves nothing.

A failover goes through the same phases (DESIGN: a stateful workload moves "by drain, failover
or Fresh, through the phases"): the new copy is provisioned, the data-sync hook restores the
data (the old copy cannot serve it), and the move waits in `Syncing` until the hook completes or
the annotation says so. Should the old cluster return before the cut-over, its copy is still
the one that serves. A failed old cluster cannot be seen scaled down, so `CutOver` ends at once;
its leftovers are pruned when it returns.

When the target changes mid-move, before the cut-over the move starts again from the old copy
(back to the old cluster, it is cancelled); from the cut-over on, the new copy serves and a new
move starts from it. An old cluster whose file is gone has no copy to keep: the workload just
goes.

Called by `schedule`, `schedule.engine`, `schedule.overflow` and `schedule.selecting`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from reconciler.domain import (
    Decision,
    Diagnosis,
    Placed,
    Placement,
    ResourceKey,
    Strategy,
    Trigger,
    TriggerCode,
    Workload,
)
from reconciler.domain.decision import CUT_OVER, DONE, PROVISIONING, SYNCING
from reconciler.kube import health, movehooks
from reconciler.schedule import bundle
from reconciler.schedule.fleet import Fleet


def keep_retiring(fleet: Fleet, before: Decision, decided: Decision) -> Decision:
    """A stateless move: while the copies on the workload's clusters are not observed Healthy
    (`Fleet.settled`), each cluster the move is retiring keeps what the last pass rendered
    there; once they are, the retiring copies go."""
    if fleet.settled(decided.key, (p.cluster for p in decided.clusters)):
        return decided
    target = {p.cluster: p.replicas or 0 for p in decided.clusters}
    was = {p.cluster: p.replicas or 0 for p in before.clusters}
    kept: list[Placed] = []
    for placed in before.retiring:
        if placed.cluster not in fleet.index:
            continue  # its file is gone: nothing there to keep
        extra = was.get(placed.cluster, 0) + (placed.replicas or 0) - target.get(placed.cluster, 0)
        if extra > 0:
            kept.append(Placed(placed.cluster, extra))
    return replace(decided, retiring=tuple(kept)) if kept else decided


def runs_whole(extensions: bool, workload: Workload, placement: Placement) -> bool:
    """Whether a workload is stateful and kept whole on one cluster: a StatefulSet, or one
    with a volume claim, under a dro policy (`extensions`) that does not `allowSplit` it."""
    return (
        extensions
        and workload.stateful
        and workload.replicas is not None
        and not placement.allow_split
        and placement.replicas.strategy.divides
    )


def step(
    fleet: Fleet,
    before: Decision | None,
    decided: Decision,
    *,
    at: str,
    hook: ResourceKey | None,
    volumes: bool,
) -> Decision:
    """The decision of a workload that runs whole, with its move begun, advanced or ended."""
    entry = before.moving if before is not None else None
    was = _home(before)
    home = _home(decided)
    if entry is None or before is None:
        return _begin(fleet, decided, was, at)
    if not decided.clusters:
        return replace(decided, retiring=before.retiring)  # nothing placed: the old copy stays
    source = entry.cluster
    if _name(home) != _name(was):
        if entry.phase in (CUT_OVER, DONE):
            return _begin(fleet, decided, was, at)  # the new copy serves: it is the old one now
        if _name(home) == source:
            return decided  # cancelled: the new copy never served
        return _begin(fleet, decided, Placed(source, entry.replicas), at)
    if source not in fleet.index:
        return decided  # the old cluster's file is gone: nothing left to retire
    phase = _next(fleet, decided.key, entry, was, hook=hook, volumes=volumes)
    if phase == entry.phase:
        return replace(decided, retiring=(entry,))
    if phase is None:
        return decided
    return replace(decided, retiring=(entry._replace(phase=phase, since=at),))


def _home(decision: Decision | None) -> Placed | None:
    """The one cluster a whole workload ran on, or None (none, or split over several)."""
    if decision is None or len(decision.clusters) != 1:
        return None
    return decision.clusters[0]


def _name(placed: Placed | None) -> str | None:
    return None if placed is None else placed.cluster


def _begin(fleet: Fleet, decided: Decision, was: Placed | None, at: str) -> Decision:
    """Start a move off `was` when the decision leaves it and its copy can be kept."""
    home = _home(decided)
    if was is None or home is None or home.cluster == was.cluster or not was.replicas:
        return replace(decided, retiring=())
    if was.cluster not in fleet.index:
        return replace(decided, retiring=())
    return replace(decided, retiring=(Placed(was.cluster, was.replicas, PROVISIONING, at),))


def _next(
    fleet: Fleet,
    key: ResourceKey,
    entry: Placed,
    target: Placed | None,
    *,
    hook: ResourceKey | None,
    volumes: bool,
) -> str | None:
    """The phase after `entry`'s when its condition holds, else its own; None after Done."""
    if entry.phase == DONE:
        return None
    if target is None:
        return entry.phase
    if entry.phase == PROVISIONING:
        ready = fleet.settled(key, (target.cluster,))
        return SYNCING if ready else PROVISIONING
    if entry.phase == SYNCING:
        synced = in_sync(fleet, key, target.cluster, hook=hook, volumes=volumes)
        return CUT_OVER if synced else SYNCING
    row = fleet.index[entry.cluster]
    if fleet.failed[row]:
        return DONE  # it cannot be seen scaled down; its leftovers are pruned when it returns
    return DONE if fleet.settled(key, (entry.cluster,)) else CUT_OVER


def in_sync(
    fleet: Fleet, key: ResourceKey, target: str, *, hook: ResourceKey | None, volumes: bool
) -> bool:
    """Whether a moving workload's data is in sync on `target` (see the module's doc)."""
    seen = fleet.observations.get(target)
    if seen is None:
        return True  # not observed: the step is taken on the next pass
    if seen.stale:
        return False
    if hook is None and not volumes:
        return True
    if key in seen.synced:
        return True
    return hook is not None and seen.health.get(hook, ("", ""))[0] == health.HEALTHY


def place_hooks(
    hooks: Mapping[ResourceKey, ResourceKey], decisions: Sequence[Decision]
) -> list[Decision]:
    """Each hook Job placed on the target of its workload's move while it is Syncing, and
    nowhere otherwise, whatever placement it was given."""
    if not hooks:
        return list(decisions)
    by_key = {d.key: d for d in decisions}
    hook_of = {hook: workload for workload, hook in hooks.items()}
    result = []
    for decision in decisions:
        workload = hook_of.get(decision.key)
        if workload is None:
            result.append(decision)
            continue
        move = movehooks.syncing(by_key.get(workload))
        where = f"moving {move[0]} → {move[1]}, Syncing" if move else "no move is syncing"
        trigger = Trigger(TriggerCode.DATA_SYNC, f"{workload}: {where}")
        diagnosis = Diagnosis(strategy=Strategy.DUPLICATED, trigger=trigger)
        clusters = (Placed(move[1], None),) if move else ()
        result.append(bundle.placed_for(decision, clusters, diagnosis))
    return result
