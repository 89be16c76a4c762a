"""Filter: the resource water level (RWL = used / capacity) limit, per resource.

The limit comes from the policy's `waterLevelLimit`, else from dro.yaml (default 0.85 for cpu
and memory). Only the resources the workload requests count. The level is taken at the
workload's turn in the pass, so the replicas placed ahead of it count. Clusters that already
hold the workload keep it: moving load off a hot cluster is re-balancing's job. A cluster is
above the limit when its usage exceeds capacity × limit, the same bound the replica count
within the limit (`Subject.allocatable`) uses.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet, IntArray
from reconciler.schedule.memo import Ref, Slot, ref

_LIMITED: Slot[tuple[Ref, bytes], tuple[IntArray, list[int], list[str]]] = Slot(
    "the limited requested resources and their categories, per (limit array, requested set)"
)


def _limited(fleet: Fleet, subject: framework.Subject) -> tuple[IntArray, list[int], list[str]]:
    """The requested resources that have a limit, and their categories; memoised per pass."""
    key = (ref(subject.limit), subject.requested.tobytes())
    memo = _LIMITED.of(subject.memos)
    if key not in memo:
        limited = subject.requested[subject.limit[subject.requested] < 1.0]
        columns = limited.tolist()
        names = [
            f"water level above {float(subject.limit[j]):g} ({fleet.resources[j]})" for j in columns
        ]
        memo[key] = (limited, columns, names)
    return memo[key]


@framework.register_filter("WaterLevel", order=50)
def water_level(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters whose water level is above the limit on a requested resource."""
    limited, columns, names = _limited(fleet, subject)
    if subject.replicas is None or not columns:
        return framework.verdict(np.ones(fleet.size, dtype=bool), "")
    over = subject.headroom[limited] < 0
    used = subject.usage[limited]  # a copy: the ledger moves on, the verdict is this turn's
    passed = np.logical_or.reduce(over, axis=0)
    np.logical_not(passed, out=passed)
    passed |= subject.holders

    def label(row: int) -> tuple[str, str]:
        i = int(np.argmax(over[:, row]))
        j = columns[i]
        capacity = float(fleet.capacity[row, j])
        level = float(used[i, row]) / capacity if capacity > 0 else 1.0
        limit = float(subject.limit[j])
        return (
            names[i],
            f"{fleet.resources[j]} water level {level:.2f} is above the limit {limit:g}",
        )

    return framework.Verdict(
        passed=passed,
        label=label,
        tally=lambda rows: framework.tally_of(np.argmax(over[:, rows], axis=0), names.__getitem__),
    )
