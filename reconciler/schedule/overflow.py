"""Soft water-level limits: overflow up to a ceiling, and partial placement.

For dro's policies (and Karmada policies that opt in to dro's extensions) a divided workload
that falls short under its water-level limits is not refused whole:

- replicas first fill every candidate up to its limit (the clusters that pass the filters
  at the limit, each taking its available replicas);
- what fits under no limit overflows to the clusters that pass the filters at the ceiling
  (`placement.waterLevelCeiling`, else dro.yaml's, per resource, default 1.0; node fit
  still applies), one replica at a time to the candidate with the lowest water level after
  it (`fill`: the same result in closed form); `placement.overflow: Never` keeps the limit
  hard;
- what fits nowhere is pending: the decision holds what fits, `pending` says how many are
  missing and `unschedulable` why, and the next pass tries again (`triggers.PARTIAL`).

`over_limit` keeps the decision's count of replicas past a limit true from pass to pass: a
replica that overflowed stays listed until re-balancing moves it back under a limit, a
scale-down removes it, or the cluster's own level falls back under its limit.

Under spread constraints the clusters are selected again at the ceiling (a constraint that
no selection meets still refuses the workload). Stateful workloads that run whole and
Karmada's own kinds stay all-or-nothing (`applies`).

Called by `schedule.engine`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from reconciler.domain import Decision, Placed, Strategy, Trigger
from reconciler.schedule import division, facts, framework, moving, spread
from reconciler.schedule.fleet import Fleet, FloatArray, IntArray, rows_of
from reconciler.schedule.memo import Ref, Slot, ref
from reconciler.schedule.record import Result

_CEILINGS: Slot[Ref, FloatArray] = Slot("a limit array → its ceiling per resource")


@dataclass(frozen=True, slots=True)
class Spilled:
    """A placement that fell short under the limits: what fits, and what does not."""

    counts: IntArray
    """Replicas per cluster row: every candidate filled to its limit, then the overflow."""
    over: IntArray
    """Per row, the replicas this pass placed past the limit (up to the ceiling)."""
    pending: int
    """Replicas that fit nowhere."""
    outcome: framework.Outcome
    """The filters' verdicts at the ceiling (at the limit when there is no overflow)."""
    subject: framework.Subject
    """The workload as the filters saw it at the ceiling."""

    @property
    def message(self) -> str:
        """Why replicas are pending, in Karmada's words (what fit in all)."""
        return division.Unschedulable(int(self.counts.sum())).message


def applies(claimed: facts.Claimed) -> bool:
    """Whether a shortfall of this workload is placed in part: a workload of dro's policies
    (or one that opts in) divided by availability, and not run whole."""
    placement = claimed.placement
    return (
        claimed.extensions
        and claimed.workload.replicas is not None
        and claimed.strategy in (Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED)
        and not moving.runs_whole(claimed.extensions, claimed.workload, placement)
    )


def ceiling(memo: facts.Facts, claimed: facts.Claimed, limit: FloatArray) -> FloatArray:
    """The water level per resource up to which this workload may overflow: the policy's
    `waterLevelCeiling`, else dro.yaml's, else 1.0, and never below the limit; the limit
    itself under `overflow: Never`. Memoised per limit array (one per placement)."""
    table = _CEILINGS.of(memo.memos)
    key = ref(limit)
    found = table.get(key)
    if found is None:
        found = limit.copy()
        if claimed.placement.overflow != "Never":
            config = memo.config.water_level_ceiling
            own = claimed.placement.water_level_ceiling
            for j, resource in enumerate(memo.fleet.resources):
                value = float(own.get(resource, config.get(resource, 1.0)))
                found[j] = max(value, float(limit[j]))
        table[key] = found
    return found


Score = Callable[[framework.Subject, framework.Outcome], framework.Outcome]
"""Scores an outcome's feasible clusters (the engine's `Pass._scored`)."""


