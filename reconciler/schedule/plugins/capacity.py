"""Filter: capacity fit within the water-level limit.

A divided workload needs room for at least one replica; a duplicated one for all of them on
every cluster it goes to. Clusters that already hold the workload pass: their own replicas are
part of their usage, and the division accounts for them.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet, IntArray


@framework.register_filter("Capacity", order=70)
def capacity(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters without room for the replicas this workload needs there."""
    if subject.replicas is None or subject.replicas == 0:
        return framework.verdict(np.ones(fleet.size, dtype=bool), "")
    need = 1 if subject.strategy.divides else subject.replicas
    passed = (subject.allocatable >= need) | subject.holders
    columns = subject.requested.tolist()

    def category(j: int) -> str:
        return f"insufficient {fleet.resources[columns[j]]}"

    def limiting(rows: IntArray) -> IntArray:
        per = subject.demand[subject.requested][:, np.newaxis]
        room = subject.headroom[subject.requested][:, rows]
        picked: IntArray = np.argmin(room / per, axis=0)
        return picked

    def reason(room: int, j: int) -> str:
        return (
            f"room for {room} of the {need} replica(s) needed "
            f"within the water-level limit ({fleet.resources[columns[j]]})"
        )

    def label(row: int) -> tuple[str, str]:
        j = int(limiting(np.array([row]))[0])
        return category(j), reason(int(subject.allocatable[row]), j)

    def reasons(rows: IntArray) -> list[str]:
        rooms = subject.allocatable[rows].tolist()
        return [reason(r, j) for r, j in zip(rooms, limiting(rows).tolist(), strict=True)]

    return framework.Verdict(
        passed=passed,
        label=label,
        tally=lambda rows: framework.tally_of(limiting(rows), category),
        reasons=reasons,
    )
