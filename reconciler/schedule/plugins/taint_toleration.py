"""Filter and scorer: cluster taints against the placement's tolerations.

NoSchedule and NoExecute taints that no toleration matches reject the cluster; each untolerated
PreferNoSchedule taint lowers its score instead.
"""

from __future__ import annotations

import numpy as np

from reconciler.domain import Placement
from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray


def _untolerated(fleet: Fleet, placement: Placement, effects: set[str]) -> BoolArray:
    """(clusters × taints) matrix of taints with one of `effects` that nothing tolerates."""
    relevant = np.array(
        [
            t.effect in effects and not any(tol.tolerates(t) for tol in placement.tolerations)
            for t in fleet.taints
        ],
        dtype=bool,
    )
    if not fleet.taints:
        return np.zeros((fleet.size, 0), dtype=bool)
    result: BoolArray = fleet.taint_matrix & relevant[np.newaxis, :]
    return result


@framework.register_filter("TaintToleration")
def taint_filter(context: framework.Context) -> framework.Verdict:
    """Reject clusters with an untolerated NoSchedule or NoExecute taint."""
    fleet = context.fleet
    blocking = _untolerated(fleet, context.placement, {"NoSchedule", "NoExecute"})
    passed: BoolArray = np.ones(fleet.size, dtype=bool)
    if blocking.shape[1]:
        passed = np.asarray(~blocking.any(axis=1), dtype=bool)
    reasons = np.full(fleet.size, None, dtype=object)
    for row in np.flatnonzero(~passed):
        taints = [fleet.taints[j] for j in np.flatnonzero(blocking[row])]
        reasons[row] = "untolerated taint " + ", ".join(
            f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in taints
        )
    return framework.verdict(passed, "untolerated taint", reasons)


@framework.register_scorer("TaintToleration", weight=1.0)
def taint_score(context: framework.Context) -> FloatArray:
    """100 minus 25 per untolerated PreferNoSchedule taint, floored at 0."""
    preferred = _untolerated(context.fleet, context.placement, {"PreferNoSchedule"})
    count = preferred.sum(axis=1) if preferred.shape[1] else np.zeros(context.fleet.size)
    scores: FloatArray = np.maximum(0.0, framework.SCORE_MAX - 25.0 * count)
    return scores
