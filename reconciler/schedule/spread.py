"""Cluster selection under spread constraints, with Karmada's semantics.

The candidates arrive sorted (overflow tier, score descending, available replicas descending,
name). Karmada's rules:

- no constraint, or a static-weight division: every candidate;
- `cluster` alone: the first min(#candidates, maxGroups); for a divided workload whose first
  clusters lack room, slots are replaced from the back by the remaining cluster with the most
  available replicas, when it has strictly more;
- a group field with `cluster`: groups are scored (`group_score`), a depth-first search picks
  the best combination of groups whose clusters reach the cluster constraint's minGroups (a
  prefix of the best path wins over the path), then the best cluster of each group, then more
  clusters by available replicas up to the cluster constraint's maxGroups.

Karmada groups by region only (zone and provider only filter), and a placement whose spread
constraints name neither region nor cluster (`spreadByLabel`, which Karmada does not implement)
is unschedulable with Karmada's error, as is a selection of no cluster. Such a refusal is an
`Unspreadable` value, returned in place of the selection. dro's own policies may group by
region, zone or provider, one of them. Karmada has no default for maxGroups (unset selects
nothing); in dro's policies an unset maxGroups means no limit.

Called by `schedule`, `schedule.overflow` and `schedule.selecting`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reconciler.domain import SpreadConstraint, Strategy
from reconciler.schedule.fleet import Fleet, FloatArray, IntArray

WEIGHT_UNIT = 1000.0
MAX_SEARCHED_GROUPS = 16
"""Beyond this many groups the combination search is replaced by taking groups by score."""


@dataclass(frozen=True, slots=True)
class Unspreadable:
    """No selection satisfies the spread constraints: returned in place of the selection."""

    message: str
    """Why, in Karmada's words where Karmada has them."""


@dataclass(frozen=True, slots=True)
class _Group:
    name: str
    value: int
    weight: float


def select(
    fleet: Fleet,
    ordered: IntArray,
    constraints: Sequence[SpreadConstraint],
    *,
    scores: FloatArray,
    available: IntArray,
    replicas: int | None,
    strategy: Strategy,
    karmada: bool,
) -> IntArray | Unspreadable:
    """The candidate rows to divide over, in candidate order, or why there are none."""
    if not constraints or strategy is Strategy.STATIC_WEIGHT:
        return ordered
    if karmada:
        selected = _karmada(fleet, ordered, constraints, scores, available, replicas, strategy)
        if not isinstance(selected, Unspreadable) and not len(selected):
            return Unspreadable("no clusters available to schedule")
        return selected
    by_cluster = next((c for c in constraints if c.by == "cluster"), None)
    grouping = [c for c in constraints if c.by != "cluster"]
    if len(grouping) > 1:
        return Unspreadable("spread supports cluster plus one of region, zone or provider")
    cluster = by_cluster or SpreadConstraint(by="cluster", min_groups=1, max_groups=None)
    need = None if not strategy.divides or replicas is None else replicas
    if grouping:
        return _by_group(
            fleet, ordered, grouping[0], cluster, scores, available, need, replicas or 0, karmada
        )
    return _by_cluster(ordered, cluster, available, need, karmada)


def _karmada(
    fleet: Fleet,
    ordered: IntArray,
    constraints: Sequence[SpreadConstraint],
    scores: FloatArray,
    available: IntArray,
    replicas: int | None,
    strategy: Strategy,
) -> IntArray | Unspreadable:
    """Karmada's `selectBestClustersBySpreadConstraints`: by region when a region constraint
    exists, else by cluster when a cluster constraint exists, else an error: zone and provider
    only filter, and `spreadByLabel` is not implemented."""
    fields = {c.by: c for c in constraints if not c.by_label}
    cluster = fields.get("cluster") or SpreadConstraint(by="cluster", min_groups=1, max_groups=None)
    need = None if not strategy.divides or replicas is None else replicas
    if "region" in fields:
        region = fields["region"]
        return _by_group(
            fleet, ordered, region, cluster, scores, available, need, replicas or 0, True
        )
    if "cluster" in fields:
        return _by_cluster(ordered, cluster, available, need, True)
    return Unspreadable("just support cluster and region spread constraint")


def _max(constraint: SpreadConstraint, karmada: bool, fallback: int) -> int:
    if constraint.max_groups is None:
        return 0 if karmada else fallback
    return constraint.max_groups


