"""Filter and scorer: cluster taints against the placement's tolerations.

An untolerated NoExecute taint rejects the cluster, even for the replicas it holds. An
untolerated NoSchedule taint rejects it for new work only: clusters that already hold the
workload keep it, as in Karmada. Each untolerated PreferNoSchedule taint lowers the score.
Matching is core/v1's `ToleratesTaint` (`Toleration.tolerates`).

A NoExecute taint tolerated with `tolerationSeconds` is tolerated until the earliest
`timeAdded + tolerationSeconds` over the tolerations used (the first one that matches each
NoExecute taint of the cluster), as Karmada's taint manager decides eviction; from then on it
counts as untolerated. A taint without `timeAdded` counts as added at the pass's time, as
Karmada's webhook stamps a new NoExecute taint, so `tolerationSeconds: 0` evicts at once.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.domain import Placement, Taint, clock
from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray
from reconciler.schedule.memo import Ref, Slot, ref

_BLOCKING: Slot[Ref, tuple[BoolArray, BoolArray]] = Slot(
    "the untolerated NoSchedule and NoExecute (or expired) taints, per placement"
)
_PREFER_NOT: Slot[Ref, FloatArray] = Slot("the PreferNoSchedule scores, per placement")


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


def expired(fleet: Fleet, placement: Placement) -> BoolArray:
    """(clusters × taints): NoExecute taints of clusters whose every NoExecute taint is
    tolerated, but whose toleration time (Karmada's `GetMinTolerationTime`) is up at
    `fleet.now`; only the taints whose own time bound it are marked."""
    result = np.zeros((fleet.size, len(fleet.taints)), dtype=bool)
    bounded = [t for t in placement.tolerations if t.seconds is not None]
    if not bounded or not fleet.taints:
        return result
    matrix = fleet.taint_matrix
    for row in range(fleet.size):
        columns = [j for j in np.flatnonzero(matrix[row]) if fleet.taints[j].effect == "NoExecute"]
        used = []
        for j in columns:
            first = next((t for t in placement.tolerations if t.tolerates(fleet.taints[j])), None)
            if first is None:
                break  # untolerated: `untolerated` rejects the cluster already
            used.append(first)
        else:
            triggers = {
                j: min(
                    _added(fleet.taints[j], fleet.now) + float(t.seconds)
                    for t in used
                    if t.seconds is not None and t.tolerates(fleet.taints[j])
                )
                for j in columns
                if any(t.seconds is not None and t.tolerates(fleet.taints[j]) for t in used)
            }
            if triggers and not clock.ahead(fleet.now, min(triggers.values())):
                soonest = min(triggers.values())
                for j, when in triggers.items():
                    result[row, j] = when == soonest
    return result


def _added(taint: Taint, now: float) -> float:
    return now if taint.time_added is None else taint.time_added


def _blocking(fleet: Fleet, subject: framework.Subject) -> tuple[BoolArray, BoolArray]:
    key = ref(subject.placement)
    memo = _BLOCKING.of(subject.memos)
    if key not in memo:
        no_execute = untolerated(fleet, subject.placement, "NoExecute")
        if fleet.taints:
            no_execute = no_execute | expired(fleet, subject.placement)
        memo[key] = (untolerated(fleet, subject.placement, "NoSchedule"), no_execute)
    return memo[key]


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
        if not untolerated(fleet, subject.placement, "NoExecute")[row].any() and not (
            no_schedule[row].any()
        ):
            return "untolerated taint", f"tolerationSeconds are up for taint {taints}"
        return "untolerated taint", f"untolerated taint {taints}"

    return framework.Verdict(
        passed=passed, label=label, tally=lambda rows: {"untolerated taint": len(rows)}
    )


@framework.register_scorer("TaintToleration", static=True)
def taint_score(fleet: Fleet, subject: framework.Subject, _feasible: BoolArray) -> FloatArray:
    """100 minus 25 per untolerated PreferNoSchedule taint, floored at 0."""
    key = ref(subject.placement)
    memo = _PREFER_NOT.of(subject.memos)
    if key not in memo:
        preferred = untolerated(fleet, subject.placement, "PreferNoSchedule")
        count = preferred.sum(axis=1) if preferred.shape[1] else np.zeros(fleet.size)
        memo[key] = np.maximum(0.0, framework.SCORE_MAX - 25.0 * count)
    return memo[key]
