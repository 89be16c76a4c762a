"""Ordered affinity terms: which to try, in what order, and what a decision says about them.

Karmada's `clusterAffinities` and dro's `placement.locations` (city codes in order of
preference) are both ordered terms. A workload is placed on the first term with a feasible
cluster and room for its replicas; when a term cannot take it (every cluster filtered out, or
too little room: the all-or-nothing shortfall), the next one is tried.

The order of a later pass:
- Karmada's terms resume from the term the workload is in (`schedulerObservedAffinityName`)
  and go down the list, never back up, exactly as Karmada's scheduler does.
- A placement by locations is sticky too: the workload stays in its location while that
  location can hold it, since leaving a city it runs in is churn that no failure asked for
  (re-balancing moves replicas only within it). When its location can no longer take it, the
  others are tried in order of preference, the more preferred ones included, so it regains
  its first choice as soon as that has room again. A changed placement (`placement.digest`)
  starts again from the first location.

With locations, the decision's trigger names the location chosen and why each one before it
was skipped; when none can take the workload, the unschedulable message names every location
tried with its reason.

Called by `schedule.engine`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from reconciler.domain import Decision, Placement, Trigger, TriggerCode
from reconciler.schedule import framework
from reconciler.schedule.record import Result
from reconciler.schedule.selecting import Refused


class Attempt(NamedTuple):
    """One term tried that could not take the workload within the limits, and why."""

    term: int | None
    names: list[str]
    """Every term's name."""
    refused: Refused
    subject: framework.Subject
    outcome: framework.Outcome
    """The filters' outcome on the term's clusters, for overflow past the limits."""

    @property
    def name(self) -> str | None:
        """The term's name (None: no terms, the targets alone)."""
        return None if self.term is None else self.names[self.term]


Failures = list[Attempt]
"""The terms tried that could not take the workload, in the order tried."""


def terms(placement: Placement, before: Decision | None) -> tuple[list[int | None], list[str]]:
    """The indices of the affinity terms to try, in order ([None]: the targets alone), and
    every term's name."""
    names = [t.name for t in placement.affinity_terms]
    order: list[int | None] = list(range(len(names))) or [None]
    if before is None or before.affinity_term not in names:
        return order, names
    at = names.index(before.affinity_term)
    if not placement.locations:
        return order[at:], names
    if before.placement_digest != placement.digest:
        return order, names
    return [at, *(i for i in order if i != at)], names


def noted(placement: Placement, term: int | None, failures: Failures, result: Result) -> Result:
    """`result` with its trigger naming the location chosen and the ones skipped before it
    (placements by locations only)."""
    if not placement.locations or term is None:
        return result
    return replace(result, trigger=_notes(placement, term, failures, result.trigger))


def _notes(placement: Placement, term: int, failures: Failures, trigger: Trigger) -> Trigger:
    if trigger.code is TriggerCode.AFFINITY_FAILED:
        trigger = replace(trigger, code=TriggerCode.LOCATION_FAILED)
    trigger = trigger.noting(
        f"in location {placement.locations[term].name} "
        f"(choice {term + 1} of {len(placement.locations)})"
    )
    for attempt in failures:
        if attempt.term is not None and attempt.term != term:
            trigger = trigger.noting(f"location {attempt.name} skipped: {attempt.refused.message}")
    return trigger


def refused(placement: Placement, failures: Failures) -> Refused:
    """Why no term could take the workload: the last term's reason, or with locations every
    location tried with its reason. A shortfall keeps the previous copies when the location
    the workload is in (tried first) fell short."""
    assert failures
    if not placement.locations:
        return failures[-1].refused
    return Refused(f"no location can take it: {_reasons(failures)}", keep=failures[0].refused.keep)


def _reasons(failures: Failures, but: int | None = None) -> str:
    return "; ".join(
        f"location {a.name}: {a.refused.message}" for a in failures if a.term not in (None, but)
    )


def spill_order(placement: Placement, failures: Failures) -> Failures:
    """Where replicas that fit under no limit may overflow, in order: the last term tried
    (Karmada's terms; the targets alone), or with locations each location in the order
    tried, so the overflow stays in the most preferred location that takes any of it."""
    return failures if placement.locations else failures[-1:]


def spilled(
    placement: Placement, attempt: Attempt, failures: Failures, decision: Decision
) -> Decision:
    """A partial placement overflowed into `attempt`'s location, with its trigger naming
    that location and the others, and its pending message where each fell short."""
    if not placement.locations or attempt.term is None:
        return decision
    diagnosis = decision.diagnosis
    trigger = _notes(placement, attempt.term, failures, diagnosis.trigger)
    message = decision.unschedulable
    if message is not None:
        others = _reasons(failures, attempt.term)
        message = f"in location {attempt.name}: {message}" + (f"; {others}" if others else "")
    return replace(decision, diagnosis=replace(diagnosis, trigger=trigger), unschedulable=message)
