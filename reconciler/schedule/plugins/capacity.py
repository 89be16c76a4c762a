"""Filter: capacity fit within the water-level limit.

A divided workload needs room for at least one replica; a duplicated one for all of them on
every cluster it goes to. Clusters that already hold the workload pass: their own replicas are
part of their usage, and the division accounts for them.
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
    need = subject.replicas if subject.strategy == "Duplicated" else 1
    passed = (subject.allocatable >= need) | subject.holders

    columns = subject.requested

    def limiting(rows: IntArray) -> list[str]:
        room = (
            subject.limit[columns] * fleet.capacity[np.ix_(rows, columns)]
            - subject.used[np.ix_(rows, columns)]
        )
        picked = columns[np.argmin(room / subject.demand[columns], axis=1)]
        return [fleet.resources[j] for j in picked.tolist()]

    def label(row: int) -> tuple[str, str]:
        resource = limiting(np.array([row]))[0]
        return (
            f"insufficient {resource}",
            f"room for {int(subject.allocatable[row])} of the {need} replica(s) needed "
            f"within the water-level limit ({resource})",
        )

    return framework.Verdict(
        passed=passed,
        label=label,
        categories=lambda rows: [f"insufficient {r}" for r in limiting(rows)],
    )
