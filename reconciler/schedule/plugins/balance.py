"""Scorer: the resource water level a cluster would have after one more replica.

Score = 100 × (1 − RWL after placement), where the RWL is the highest used/total over the
resources the workload requests (cpu and memory when it requests nothing). A cluster whose
level would exceed 1 scores 0. This is the draft's balance term; the next step of the scheduler
weighs it against aggregation by fleet load.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import FloatArray


@framework.register_scorer("Balance", weight=1.0)
def balance(context: framework.Context) -> FloatArray:
    """Prefer clusters that stay least loaded after taking one replica."""
    fleet = context.fleet
    if not fleet.resources:
        return np.full(fleet.size, framework.SCORE_MAX)
    wanted = [r for r in context.demand if r in fleet.resources and r != "pods"]
    if not wanted:
        wanted = [r for r in ("cpu", "memory") if r in fleet.resources]
    if not wanted:
        return np.full(fleet.size, framework.SCORE_MAX)
    columns = [fleet.resources.index(r) for r in wanted]
    need = np.array([context.demand.get(r, 0.0) for r in wanted])
    capacity = fleet.capacity[:, columns]
    after = fleet.allocated[:, columns] + need[np.newaxis, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(capacity > 0, after / capacity, 1.0).max(axis=1)
    scores: FloatArray = framework.SCORE_MAX * (1.0 - np.clip(level, 0.0, 1.0))
    return scores
