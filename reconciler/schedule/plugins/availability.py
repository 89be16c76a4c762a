"""Scorer: how much of the workload a cluster could take on its own.

Score = 100 × min(1, available replicas / replicas). Clusters that could hold the whole
workload score highest, so this is the aggregation term: it weighs most when the fleet is idle,
and then fewer clusters are used.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray


@framework.register_scorer("Availability")
def availability(fleet: Fleet, subject: framework.Subject, _feasible: BoolArray) -> FloatArray:
    """Prefer clusters with room for all of the workload's replicas."""
    if not subject.replicas:
        return np.full(fleet.size, framework.SCORE_MAX)
    ratio = subject.available / float(subject.replicas)
    scores: FloatArray = framework.SCORE_MAX * np.minimum(ratio, 1.0)
    return scores
