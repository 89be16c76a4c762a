"""Filter and scorer: cluster taints against the placement's tolerations.

An untolerated NoExecute taint rejects the cluster, even for the replicas it holds. An
untolerated NoSchedule taint rejects it for new work only: clusters that already hold the
workload keep it, as in Karmada. Each untolerated PreferNoSchedule taint lowers the score.
"""

from __future__ import annotations

import numpy as np

from reconciler.domain import Placement
from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray


def untolerated(fleet: Fleet, placement: Placement, effect: str) -> BoolArray:
    """(clusters × taints): taints with `effect` that no toleration matches."""
    relevant = np.array(
        [
            t.effect == effect and not any(tol.tolerates(t) for tol in placement.tolerations)
            for t in fleet.taints
        ],
        dtype=bool,
    )
    if not fleet.taints:
        return np.zeros((fleet.size, 0), dtype=bool)
    result: BoolArray = fleet.taint_matrix & relevant[np.newaxis, :]
    return result


def _blocking(fleet: Fleet, subject: framework.Subject) -> tuple[BoolArray, BoolArray]:
    key = ("taints", id(subject.placement))
    if key not in subject.cache:
        subject.cache[key] = (
            untolerated(fleet, subject.placement, "NoSchedule"),
            untolerated(fleet, subject.placement, "NoExecute"),
        )
    pair: tuple[BoolArray, BoolArray] = subject.cache[key]
    return pair


@framework.register_filter("TaintToleration", order=30, karmada=True, static=True)
def taint_filter(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters with an untolerated NoExecute taint, or NoSchedule for new work."""
    no_schedule, no_execute = _blocking(fleet, subject)
    passed = np.ones(fleet.size, dtype=bool)
    if fleet.taints:
        passed = ~no_execute.any(axis=1) & (~no_schedule.any(axis=1) | subject.holders)

    def label(row: int) -> tuple[str, str]:
        columns = np.flatnonzero(no_schedule[row] | no_execute[row])
        taints = ", ".join(
            f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
            for t in (fleet.taints[j] for j in columns)
        )
        return "untolerated taint", f"untolerated taint {taints}"

    return framework.Verdict(
        passed=passed, label=label, tally=lambda rows: {"untolerated taint": len(rows)}
    )


@framework.register_scorer("TaintToleration", static=True)
def taint_score(fleet: Fleet, subject: framework.Subject, _feasible: BoolArray) -> FloatArray:
    """100 minus 25 per untolerated PreferNoSchedule taint, floored at 0."""
    key = ("prefer-no-schedule", id(subject.placement))
    if key not in subject.cache:
        preferred = untolerated(fleet, subject.placement, "PreferNoSchedule")
        count = preferred.sum(axis=1) if preferred.shape[1] else np.zeros(fleet.size)
        subject.cache[key] = np.maximum(0.0, framework.SCORE_MAX - 25.0 * count)
    scores: FloatArray = subject.cache[key]
    return scores