def spill(
    fleet: Fleet,
    memo: facts.Facts,
    claimed: facts.Claimed,
    subject: framework.Subject,
    within: framework.Outcome,
    score: Score,
) -> Spilled | None:
    """The partial placement of a workload that the limits could not place whole (`subject`
    as the filters saw it at its turn, `within` their outcome); None when it does not apply,
    no spread selection meets its constraints, or nothing fits anywhere."""
    replicas = subject.replicas or 0
    if not applies(claimed) or replicas <= 0:
        return None
    top = ceiling(memo, claimed, subject.limit)
    above, outcome = subject, within
    if not np.array_equal(top, subject.limit):
        headroom, allocatable = memo.room(_scale(subject), subject.requested, top, replicas)
        for row, _ in fleet.stuck(claimed.workload.key):
            allocatable[row] = 0  # pods pend there: no overflow either (`Pass._stuck`)
        above = replace(subject, limit=top, headroom=headroom, allocatable=allocatable)
        outcome = framework.apply_filters(fleet, above)
    chosen = outcome.feasible
    if claimed.placement.spread:
        outcome = score(above, outcome)
        picked = _spread(fleet, above, outcome, replicas)
        if picked is None:
            return None
        chosen = np.zeros(fleet.size, dtype=bool)
        chosen[picked] = True
    base = np.where(within.feasible & chosen, subject.available, 0).astype(np.int64)
    if int(base.sum()) >= replicas:
        return None  # not a shortfall of room: the caller's refusal stands
    over = np.zeros(fleet.size, dtype=np.int64)
    if above is not subject:
        room = np.where(chosen, np.maximum(above.available - base, 0), 0)
        usage = subject.usage + subject.demand[:, np.newaxis] * (base - subject.previous)
        capacity = fleet.capacity_by_resource
        left = replicas - int(base.sum())
        over = fill(left, room, usage, subject.demand, capacity, subject.requested)
    counts = base + over
    if not counts.any():
        return None
    return Spilled(counts, over, replicas - int(counts.sum()), outcome, above)


def _spread(
    fleet: Fleet, subject: framework.Subject, outcome: framework.Outcome, replicas: int
) -> IntArray | None:
    """The clusters spread selection picks at the ceiling (as `selecting.select` orders
    them), asked for no more replicas than they can take; None when no selection meets the
    constraints."""
    rows = rows_of(outcome.feasible)
    total = outcome.total if outcome.total is not None else np.zeros(fleet.size)
    available = subject.available
    ordered = rows[np.lexsort((rows, -available[rows], -total[rows]))]
    for asked in (min(replicas, int(available[rows].sum())), None):
        picked = spread.select(
            fleet,
            ordered,
            subject.placement.spread,
            scores=total,
            available=available,
            replicas=asked,
            strategy=subject.strategy,
            karmada=False,
        )
        if not isinstance(picked, spread.Unspreadable):
            return picked
    return None


def result(
    fleet: Fleet,
    subject: framework.Subject,
    spilled: Spilled,
    before: Decision | None,
    trigger: Trigger,
) -> Result:
    """The placement to record: `spilled`, its over-limit replicas (`over_limit`), and the
    trigger noting how many went past the limit and how many are pending."""
    over = over_limit(fleet, subject, spilled.counts, before, spilled.over)
    beyond = sum(p.replicas or 0 for p in over)
    if beyond:
        trigger = trigger.noting(f"{beyond} over the water-level limit")
    if spilled.pending:
        trigger = trigger.noting(f"{spilled.pending} pending")
    return Result(
        spilled.counts,
        rows_of(spilled.counts),
        trigger,
        over=over,
        pending=spilled.pending,
        short=spilled.message if spilled.pending else None,
    )


def _scale(subject: framework.Subject) -> FloatArray:
    """1 / demand per resource, NaN where the workload requests none (`Facts.room`)."""
    with np.errstate(divide="ignore"):
        scale: FloatArray = np.where(subject.demand > 0, 1.0 / subject.demand, np.nan)
    return scale


