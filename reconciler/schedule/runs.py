"""Runs: what an override of `spec.replicas` makes run beyond the rendered counts.

The engine charges each workload's rendered counts to the ledger. Where an override sets
`spec.replicas`, another count runs; `surplus` is the correction per cluster row (what runs
now minus what is rendered, less the same difference the last pass recorded), so the ledger
holds what runs and the workloads placed after this one see the room it really takes.

Called by `schedule.engine`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reconciler.domain import Decision
from reconciler.schedule.fleet import Fleet, IntArray


def surplus(
    fleet: Fleet, before: Decision | None, decided: Decision, runs: Mapping[str, int]
) -> IntArray:
    """Per cluster row, the replicas that run beyond (or short of) the rendered counts now,
    minus what the last pass recorded the same way (`before.effective`)."""
    result = np.zeros(fleet.size, dtype=np.int64)
    was = before.effective if before is not None else {}
    for decision, effective, sign in ((decided, runs, 1), (before, was, -1)):
        rendered = {p.cluster: p.replicas or 0 for p in decision.rendered()} if decision else {}
        for cluster, count in effective.items():
            row = fleet.index.get(cluster)
            if row is not None:
                result[row] += sign * (count - rendered.get(cluster, 0))
    return result
