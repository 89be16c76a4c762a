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
  candidates are placed again, and a shortfall is all-or-nothing `Unschedulable`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

STRATEGIES = ("Duplicated", "StaticWeight", "DynamicWeight", "Aggregated")

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


class Unschedulable(Exception):
    """The candidates cannot hold the replicas; nothing is placed (all-or-nothing)."""


def fnv1a_32(text: str) -> int:
    """The 32-bit FNV-1a hash of the UTF-8 bytes of `text`."""
    value = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def names_descending(uid: str) -> bool:
    """Karmada's UID tie-breaker: an odd FNV-1a-32 hash reverses the name order."""
    return bool(uid) and fnv1a_32(uid) % 2 == 1


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
    order = {
        name: (-index if names_descending(uid) else index) for index, name in enumerate(parties)
    }
    current = {name: int((initial or {}).get(name, 0)) for name in parties}
    heap = [(-_priority(votes.get(n, 0), current[n]), current[n], order[n], n) for n in parties]
    heapq.heapify(heap)
    for _ in range(seats):
        _, held, _, name = heapq.heappop(heap)
        current[name] = held + 1
        heapq.heappush(
            heap, (-_priority(votes.get(name, 0), held + 1), held + 1, order[name], name)
        )
    return dict(sorted(current.items()))


def _priority(votes: int, seats: int) -> float:
    return float(votes) / float(2 * seats + 1)


def assign(
    strategy: str,
    replicas: int,
    candidates: Sequence[str],
    *,
    static_weights: Sequence[tuple[str, int]] | None = None,
    available: Mapping[str, int] | None = None,
    previous: Mapping[str, int] | None = None,
    uid: str = "",
    fresh: bool = False,
) -> dict[str, int]:
    """Divide `replicas` over `candidates` (in the caller's order) by `strategy`.

    `static_weights` lists (cluster, weight) for every rule that matches a cluster; the largest
    weight per cluster counts. `available` is each candidate's free capacity in replicas
    (Karmada's AllocatableReplicas); `previous` the last assignment. Returns cluster → replicas
    with zero entries dropped, sorted by name. Raises `Unschedulable` when capacity is short.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if replicas < 0:
        raise ValueError(f"replicas must be >= 0, got {replicas}")
    if strategy == "Duplicated":
        return dict.fromkeys(sorted(set(candidates)), replicas)
    if strategy == "StaticWeight":
        return _static(replicas, candidates, static_weights, uid)
    return _dynamic(strategy, replicas, candidates, available or {}, previous or {}, uid, fresh)


def _nonzero(result: Mapping[str, int]) -> dict[str, int]:
    return {name: count for name, count in sorted(result.items()) if count > 0}


def _static(
    replicas: int,
    candidates: Sequence[str],
    static_weights: Sequence[tuple[str, int]] | None,
    uid: str,
) -> dict[str, int]:
    names = set(candidates)
    weights = dict.fromkeys(names, 0)
    if not static_weights:
        weights = dict.fromkeys(names, 1)
    for name, weight in static_weights or ():
        if name in weights:
            weights[name] = max(weights[name], weight)
    if weights and not any(weights.values()):
        weights = dict.fromkeys(names, 1)
    votes = {name: weight for name, weight in weights.items() if weight > 0}
    return _nonzero(webster(replicas, votes, uid=uid))


def _dynamic(
    strategy: str,
    replicas: int,
    candidates: Sequence[str],
    available: Mapping[str, int],
    previous: Mapping[str, int],
    uid: str,
    fresh: bool,
) -> dict[str, int]:
    names = list(dict.fromkeys(candidates))
    scheduled = {n: previous[n] for n in names if previous.get(n, 0) > 0}
    assigned = sum(scheduled.values())
    merge = False
    if fresh:
        target = replicas
        weights = {n: max(0, available.get(n, 0)) + scheduled.get(n, 0) for n in names}
    elif assigned > replicas:
        target = replicas
        weights = dict(scheduled)
    elif assigned < replicas:
        target = replicas - assigned
        weights = {n: max(0, available.get(n, 0)) for n in names}
        merge = True
    else:
        return _nonzero(scheduled)
    # Stable sort by weight descending keeps the caller's order among equals.
    ordered = sorted((n for n in names if n in weights), key=lambda n: -weights[n])
    total = sum(weights[n] for n in ordered)
    if total < target:
        raise Unschedulable(f"Clusters available replicas {total} are not enough to schedule.")
    if strategy == "Aggregated":
        ordered = _aggregated_prefix(ordered, weights, target, scheduled if merge else {})
    votes = {n: weights[n] for n in ordered if weights[n] > 0}
    result = webster(target, votes, uid=uid)
    if merge:
        for name, count in scheduled.items():
            result[name] = result.get(name, 0) + count
    return _nonzero(result)


def _aggregated_prefix(
    ordered: list[str], weights: Mapping[str, int], target: int, holders: Mapping[str, int]
) -> list[str]:
    """The shortest prefix covering `target`, previous holders first (scale-up only)."""
    front = [n for n in ordered if n in holders] + [n for n in ordered if n not in holders]
    covered = 0
    for index, name in enumerate(front):
        covered += weights[name]
        if covered >= target:
            return front[: index + 1]
    return front