def fill(
    replicas: int,
    room: IntArray,
    usage: FloatArray,
    demand: FloatArray,
    capacity: FloatArray,
    requested: IntArray,
) -> IntArray:
    """Hand `replicas` out one at a time, each to the row with room whose water level after
    it is lowest (ties in name order), never more than `room` per row; in closed form.
    `usage` and `capacity` are (resources × rows), `demand` per replica and resource, and
    the level counts the `requested` resources with a finite, positive capacity.

    A row's level after k more replicas, L(k) = max over the requested resources of
    (usage + k × demand) / capacity (at least 0), never falls as k grows, so the replicas
    handed out are the `replicas` smallest of all rows' L(1..room): a bisection over float64
    finds the level t they reach, every row takes all its levels below t, and the few at t
    go in name order."""
    result = np.zeros(len(room), dtype=np.int64)
    rows = rows_of(room > 0)
    if replicas <= 0 or not len(rows):
        return result
    room_rows = room[rows]
    if int(room_rows.sum()) <= replicas:
        result[rows] = room_rows
        return result
    capacity = capacity[:, rows]
    bounded = np.isfinite(capacity[requested]) & (capacity[requested] > 0)
    cap = np.where(bounded, capacity[requested], 1.0)
    used = np.where(bounded, usage[requested][:, rows], 0.0)
    per = np.where(bounded, demand[requested][:, np.newaxis], 0.0)

    def level(k: IntArray) -> FloatArray:
        """L(k) per row, as float64, computed the one way every comparison uses."""
        value: FloatArray = np.max((used + k * per) / cap, axis=0, initial=0.0)
        return value

    def below(t: float) -> IntArray:
        """Per row, how many of L(1..room) are at most t: an estimate from the inverse of
        L, corrected against L itself."""
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = np.where(
                per > 0, np.floor((t * cap - used) / np.where(per > 0, per, 1)), np.inf
            )
        guess = steps.min(axis=0, initial=np.inf)
        count: IntArray = np.clip(guess, 0, room_rows).astype(np.int64)
        while True:
            grow = (count < room_rows) & (level(count + 1) <= t)
            shrink = (count > 0) & (level(count) > t)
            if not grow.any() and not shrink.any():
                return count
            count = (count + grow - shrink).astype(np.int64)

    if replicas <= ONE_BY_ONE:
        result[rows] = _one_by_one(replicas, room_rows, used, per, cap)
        return result
    low = -1  # float64 bits below every level (levels are at least 0)
    high = int(np.float64(float(level(room_rows).max())).view(np.int64))
    while high - low > 1:
        middle = (low + high) // 2
        if int(below(_float(middle)).sum()) >= replicas:
            high = middle
        else:
            low = middle
    taken = below(_float(low)) if low >= 0 else np.zeros(len(rows), dtype=np.int64)
    tied = below(_float(high)) - taken
    left = replicas - int(taken.sum())
    extra = np.minimum(tied, np.maximum(left - (np.cumsum(tied) - tied), 0))
    result[rows] = taken + extra
    return result


ONE_BY_ONE = 256
"""Up to this many replicas `fill` hands them out one by one (an argmin over the rows
each), which is quicker than its bisection's 64 rounds over every row."""


def _one_by_one(
    replicas: int, room: IntArray, used: FloatArray, per: FloatArray, cap: FloatArray
) -> IntArray:
    """`fill`'s rule as stated: each replica to the row whose level after it is lowest, the
    first in name order among equals (`argmin`); a row's level is worked out as `fill`'s
    `level` does, float for float."""
    taken = np.zeros(len(room), dtype=np.int64)
    upcoming: FloatArray = np.max((used + per) / cap, axis=0, initial=0.0)
    step = per[:, 0]
    for _ in range(replicas):
        row = int(np.argmin(upcoming))
        taken[row] += 1
        if taken[row] < room[row]:
            after = (used[:, row] + (taken[row] + 1) * step) / cap[:, row]
            upcoming[row] = np.max(after, initial=0.0)
        else:
            upcoming[row] = np.inf
    return taken


def _float(bits: int) -> float:
    return float(np.int64(bits).view(np.float64))


def over_limit(
    fleet: Fleet,
    subject: framework.Subject,
    counts: IntArray,
    carried: Decision | None,
    new: IntArray | None,
) -> tuple[Placed, ...]:
    """The replicas of this placement past the limit, per cluster: those it overflowed now
    (`new`) and those an earlier pass listed (`carried`) that it still holds, never more than
    its replicas there nor than the cluster's excess over its limit after the placement (in
    this workload's replicas)."""
    listed = np.zeros(fleet.size, dtype=np.int64)
    for placed in carried.over_limit if carried is not None else ():
        row = fleet.index.get(placed.cluster)
        if row is not None:
            listed[row] += placed.replicas or 0
    if new is not None:
        listed += new
    rows = rows_of(listed)
    if not len(rows):
        return ()
    limited = subject.requested[subject.limit[subject.requested] < 1.0]
    capacity = fleet.capacity_by_resource[np.ix_(limited, rows)]
    per = subject.demand[limited][:, np.newaxis]
    after = subject.usage[np.ix_(limited, rows)] + per * (counts[rows] - subject.previous[rows])
    excess = (after - subject.limit[limited][:, np.newaxis] * capacity) / per
    worst = np.max(np.where(np.isfinite(capacity), excess, 0.0), axis=0, initial=0.0)
    result = []
    names = fleet.name_list
    for row, count, most in zip(rows.tolist(), listed[rows].tolist(), worst.tolist(), strict=True):
        keep = min(count, int(counts[row]), max(0, math.ceil(most - 1e-9)))
        if keep > 0:
            result.append(Placed(names[row], keep))
    return tuple(result)
