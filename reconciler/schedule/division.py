"""Replica division with Karmada's exact semantics (v1.16 and later).

`webster` is the Sainte-Laguë seat allocation Karmada's dispenser uses: each seat goes to the
party with the largest votes / (2·seats + 1), compared as float64; ties go to fewer seats, then
by name, in reverse name order when the FNV-1a-32 hash of the template's UID is odd.

`assign` divides a workload's replicas over its candidate clusters by strategy:

- Duplicated: every candidate gets all replicas;
- StaticWeight: from scratch by the largest matching weight per cluster; weight-0 clusters drop
  out; when every weight is 0, every candidate weighs 1; no capacity check;
- DynamicWeight and Aggregated: by available replicas, with Karmada's fresh and steady modes:
  scale-up divides only the extra replicas and merges them into the previous assignment,
  scale-down uses the previous counts as weights, replicas on clusters that are no longer
  candidates are placed again, and a shortfall is all-or-nothing: an `Unschedulable` value,
  returned in place of the division.

`divide` is the same algorithm on arrays indexed by cluster row (rows in name order); the
scheduler calls it so that a pass never builds a per-cluster dict. `assign` is a thin wrapper.

Called by `schedule`, `schedule.facts`, `schedule.overflow`, `schedule.selecting` and
`schedule.steering`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reconciler.domain import Strategy

STRATEGIES = tuple(Strategy)
MAX_REPLICAS = 2**31 - 1
"""Karmada's MaxInt32: the available replicas of a cluster that nothing limits."""

IntArray = npt.NDArray[np.int64]

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """The candidates cannot hold the replicas; nothing is placed (all-or-nothing). Returned
    in place of a division: a shortfall is an expected answer, not an error."""

    available: int
    """The replicas the candidates can take in all."""

    @property
    def message(self) -> str:
        """Karmada's words for the shortfall."""
        return f"Clusters available replicas {self.available} are not enough to schedule."


def fnv1a_32(text: str) -> int:
    """The 32-bit FNV-1a hash of the UTF-8 bytes of `text`."""
    value = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def names_descending(uid: str) -> bool:
    """Karmada's UID tie-breaker: an odd FNV-1a-32 hash reverses the name order.

    Only the hash's lowest bit matters, and it needs no hashing: multiplying by the odd FNV
    prime keeps the lowest bit, so each step only XORs in the byte's lowest bit. Starting
    from the odd offset basis, the hash is odd exactly when the byte sum is even.
    """
    return bool(uid) and sum(uid.encode("utf-8")) % 2 == 0


def webster(
    seats: int, votes: Mapping[str, int], initial: Mapping[str, int] | None = None, uid: str = ""
) -> dict[str, int]:
    """Allocate `seats` new seats by the Webster / Sainte-Laguë method.

    Parties are the union of `votes` and `initial` (a party only in `initial` has 0 votes and
    keeps its seats). The result maps every party to its seats, sorted by name; it is empty
    when there are no parties.
    """
    if seats < 0:
        raise ValueError(f"seats must be >= 0, got {seats}")
    parties = sorted(set(votes) | set(initial or {}))
    if not parties:
        return {}
    start = np.array([(initial or {}).get(p, 0) for p in parties], dtype=np.int64)
    counts = webster_seats(
        seats,
        np.array([votes.get(p, 0) for p in parties], dtype=np.int64),
        start,
        descending=names_descending(uid),
    )
    return dict(zip(parties, counts.tolist(), strict=True))


def webster_seats(
    seats: int, votes: IntArray, initial: IntArray, *, descending: bool = False
) -> IntArray:
    """`webster` on arrays: parties are positions in name order; returns seats per party.

    Without initial seats, only the first `seats` parties by (votes descending, tie order) can
    win a seat: each of them beats any later party to its first seat. So the heap never holds
    more than `seats` parties, however many candidates there are. Above `BY_DIVISOR_ABOVE`
    seats, `webster_by_divisor` gives the same result without handing seats out one by one.
    """
    size = len(votes)
    if seats <= 0 or size == 0:
        return initial.astype(np.int64, copy=True)
    if seats > BY_DIVISOR_ABOVE:
        return webster_by_divisor(seats, votes, initial, descending=descending)
    if seats < size and not initial.any():
        members = _leading(votes, seats, descending)
        if 3 * int(votes[members[-1]]) > int(votes[members[0]]):
            # Every leading party's first quotient (its votes) beats every second quotient
            # (at most the largest votes / 3): one seat each, no heap needed.
            result = np.zeros(size, dtype=np.int64)
            result[members] = 1
            return result
        return _one_by_one(seats, votes, initial, members, descending)
    return _one_by_one(seats, votes, initial, np.arange(size), descending)


BY_DIVISOR_ABOVE = 2048
"""Seat counts above which `webster_seats` finds most seats by a divisor search: handing out
2,147,483,647 seats one by one took minutes; the search takes milliseconds."""


