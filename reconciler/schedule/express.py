"""The express lane: a first placement that needs no explanation, without the framework's
per-filter bookkeeping.

Most workloads of a large first pass are placed for the first time, under a placement with
plain targets, and nothing asks why. For them the filters' verdicts and reasons are never read,
only which clusters pass. This lane computes that mask directly:

- the static filters' mask, memoised per placement (a newcomer holds nothing, so it depends
  on the placement only: `framework.static_feasible`);
- NodeFit and Capacity from the pass's fit matrix and the subject's estimate of the replicas
  each cluster can take (`Facts.room`);
- WaterLevel from the subject's headroom, when it is not implied by Capacity.

The engine then selects, divides and charges as for any workload (`Pass.place_newcomer`).
When no cluster passes, the filters run in full for the reasons of the unschedulable message.
A workload with a previous decision, or with ordered affinity terms, or a pass that explains
itself, goes through `Pass.decide` in full. `tests/test_express.py` checks that both lanes
decide alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from reconciler.domain import Decision
from reconciler.schedule import facts, framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray, rows_of, some

if TYPE_CHECKING:
    from reconciler.schedule.engine import Pass


def eligible(run: Pass, claimed: facts.Claimed) -> bool:
    """Whether the express lane may place this workload: it holds nothing (a first placement,
    or one that was unschedulable), the pass does not explain itself, its placement has no
    ordered affinity terms, and it uses no data set (STCI)."""
    if run.diagnose or claimed.placement.affinity_terms:
        return False
    if run.facts.data_row(claimed.workload.key) is not None:
        return False  # its data makes every cluster's score its own: no shared refusal
    before = run.previous.get(claimed.workload.key)
    return before is None or not (before.clusters or before.retiring)


def place(
    run: Pass, claimed: facts.Claimed, demand: FloatArray, scale: FloatArray, node_fit: BoolArray
) -> Decision | None:
    """The decision for an eligible workload, its placement charged to the ledger; None when
    the lane cannot decide it (the engine then does)."""
    key = _refusal_key(claimed, demand)
    message = _still_refused(run, key)
    if message is not None:
        return run.refuse(claimed, claimed.strategy, None, message, demand)
    subject = run.facts.newcomer(claimed, demand, scale, node_fit, None)
    passed = feasible(run.fleet, subject)
    if some(passed):
        outcome = framework.Outcome(feasible=passed, rejected_by=())
        decision = run.place_newcomer(claimed, subject, outcome, demand)
        if decision.unschedulable is not None:  # capacity or spread fell short
            _remember(run, subject, key, decision.unschedulable)
        return decision
    message = _refusal(run, subject, key)
    return None if message is None else run.refuse(claimed, subject.strategy, None, message, demand)


# A refusal is memoised: whether a newcomer fits, and why not, depends only on its placement,
# its demand and replica count, and the usage of the clusters that pass the static filters
# (the filters' verdicts, the estimate, spread and division all read nothing else). A run of
# workloads alike, refused while those clusters' usage stands still, is worked out once.
_Refusal = tuple[int, str, IntArray]
"""(the ledger's clock when worded, the message, the clusters past the static filters)."""


def _refusal_key(claimed: facts.Claimed, demand: FloatArray) -> tuple[object, ...]:
    placement, replicas = claimed.placement, claimed.workload.replicas
    return ("refusal", id(placement), claimed.extensions, demand.tobytes(), replicas)


def _still_refused(run: Pass, key: tuple[object, ...]) -> str | None:
    """The memoised refusal under `key`, if none of the usage it read has changed since."""
    memo: _Refusal | None = run.facts.cache.get(key)
    if memo is None:
        return None
    clock, message, rows = memo
    if len(rows) and int(run.changed[rows].max()) > clock:
        return None
    return message


def _refusal(run: Pass, subject: framework.Subject, key: tuple[object, ...]) -> str | None:
    """Why no cluster takes this newcomer, in the filters' words, memoised under `key`; None
    if the filters find a cluster after all."""
    outcome = framework.apply_filters(run.fleet, subject)
    if some(outcome.feasible):
        return None  # the lane and the filters disagree: let the engine decide
    message = outcome.fit_error(run.fleet.size)
    _remember(run, subject, key, message)
    return message


def _remember(run: Pass, subject: framework.Subject, key: tuple[object, ...], why: str) -> None:
    rows = rows_of(framework.static_feasible(run.fleet, subject))
    run.facts.cache[key] = (run.clock, why, rows)


def feasible(fleet: Fleet, subject: framework.Subject) -> BoolArray:
    """Clusters that pass every filter for a subject that holds nothing (a newcomer), as
    `framework.apply_filters(...).feasible` finds them, without the verdicts.

    With one replica or more, WaterLevel needs no mask of its own: a cluster above the limit
    on a requested resource has negative headroom there, so it can take no replica and
    Capacity rejects it anyway.
    """
    base = framework.static_feasible(fleet, subject)
    if not subject.extensions:
        return base
    passed = base & subject.node_fit
    replicas = subject.replicas
    if replicas:
        need = 1 if subject.strategy.divides else replicas
        passed &= subject.allocatable >= need
    elif replicas == 0:
        requested = subject.requested
        limited = requested[subject.limit[requested] < 1.0]
        if len(limited):
            passed &= ~np.logical_or.reduce(subject.headroom[limited] < 0, axis=0)
    return passed
