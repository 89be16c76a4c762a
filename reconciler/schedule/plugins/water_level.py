"""Filter: the resource water level (RWL = used / capacity) limit, per resource.

The limit comes from the policy's `waterLevelLimit`, else from dro.yaml (default 0.85 for cpu
and memory). Only the resources the workload requests count. The level is taken at the
workload's turn in the pass, so the replicas placed ahead of it count. Clusters that already
hold the workload keep it: moving load off a hot cluster is re-balancing's job.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet


@framework.register_filter("WaterLevel", order=50)
def water_level(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters whose water level is above the limit on a requested resource."""
    columns = np.flatnonzero((subject.demand > 0) & (subject.limit < 1.0))
    if subject.replicas is None or not len(columns):
        return framework.verdict(np.ones(fleet.size, dtype=bool), "")
    capacity = fleet.capacity[:, columns]
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(capacity > 0, subject.used[:, columns] / capacity, 1.0)
    over = level > subject.limit[columns][np.newaxis, :]
    passed = ~over.any(axis=1) | subject.holders

    names = [
        f"water level above {float(subject.limit[j]):g} ({fleet.resources[j]})"
        for j in columns.tolist()
    ]

    def label(row: int) -> tuple[str, str]:
        j = int(np.argmax(over[row]))
        resource = fleet.resources[columns[j]]
        limit = float(subject.limit[columns[j]])
        return (
            names[j],
            f"{resource} water level {level[row, j]:.2f} is above the limit {limit:g}",
        )

    return framework.Verdict(
        passed=passed,
        label=label,
        categories=lambda rows: [names[j] for j in np.argmax(over[rows], axis=1).tolist()],
    )
