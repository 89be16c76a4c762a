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

from reconciler.domain import Decision, Placement
from reconciler.schedule.record import Result
from reconciler.schedule.selecting import Refused

Failures = list[tuple[int | None, Refused]]
"""The terms tried that could not take the workload, in the order tried, and why."""


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
    trigger = result.trigger.noting(
        f"in location {placement.locations[term].name} "
        f"(choice {term + 1} of {len(placement.locations)})"
    )
    for skipped, refused in failures:
        if skipped is not None:
            name = placement.locations[skipped].name
            trigger = trigger.noting(f"location {name} skipped: {refused.message}")
    return replace(result, trigger=trigger)


def refused(placement: Placement, failures: Failures) -> Refused:
    """Why no term could take the workload: the last term's reason, or with locations every
    location tried with its reason. A shortfall keeps the previous copies when the location
    the workload is in (tried first) fell short."""
    assert failures
    if not placement.locations:
        return failures[-1][1]
    reasons = "; ".join(
        f"location {placement.locations[term].name}: {refused.message}"
        for term, refused in failures
        if term is not None
    )
    return Refused(f"no location can take it: {reasons}", keep=failures[0][1].keep)
