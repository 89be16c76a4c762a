"""Why a divided workload is divided again, and which workloads re-balancing may move.

A divided workload is re-divided only on a trigger: the first placement, a changed placement,
changed replicas, replicas a partial placement left pending (tried again every pass), or a
cluster it is on that is gone or no longer a candidate (a draining cluster aside for movable
workloads: re-balancing empties it under the churn budget).
Otherwise its previous division stands. A policy's `rebalance.requestedAt` newer than the one
a decision served asks for a Fresh division; nothing else does.

Called by `schedule.engine`, `schedule.facts`, `schedule.record` and `schedule.standing`.
"""

from __future__ import annotations

from reconciler.domain import (
    Decision,
    Placement,
    Strategy,
    Trigger,
    TriggerCode,
    Workload,
    durations,
)
from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, rows_of

FIRST = Trigger(TriggerCode.FIRST)
AGAIN = Trigger(TriggerCode.AGAIN)
STEADY = Trigger(TriggerCode.STEADY)
REQUESTED = Trigger(TriggerCode.REQUESTED)
FOLLOWS = Trigger(TriggerCode.FOLLOWS)
AFFINITY_FAILED = Trigger(TriggerCode.AFFINITY_FAILED)
UNSCHEDULABLE = Trigger(TriggerCode.UNSCHEDULABLE)


def failover_reason(fleet: Fleet) -> Trigger:
    """The trigger of a failover, `failover after 5m`; also its moves' reason."""
    return Trigger(TriggerCode.FAILOVER, durations.short(fleet.failover_after))


def pending(fleet: Fleet) -> Trigger:
    """The trigger of pods pending too long, `pods pending over 5m`; also its moves' reason."""
    return Trigger(TriggerCode.PENDING, durations.short(fleet.unschedulable_after))


def is_movable(extensions: bool, strategy: Strategy, workload: Workload) -> bool:
    """Whether re-balancing may move this workload's replicas (see `Claimed.movable`)."""
    return (
        extensions
        and workload.replicas is not None
        and strategy in (Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED)
        and not workload.stateful
    )


def newcomer(before: Decision | None) -> Trigger:
    """The trigger of a divided workload that holds nothing: placed for the first time, or
    again after it was unschedulable."""
    return FIRST if before is None else AGAIN


def pending_request(placement: Placement, before: Decision | None) -> str | None:
    """The policy's `rebalance.requestedAt` when it is newer than the one this workload last
    served (a first placement has nothing to serve)."""
    requested = placement.rebalance_requested_at
    if requested is None or before is None or not before.clusters:
        return None
    served = before.rebalance_served
    if served is not None and durations.epoch(served) >= durations.epoch(requested):
        return None
    return requested


def trigger(
    fleet: Fleet,
    subject: framework.Subject,
    feasible: BoolArray,
    before: Decision | None,
    lost: list[str],
    movable: bool,
) -> Trigger | None:
    """Why a divided workload is divided again this pass, or None when nothing requires it."""
    if before is None or not before.clusters:
        return newcomer(before)
    if before.placement_digest != subject.placement.digest:
        return Trigger(TriggerCode.PLACEMENT_CHANGED)
    total = sum(p.replicas or 0 for p in before.clusters)
    if before.pending and total + before.pending == subject.replicas:
        return Trigger(TriggerCode.PARTIAL, str(before.pending))
    if total != subject.replicas:
        return Trigger(TriggerCode.SCALED, f"{total} to {subject.replicas}")
    if lost:
        return Trigger(TriggerCode.CLUSTER_GONE, lost[0])
    failed = rows_of(subject.holders & fleet.failed & ~feasible)
    if len(failed):
        return failover_reason(fleet)
    dropped = subject.holders & ~feasible
    if movable:
        dropped &= ~fleet.draining  # re-balancing moves these off under the churn budget
    gone = rows_of(dropped)
    if len(gone):
        return Trigger(TriggerCode.NOT_CANDIDATE, str(fleet.names[gone[0]]))
    return None
