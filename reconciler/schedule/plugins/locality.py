"""Scorer: Karmada's ClusterLocality. 100 for clusters that already hold the workload.

It keeps a re-scheduled workload where it runs when nothing else decides; it is the one scorer
Karmada's own policies use.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray


@framework.register_scorer("ClusterLocality", karmada=True, static=True)
def locality(fleet: Fleet, subject: framework.Subject, _feasible: BoolArray) -> FloatArray:
    """100 where the workload already runs, 0 elsewhere."""
    scores: FloatArray = subject.holders.astype(np.float64) * framework.SCORE_MAX
    return scores