def webster_by_divisor(
    seats: int, votes: IntArray, initial: IntArray, *, descending: bool = False
) -> IntArray:
    """The same seats as handing them out one by one, in O(parties · log) steps.

    The one-by-one rule merges every party's quotients votes / (2k + 1), k = its seats so far,
    in the order (quotient descending, seats ascending, tie order); each party's own quotients
    already come in that order, so the first `seats` of the merge are the result. A bisection
    over float64 finds the smallest quotient `t` above which at most `seats` quotients lie:
    every party takes all of its quotients above `t` at once, which is a prefix of the merge,
    and the few seats left (fewer than the parties: quotients equal to `t`) go one by one.
    When nobody has votes, the order is seats ascending then tie order, the same as for
    equal votes, so the search runs on votes of 1.
    """
    size = len(votes)
    if seats <= 0 or size == 0:
        return initial.astype(np.int64, copy=True)
    quotas = votes if votes.any() else np.ones(size, dtype=np.int64)
    weights = quotas.astype(np.float64)
    cap = initial + seats + 1  # taking more than this already exceeds `seats`
    low = 0  # float64 bits of a quotient with more than `seats` quotients above it (or 0)
    high = int(np.float64(weights.max()).view(np.int64))  # nothing lies above the largest
    while high - low > 1:
        middle = (low + high) // 2
        above = _quotients_above(float(np.int64(middle).view(np.float64)), weights, cap)
        if int(np.maximum(above - initial, 0).sum()) <= seats:
            high = middle
        else:
            low = middle
    above = _quotients_above(float(np.int64(high).view(np.float64)), weights, cap)
    held = np.maximum(above, initial)
    left = seats - int((held - initial).sum())
    return _one_by_one(left, quotas, held, np.arange(size), descending)


def _quotients_above(threshold: float, weights: npt.NDArray[np.float64], cap: IntArray) -> IntArray:
    """For each party, how many of its quotients weight / (2k + 1), k = 0, 1, …, exceed
    `threshold` (at most `cap`): a float estimate, corrected by the exact float64 quotients,
    which fall as k grows."""
    with np.errstate(over="ignore"):
        estimate = np.floor((weights / threshold - 1.0) / 2.0) + 1.0
    count = np.clip(estimate, 0, cap).astype(np.int64)
    while True:
        grow = (count < cap) & (weights / (2 * count + 1) > threshold)
        shrink = (count > 0) & ~(weights / np.maximum(2 * count - 1, 1) > threshold)
        if not grow.any() and not shrink.any():
            return count
        count = count + grow - shrink


def _one_by_one(
    seats: int, votes: IntArray, initial: IntArray, members: IntArray, descending: bool
) -> IntArray:
    """Hand `seats` seats out one at a time among `members`, each to the largest
    votes / (2 × seats + 1) as float64 (Karmada's comparison), then fewer seats, then the
    tie order; parties outside `members` keep their initial seats."""
    vote = [float(v) for v in votes[members].tolist()]
    held = initial[members].tolist()
    order = (-members if descending else members).tolist()
    # A party's priority is votes / (2 × seats + 1); the heap pops the highest, then the
    # party with fewer seats, then the tie order.
    parties = zip(vote, held, order, strict=True)
    heap = [(-v / (2 * h + 1), h, r, j) for j, (v, h, r) in enumerate(parties)]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    for _ in range(seats):
        _, count, rank, party = pop(heap)
        count += 1
        held[party] = count
        push(heap, (-vote[party] / (2 * count + 1), count, rank, party))
    result = initial.astype(np.int64, copy=True)
    result[members] = held
    return result


def _leading(votes: IntArray, seats: int, descending: bool) -> IntArray:
    """The first `seats` parties by (votes descending, tie order). Only parties with at least
    the `seats`-th largest vote can be among them, so only those are sorted."""
    size = len(votes)
    threshold = np.partition(votes, size - seats)[size - seats]
    rows = (votes >= threshold).nonzero()[0]
    tie = -rows if descending else rows
    leading: IntArray = rows[np.lexsort((tie, -votes[rows]))[:seats]]
    return leading


