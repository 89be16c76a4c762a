"""One workload's placement from its feasible clusters: spread selection, the pulls of its state
and data, and the division of its replicas, overflow tier by tier.

A scale change of dro's DynamicWeight and Aggregated workloads is steered by water level
(`steering`); every other division is Karmada's (`division`). `select` returns the placement
as a `record.Result`, or why there is none as a `Refused` value: spread finds no selection
(`spread.Unspreadable`), no single cluster can run a stateful workload whole
(`placing.NoHome`), or the candidates cannot hold the replicas (`division.Unschedulable`).
These are answers, not errors, so they are returned, never raised.
Called by `engine.Pass` (a workload's turn, and a newcomer of the express lane).

Called by `schedule.engine` and `schedule.locations`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from reconciler.domain import Strategy, Trigger
from reconciler.schedule import (
    division,
    economy,
    facts,
    framework,
    moving,
    placing,
    spread,
    steering,
)
from reconciler.schedule.fleet import Fleet, IntArray, rows_of, some
from reconciler.schedule.record import Result


@dataclass(frozen=True, slots=True)
class Refused:
    """One attempt cannot place the workload: why, and whether it keeps its old copies."""

    message: str
    """The unschedulable message, as the decision records it."""
    keep: bool
    """A shortfall (spread, a home, capacity) keeps the previous copies; a fit error, where no
    cluster passes the filters, does not."""


def select(
    fleet: Fleet,
    memo: facts.Facts,
    subject: framework.Subject,
    outcome: framework.Outcome,
    tiers: IntArray,
    trigger: Trigger,
    *,
    load: float,
    fresh: bool = False,
    pull: float = 0.0,
) -> Result | Refused:
    """The placement of `subject` on the clusters `outcome` finds feasible (scored when the
    candidate order matters), with `trigger` saying why it was made; or why not. `pull` is how
    strongly cost narrows a dro policy's division (`economy`)."""
    rows = rows_of(outcome.feasible)
    selected = rows  # no spread, and a division that reads no order: in name order
    if outcome.total is not None and (
        subject.strategy is Strategy.AGGREGATED or subject.placement.spread
    ):
        # Aggregated and spread read the candidate order (scored for them alone when the pass
        # does not diagnose); the others divide in name order, so the fleet is not sorted.
        available = subject.available
        ordered = rows[np.lexsort((rows, -available[rows], -outcome.total[rows], tiers[rows]))]
        spread_out = spread.select(
            fleet,
            ordered,
            subject.placement.spread,
            scores=outcome.total,
            available=available,
            replicas=subject.replicas,
            strategy=subject.strategy,
            karmada=not subject.extensions,
        )
        if isinstance(spread_out, spread.Unspreadable):
            return Refused(spread_out.message, keep=True)
        selected = spread_out
    if subject.replicas is None:
        return Result(None, np.sort(selected), trigger)
    if not subject.strategy.divides:
        counts = np.zeros(fleet.size, dtype=np.int64)
        counts[selected] = subject.replicas
        return Result(counts, np.sort(selected), trigger)
    if moving.runs_whole(subject.extensions, subject.workload, subject.placement):
        home = placing.one_home(subject, selected, outcome.total, fresh=fresh)
        if isinstance(home, placing.NoHome):
            return Refused(home.message, keep=True)
        selected = home
        trigger = trigger.noting(f"runs whole on {fleet.name_list[int(selected[0])]} (stateful)")
    elif subject.data is not None and subject.extensions:
        candidates = selected.size
        selected = placing.near_data(fleet, subject, selected, load)
        if selected.size < candidates:
            near = ", ".join(fleet.name_list[int(row)] for row in selected)
            trigger = trigger.noting(f"kept near its data: {near}")
    elif subject.extensions and subject.strategy in _BY_ROOM and pull > 0.0:
        priced = economy.cheapest(fleet, subject, selected, load, pull)
        if priced.selected.size < selected.size or priced.closed.size:
            cheap = np.setdiff1d(priced.selected, priced.closed)
            names = ", ".join(fleet.name_list[int(row)] for row in np.sort(cheap))
            trigger = trigger.noting(f"kept to the cheapest: {names}")
        selected = priced.selected
        if priced.closed.size:  # dearer holders keep what they run and take no more
            allocatable = subject.allocatable.copy()
            allocatable[priced.closed] = 0
            subject = dataclasses.replace(subject, allocatable=allocatable)
        trimmed = None if fresh else _trim(fleet, subject, selected, load, pull)
        if trimmed is not None:
            note = trigger.noting("scaled down on the dearest clusters first")
            return Result(trimmed, rows_of(trimmed), note)
    steered = steering.steer(fleet, subject, selected, tiers, trigger, fresh=fresh)
    if steered is not None:
        return Result(steered.counts, rows_of(steered.counts), trigger.noting(steered.note))
    counts_or_short = _divide(fleet, memo, subject, selected, tiers, fresh=fresh)
    if isinstance(counts_or_short, division.Unschedulable):
        return Refused(counts_or_short.message, keep=True)
    return Result(counts_or_short, rows_of(counts_or_short), trigger)


_BY_ROOM = (Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED)


def _trim(
    fleet: Fleet, subject: framework.Subject, selected: IntArray, load: float, pull: float
) -> IntArray | None:
    """A scale-down by cost (`economy.trim`) when every holder is still a candidate; None
    otherwise, and the division scales down as Karmada does."""
    replicas = subject.replicas or 0
    previous = subject.previous
    held = int(previous[selected].sum())
    if held <= replicas or held != int(previous.sum()):
        return None
    return economy.trim(fleet, subject, selected, replicas, load=load, strength=pull)


def _divide(
    fleet: Fleet,
    memo: facts.Facts,
    subject: framework.Subject,
    selected: IntArray,
    tiers: IntArray,
    *,
    fresh: bool,
) -> IntArray | division.Unschedulable:
    """The division over the selected rows: StaticWeight by weight; the others by room, the
    first overflow tier before the next, and all-or-nothing."""
    size = fleet.size
    descending = division.names_descending(subject.workload.uid)
    replicas = subject.replicas or 0
    if subject.strategy is Strategy.STATIC_WEIGHT:
        return division.divide(
            Strategy.STATIC_WEIGHT,
            replicas,
            selected,
            size=size,
            static=memo.static(subject.placement),
            descending=descending,
            distinct=True,
        )
    dynamic = functools.partial(
        division.divide,
        subject.strategy,
        size=size,
        available=subject.allocatable,
        previous=subject.previous,
        descending=descending,
        distinct=True,
        fresh=fresh,
    )
    if not memo.tiered(tiers) or not some(tiers[selected]):
        return dynamic(replicas, selected)
    counts = np.zeros(size, dtype=np.int64)
    remaining = replicas
    for tier in np.unique(tiers[selected]).tolist():
        rows = selected[tiers[selected] == tier]
        take = min(remaining, int(subject.available[rows].sum()))
        if take <= 0:
            continue
        divided = dynamic(take, rows)
        if isinstance(divided, division.Unschedulable):
            return divided
        counts += divided
        remaining -= take
    if remaining > 0:
        return division.Unschedulable(int(subject.available[selected].sum()))
    return counts
