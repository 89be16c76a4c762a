"""Steering by scale changes: dro's DynamicWeight and Aggregated policies scale by water level.

When the only reason to divide a workload again is a change of its replica count, Karmada's
division merges the extra replicas in proportion to each candidate's room and takes replicas
away in proportion to each holder's count. dro's own policies steer instead:

- a scale-down takes replicas away one at a time from the holder with the highest water level
  (before the removal), so the hottest holders shrink first;
- a scale-up adds them one at a time to the candidate with the lowest water level after the
  addition, each within its room under the water-level limit (Karmada's AllocatableReplicas);
  an Aggregated workload adds only to the clusters Karmada's Aggregated division would use
  (the holders first, then the fewest others that cover the extra replicas), the coolest of
  them first, so it stays on as few clusters as before;
- nothing else changes: a scale-up only adds, a scale-down only removes, so no running replica
  moves, and a diurnal workload re-balances as it scales. With overflow tiers (ordered affinity
  terms) a scale-up fills the first tier before the next, and a scale-down empties the last
  tier first.

A cluster's water level here is the highest, over the resources the workload requests and
the cluster bounds, of usage / capacity, the usage being the pass's ledger at the workload's
turn (`usage_seen`: the one place a forecast level enters). Ties go to name order, reversed
when Karmada's UID tie-breaker says so. Up to `ONE_BY_ONE` replicas are handed out with a
heap; above it a bisection over the water level finds the same result without a step per
replica. A shortfall of room, a Fresh division, a holder that is no longer a candidate, or a
trigger besides the scale change leaves the division to Karmada's rules (`division`), as for
Karmada's kinds, whose division never changes.

Called by `schedule.selecting`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from reconciler.domain import Strategy, Trigger, TriggerCode
from reconciler.schedule import division, framework
from reconciler.schedule.fleet import Fleet, FloatArray, IntArray, rows_of, some

ONE_BY_ONE = 1024
"""Replica counts up to which replicas are handed out one at a time with a heap."""

SHOWN = 4
"""Clusters a diagnosis names before it says how many more there are."""


@dataclass(frozen=True, slots=True)
class Steered:
    """A steered division: the replicas per cluster row, and the trigger's clause saying
    where the change went."""

    counts: IntArray
    note: str


def usage_seen(subject: framework.Subject) -> FloatArray:
    """(resources × clusters) usage the water levels are computed from: the pass's ledger at
    the workload's turn, which already holds the workload's previous replicas."""
    return subject.usage


def steer(
    fleet: Fleet,
    subject: framework.Subject,
    selected: IntArray,
    tiers: IntArray,
    trigger: Trigger,
    *,
    fresh: bool,
) -> Steered | None:
    """The steered division of `subject` over the `selected` rows, or None when Karmada's
    division applies: not a dro policy, not DynamicWeight or Aggregated, a trigger other than
    the scale change, a Fresh division, a holder left out of `selected`, no bounded resource
    to read a level from, or too little room for a scale-up."""
    if not _applies(subject, selected, trigger, fresh=fresh):
        return None
    levels = _Levels.of(fleet, subject)
    if levels is None:
        return None
    previous = subject.previous
    wanted = subject.replicas or 0
    held = int(previous.sum())
    descending = division.names_descending(subject.workload.uid)
    counts = previous.copy()
    if wanted < held:
        left = held - wanted
        for rows in _tier_groups(tiers, rows_of(previous), last_first=True):
            take = min(left, int(counts[rows].sum()))
            if take > 0:
                counts[rows] -= levels.remove(take, rows, counts[rows], descending)
                left -= take
        return Steered(counts, _said(fleet, previous - counts, "left the hottest", "-"))
    room = np.maximum(subject.allocatable, 0)
    if int(room[selected].sum()) < wanted - held:
        return None  # a shortfall: Karmada's all-or-nothing answer (and its message)
    left = wanted - held
    for tier in _tier_groups(tiers, selected, last_first=False):
        if left <= 0:
            break
        take = min(left, int(room[tier].sum()))
        if take <= 0:
            continue
        rows = tier
        if subject.strategy is Strategy.AGGREGATED:
            rows = _aggregated(tier, room[tier], previous[tier], take)
        counts[rows] += levels.add(take, rows, room[rows], descending)
        left -= take
    return Steered(counts, _said(fleet, counts - previous, "went to the coolest", "+"))


def _applies(
    subject: framework.Subject, selected: IntArray, trigger: Trigger, *, fresh: bool
) -> bool:
    """Whether the only trigger is a scale change of a dro DynamicWeight or Aggregated
    workload whose holders are all still selected."""
    if not subject.extensions or fresh or subject.replicas is None:
        return False
    if subject.strategy not in (Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED):
        return False
    if trigger.code is not TriggerCode.SCALED or trigger.then is not None:
        return False
    held = subject.previous > 0
    if not some(held) or int(subject.previous.sum()) == subject.replicas:
        return False
    chosen = np.zeros(len(held), dtype=bool)
    chosen[selected] = True
    return not some(held & ~chosen)


def _tier_groups(tiers: IntArray, rows: IntArray, *, last_first: bool) -> list[IntArray]:
    """`rows` grouped by overflow tier, each in the caller's order: the first tier first, or
    the last first."""
    if not some(tiers[rows]):
        return [rows]
    values = np.unique(tiers[rows]).tolist()
    if last_first:
        values.reverse()
    return [rows[tiers[rows] == value] for value in values]


def _aggregated(rows: IntArray, room: IntArray, previous: IntArray, take: int) -> IntArray:
    """The rows Karmada's Aggregated scale-up would use for `take` more replicas: holders
    first, then the most room, in the caller's order (best score first) among equals; the
    shortest prefix whose room covers `take`."""
    ordered = np.argsort(-room, kind="stable")
    held = previous[ordered] > 0
    ordered = np.concatenate([ordered[held], ordered[~held]])
    ordered = ordered[room[ordered] > 0]
    covered = np.cumsum(room[ordered])
    end = int(np.searchsorted(covered, take, side="left")) + 1
    return rows[ordered[:end]]


@dataclass(frozen=True, slots=True)
class _Levels:
    """The workload's requested resources that some cluster bounds: usage, capacity (inf
    where a cluster does not bound one) and the per-replica request, (k × clusters)."""

    usage: FloatArray
    capacity: FloatArray
    per: FloatArray

    @classmethod
    def of(cls, fleet: Fleet, subject: framework.Subject) -> _Levels | None:
        """The levels of `subject`'s requested resources; None when no cluster bounds any."""
        capacity = fleet.capacity_by_resource[subject.requested]
        bounded = np.isfinite(capacity) & (capacity > 0)
        keep = bounded.any(axis=1)
        if not keep.any():
            return None
        capacity = np.where(bounded, capacity, np.inf)[keep]
        usage = usage_seen(subject)[subject.requested][keep]
        return cls(usage=usage, capacity=capacity, per=subject.demand[subject.requested][keep])

    def add(self, n: int, rows: IntArray, limit: IntArray, descending: bool) -> IntArray:
        """Replicas per row of `rows` when `n` go, one at a time, to the row whose level after
        the addition is lowest, at most `limit` each."""
        units = _Units(self.usage[:, rows], self.capacity[:, rows], self.per, adding=True)
        return units.hand_out(n, limit, _ranks(rows, descending))

    def remove(self, n: int, rows: IntArray, limit: IntArray, descending: bool) -> IntArray:
        """Replicas taken per row of `rows` when `n` go, one at a time, from the row whose
        level before the removal is highest, at most `limit` each."""
        units = _Units(self.usage[:, rows], self.capacity[:, rows], self.per, adding=False)
        return units.hand_out(n, limit, _ranks(rows, descending))