def divide(
    strategy: Strategy,
    replicas: int,
    candidates: IntArray,
    *,
    size: int,
    static: IntArray | None = None,
    available: IntArray | None = None,
    previous: IntArray | None = None,
    descending: bool = False,
    fresh: bool = False,
    distinct: bool = False,
) -> IntArray | Unschedulable:
    """Divide `replicas` over the cluster rows `candidates` (in the caller's order).

    `distinct=True` promises that `candidates` has no repeated row, which spares a dedupe.

    Rows index arrays of length `size` and are in name order. `static` holds each row's
    largest matching weight (None when the policy lists no weights), `available` each row's
    free capacity in replicas (Karmada's AllocatableReplicas), `previous` the last assignment.
    Returns replicas per row, or `Unschedulable` when capacity is short.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    strategy = Strategy(strategy)  # a caller's plain name, as the enum
    if replicas < 0:
        raise ValueError(f"replicas must be >= 0, got {replicas}")
    if strategy is not Strategy.AGGREGATED:
        candidates = np.sort(candidates) if distinct else np.unique(candidates)
    elif not distinct:
        candidates = _first_seen(candidates)
    result = np.zeros(size, dtype=np.int64)
    if not strategy.divides:
        result[candidates] = replicas
        return result
    if strategy is Strategy.STATIC_WEIGHT:
        weights = np.ones(len(candidates), dtype=np.int64)
        if static is not None and static[candidates].any():
            weights = static[candidates]
        keep = weights > 0
        chosen = candidates[keep]  # unique rows, already in name order
        result[chosen] = webster_seats(
            replicas, weights[keep], _zeros(chosen), descending=descending
        )
        return result
    free = _zeros(candidates) if available is None else np.maximum(available[candidates], 0)
    before = _zeros(candidates) if previous is None else np.maximum(previous[candidates], 0)
    divided = _dynamic(strategy, replicas, candidates, free, before, descending, fresh)
    if isinstance(divided, Unschedulable):
        return divided
    result[candidates] = divided
    return result


def _zeros(rows: IntArray) -> IntArray:
    return np.zeros(len(rows), dtype=np.int64)


def _first_seen(rows: IntArray) -> IntArray:
    _, first = np.unique(rows, return_index=True)
    return rows[np.sort(first)]


def _dynamic(
    strategy: Strategy,
    replicas: int,
    candidates: IntArray,
    free: IntArray,
    scheduled: IntArray,
    descending: bool,
    fresh: bool,
) -> IntArray | Unschedulable:
    """DynamicWeight and Aggregated over the candidates (no row twice): `free` and `scheduled`
    are their free capacity and previous replicas; returns their new replicas, or
    `Unschedulable` when the weights cannot cover the replicas."""
    assigned = int(scheduled.sum())
    merge = False
    if fresh:
        target = replicas
        weights = free + scheduled
    elif assigned > replicas:
        target = replicas  # the previous replicas are the weights; the others weigh nothing
        weights = scheduled
    elif assigned < replicas:
        target = replicas - assigned
        weights = free
        merge = True
    else:
        return scheduled
    total = int(weights.sum())
    if total < target:
        return Unschedulable(total)
    voters = (weights > 0).nonzero()[0]
    if strategy is Strategy.AGGREGATED:
        # A stable sort by weight descending keeps the caller's order among equals; the
        # weightless come last and never enter the covering prefix.
        ordered = np.argsort(-weights, kind="stable")
        ordered = _aggregated_prefix(ordered, weights, target, scheduled if merge else None)
        voters = ordered[weights[ordered] > 0]
        voters = voters[np.argsort(candidates[voters])]  # the division counts in name order
    result = np.zeros(len(candidates), dtype=np.int64)
    result[voters] = webster_seats(target, weights[voters], _zeros(voters), descending=descending)
    if merge and assigned:
        result += scheduled
    return result


def _aggregated_prefix(
    ordered: IntArray, weights: IntArray, target: int, holders: IntArray | None
) -> IntArray:
    """The shortest prefix covering `target`, previous holders first (scale-up only)."""
    if holders is not None:
        held = holders[ordered] > 0
        ordered = np.concatenate([ordered[held], ordered[~held]])
    covered = np.cumsum(weights[ordered])
    end = int(np.searchsorted(covered, target, side="left")) + 1
    return ordered[: min(end, len(ordered))]


def assign(
    strategy: Strategy,
    replicas: int,
    candidates: Sequence[str],
    *,
    static_weights: Sequence[tuple[str, int]] | None = None,
    available: Mapping[str, int] | None = None,
    previous: Mapping[str, int] | None = None,
    uid: str = "",
    fresh: bool = False,
) -> dict[str, int] | Unschedulable:
    """Divide `replicas` over `candidates` (in the caller's order) by `strategy`.

    `static_weights` lists (cluster, weight) for every rule that matches a cluster; the largest
    weight per cluster counts. `available` is each candidate's free capacity in replicas
    (Karmada's AllocatableReplicas); `previous` the last assignment. Returns cluster → replicas
    with zero entries dropped, sorted by name; `Unschedulable` when capacity is short.
    """
    names = sorted(set(candidates) | set(previous or {}) | {n for n, _ in static_weights or ()})
    row = {name: i for i, name in enumerate(names)}
    size = len(names)
    static = None
    if static_weights:
        static = np.zeros(size, dtype=np.int64)
        for name, weight in static_weights:
            static[row[name]] = max(static[row[name]], weight)
    result = divide(
        strategy,
        replicas,
        np.array([row[c] for c in candidates], dtype=np.int64),
        size=size,
        static=static,
        available=_column(available, row, size),
        previous=_column(previous, row, size),
        descending=names_descending(uid),
        fresh=fresh,
    )
    if isinstance(result, Unschedulable):
        return result
    return {names[i]: int(result[i]) for i in np.flatnonzero(result > 0)}


def _column(values: Mapping[str, int] | None, row: Mapping[str, int], size: int) -> IntArray:
    column = np.zeros(size, dtype=np.int64)
    for name, value in (values or {}).items():
        if name in row:
            column[row[name]] = value
    return column