def _by_cluster(
    ordered: IntArray,
    constraint: SpreadConstraint,
    available: IntArray,
    need: int | None,
    karmada: bool,
) -> IntArray | Unspreadable:
    if len(ordered) < constraint.min_groups:
        return Unspreadable(
            "the number of feasible clusters is less than spreadConstraint.MinGroups"
        )
    count = min(len(ordered), _max(constraint, karmada, len(ordered)))
    if need is None:
        return ordered[:count]
    chosen = list(ordered[:count])
    rest = list(ordered[count:])
    slot = count - 1
    while sum(int(available[r]) for r in chosen) < need and slot >= 0:
        best, most = None, int(available[chosen[slot]])
        for index, row in enumerate(rest):
            if int(available[row]) > most:
                best, most = index, int(available[row])
        if best is not None:
            chosen[slot], rest[best] = rest[best], chosen[slot]
        slot -= 1
    if sum(int(available[r]) for r in chosen) < need or not chosen:
        return Unspreadable(f"no enough resource when selecting {count} clusters")
    return np.array(chosen, dtype=np.int64)


def _by_group(
    fleet: Fleet,
    ordered: IntArray,
    grouping: SpreadConstraint,
    cluster: SpreadConstraint,
    scores: FloatArray,
    available: IntArray,
    need: int | None,
    replicas: int,
    karmada: bool,
) -> IntArray | Unspreadable:
    field = fleet.topology(grouping.by)
    members: dict[str, list[int]] = {}
    for row in ordered.tolist():
        if field[row] is not None:
            members.setdefault(str(field[row]), []).append(row)
    if len(members) < grouping.min_groups:
        return Unspreadable(
            f"the number of feasible {grouping.by}s is less than spreadConstraint.MinGroups"
        )
    groups = [
        _Group(
            name,
            len(rows),
            _group_score(rows, grouping, cluster, scores, available, need, replicas),
        )
        for name, rows in members.items()
    ]
    most = _max(grouping, karmada, len(groups))
    chosen = _select_groups(groups, grouping.min_groups, most, cluster.min_groups)
    if not chosen:
        return Unspreadable(
            "the number of clusters is less than the cluster spreadConstraint.MinGroups"
        )
    picked = [members[g.name][0] for g in chosen]
    rest = [row for g in chosen for row in members[g.name][1:]]
    count = min(len(picked) + len(rest), _max(cluster, karmada, len(picked) + len(rest)))
    position = {row: i for i, row in enumerate(ordered.tolist())}
    rest.sort(key=lambda row: (-int(available[row]), position[row]))
    picked += rest[: max(0, count - len(picked))]
    return np.array(sorted(picked, key=position.__getitem__), dtype=np.int64)


def _group_score(
    rows: list[int],
    grouping: SpreadConstraint,
    cluster: SpreadConstraint,
    scores: FloatArray,
    available: IntArray,
    need: int | None,
    replicas: int,
) -> float:
    """Karmada's calcGroupScore: capacity first (in units of 1000), then the mean score."""
    if need is None:
        fitting = [r for r in rows if int(available[r]) >= replicas]
        mean = float(np.mean(scores[fitting])) if fitting else 0.0
        return len(fitting) * WEIGHT_UNIT + mean
    target = math.ceil(need / max(1, grouping.min_groups))
    wanted = max(cluster.min_groups, grouping.min_groups)
    total_available, total_score = 0, 0.0
    for count, row in enumerate(rows, start=1):
        total_available += int(available[row])
        total_score += float(scores[row])
        if count >= wanted and total_available >= target:
            return target * WEIGHT_UNIT + total_score / count
    return total_available * WEIGHT_UNIT + total_score / len(rows)


def _select_groups(groups: list[_Group], minimum: int, maximum: int, target: int) -> list[_Group]:
    """Karmada's selectGroups: a depth-first search over combinations of groups."""
    if not groups:
        return []
    groups = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    if len(groups) > MAX_SEARCHED_GROUPS:
        return _greedy(groups, minimum, maximum, target)
    paths: list[tuple[float, int, int, list[_Group]]] = []
    path: list[_Group] = []

    def search(total: int, begin: int) -> None:
        if total >= target and minimum <= len(path) <= maximum:
            chosen = sorted(path, key=lambda g: (-g.weight, g.name))
            weight = sum(g.weight for g in chosen)
            value = sum(g.value for g in chosen)
            paths.append((weight, value, len(paths), chosen))
            return
        if len(path) >= maximum:
            return
        for index in range(begin, len(groups)):
            path.append(groups[index])
            search(total + groups[index].value, index + 1)
            path.pop()

    search(0, 0)
    if not paths:
        return []
    paths.sort(key=lambda p: (-p[0], -p[1], p[2]))
    best = paths[0][3]
    for _, _, _, candidate in paths[1:]:
        if len(candidate) < len(best) and [g.name for g in best[: len(candidate)]] == [
            g.name for g in candidate
        ]:
            best = candidate
    return best


def _greedy(groups: list[_Group], minimum: int, maximum: int, target: int) -> list[_Group]:
    chosen: list[_Group] = []
    for group in sorted(groups, key=lambda g: (-g.weight, g.name)):
        if len(chosen) >= maximum:
            break
        chosen.append(group)
        if len(chosen) >= minimum and sum(g.value for g in chosen) >= target:
            return chosen
    return []
