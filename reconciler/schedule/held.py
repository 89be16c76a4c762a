"""What a workload held before this pass, as arrays over the fleet's rows: the counts its last
decision placed, the copies still running beside them, and the share its pending pods give up.

Called by `schedule.engine`.
"""

from __future__ import annotations

import numpy as np

from reconciler.domain import Decision, Strategy
from reconciler.schedule import facts
from reconciler.schedule.fleet import BoolArray, Fleet, IntArray


def previous(fleet: Fleet, before: Decision | None) -> tuple[IntArray, BoolArray, list[str]]:
    """(replicas per row, the rows it is on, the clusters it was on that are gone) from the
    last pass's decision."""
    counts = np.zeros(fleet.size, dtype=np.int64)
    holders = np.zeros(fleet.size, dtype=bool)
    lost: list[str] = []
    for placed in before.clusters if before else ():
        row = fleet.index.get(placed.cluster)
        if row is None:
            lost.append(placed.cluster)
            continue
        holders[row] = True
        counts[row] = placed.replicas or 0
    return counts, holders, lost


def stuck(fleet: Fleet, claimed: facts.Claimed, previous: IntArray) -> dict[int, int]:
    """Lower the share of each cluster where this divided workload's pods have pended for
    `unschedulableAfter`, by the pods pending (in place in `previous`); returns row → replicas
    taken away. Only a division by availability (DynamicWeight, Aggregated) can move them, as
    Karmada's descheduler: a StaticWeight split's weights fix each share."""
    if claimed.strategy not in (Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED):
        return {}
    taken: dict[int, int] = {}
    for row, pods in fleet.stuck(claimed.workload.key):
        take = min(pods, int(previous[row]))
        if take > 0:
            previous[row] -= take
            taken[row] = take
    return taken


def running(fleet: Fleet, before: Decision | None, previous: IntArray) -> IntArray:
    """What the last pass rendered per cluster: its target plus its retiring copies. The
    usage counts these; retiring copies that this pass drops give their room back."""
    if before is None or not before.retiring:
        return previous
    counts = previous.copy()
    for placed in before.retiring:
        row = fleet.index.get(placed.cluster)
        if row is not None:
            counts[row] += placed.running or 0
    return counts