def _ranks(rows: IntArray, descending: bool) -> IntArray:
    """Each row's place among equal keys: name order, or its reverse (Karmada's UID rule)."""
    ranks: IntArray = -rows if descending else rows
    return ranks


class _Units:
    """Replicas as units handed out one at a time among parties (columns). A party's k-th
    unit has a key, rising with k, and the lowest key goes next: adding, the level after the
    addition; removing, minus the level before the removal."""

    def __init__(self, usage: FloatArray, capacity: FloatArray, per: FloatArray, *, adding: bool):
        self.usage = usage
        self.capacity = capacity
        self.per = per[:, np.newaxis]
        self.adding = adding
        self.unbounded = np.isinf(capacity)
        self._columns: dict[int, list[tuple[float, float, float]]] = {}
        """Party → its (usage, capacity, request) per resource as floats, for `key_of`."""

    def key(self, k: IntArray) -> FloatArray:
        """Every party's key of its k-th unit (k ≥ 1)."""
        if self.adding:
            level: FloatArray = ((self.usage + k * self.per) / self.capacity).max(axis=0)
            return level
        before: FloatArray = -((self.usage - (k - 1) * self.per) / self.capacity).max(axis=0)
        return before

    def key_of(self, party: int, k: int) -> float:
        """`key` for one party: the same float64 operations, without the arrays."""
        column = self._columns.get(party)
        if column is None:
            usage, capacity = self.usage[:, party].tolist(), self.capacity[:, party].tolist()
            column = list(zip(usage, capacity, self.per[:, 0].tolist(), strict=True))
            self._columns[party] = column
        if self.adding:
            return max((u + k * p) / c for u, c, p in column)
        return -max((u - (k - 1) * p) / c for u, c, p in column)

    def estimate(self, t: float) -> FloatArray:
        """About how many of each party's units have a key ≤ t (`count` corrects it): a
        resource a cluster does not bound has level 0 there."""
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if self.adding:  # k ≤ (t·c − u)/p on every resource
                fit = np.floor((t * self.capacity - self.usage) / self.per)
                free = np.where(self.unbounded, np.inf if t >= 0 else -np.inf, fit)
                result: FloatArray = free.min(axis=0)
            else:  # k ≤ (u + t·c)/p + 1 on some resource
                fit = np.floor((self.usage + t * self.capacity) / self.per) + 1
                free = np.where(self.unbounded, np.inf if t >= 0 else -np.inf, fit)
                result = free.max(axis=0)
        return result

    def count(self, t: float, limit: IntArray) -> IntArray:
        """Each party's units with key ≤ t (at most its limit): the estimate, corrected with
        the exact keys."""
        rough = np.nan_to_num(self.estimate(t), nan=0.0, posinf=2.0**62, neginf=-1.0)
        count = np.clip(rough, 0, limit).astype(np.int64)
        while True:
            grow = (count < limit) & (self.key(count + 1) <= t)
            shrink = (count > 0) & ~(self.key(np.maximum(count, 1)) <= t)
            if not grow.any() and not shrink.any():
                return count
            count = count + grow - shrink

    def hand_out(
        self, n: int, limit: IntArray, ranks: IntArray, *, one_by_one: int = ONE_BY_ONE
    ) -> IntArray:
        """Units per party when `n` go one at a time to the lowest key of a party's next unit,
        then the lowest rank, at most `limit` each. Above `one_by_one` units, a bisection over
        the keys first finds the counts below a threshold: a prefix of the same sequence."""
        counts = self.below(n, limit) if n > one_by_one else np.zeros(len(limit), dtype=np.int64)
        return self.heap(n - int(counts.sum()), counts, limit, ranks)

    def below(self, n: int, limit: IntArray) -> IntArray:
        """The counts of all units with key ≤ t for the largest threshold t where they total
        at most `n`: a bisection over the float64 keys in their integer order."""
        low = _ordered(float(self.key(np.ones(len(limit), dtype=np.int64)).min())) - 1
        high = _ordered(float(self.key(np.maximum(limit, 1)).max()))
        found = np.zeros(len(limit), dtype=np.int64)
        while high - low > 1:
            middle = (low + high) // 2
            counts = self.count(_unordered(middle), limit)
            if int(counts.sum()) <= n:
                low, found = middle, counts
            else:
                high = middle
        return found

    def heap(self, n: int, counts: IntArray, limit: IntArray, ranks: IntArray) -> IntArray:
        """Hand `n` more units out one at a time from `counts`. Only a party whose next key is
        among the `n` lowest next keys can get one (every unit handed out has a key at most
        the n-th lowest of them), so the others stay out of the heap."""
        result = counts.copy()
        if n <= 0:
            return result
        nexts = self.key(result + 1)
        open_ = rows_of(result < limit)
        if n < len(open_):
            cut = np.partition(nexts[open_], n - 1)[n - 1]
            open_ = open_[nexts[open_] <= cut]
        held = result.tolist()
        most = limit.tolist()
        parties = open_.tolist()
        heap = list(zip(nexts[open_].tolist(), ranks[open_].tolist(), parties, strict=True))
        heapq.heapify(heap)
        for _ in range(n):
            _, rank, i = heapq.heappop(heap)
            held[i] += 1
            if held[i] < most[i]:
                heapq.heappush(heap, (self.key_of(i, held[i] + 1), rank, i))
        result[:] = held
        return result


def _ordered(value: float) -> int:
    """A float64 as an integer in the same order (negative floats included)."""
    bits = int(np.float64(value).view(np.int64))
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF) - 1


def _unordered(value: int) -> float:
    """The float64 that `_ordered` maps to `value`."""
    bits = value if value >= 0 else -(value + 1) | -0x8000000000000000
    return float(np.int64(bits).view(np.float64))


def _said(fleet: Fleet, change: IntArray, words: str, sign: str) -> str:
    """`went to the coolest: c +2, a +1`: the rows that changed, the most first."""
    rows = rows_of(change)
    rows = rows[np.lexsort((rows, -change[rows]))]
    named = [f"{fleet.name_list[r]} {sign}{int(change[r])}" for r in rows[:SHOWN].tolist()]
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return f"{words}: {', '.join(named)}{more}"
