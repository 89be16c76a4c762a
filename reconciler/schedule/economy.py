"""Cost steering: a divided workload keeps to its cheapest candidates while the fleet is cool.

Scores alone barely move a division: DynamicWeight divides by available replicas and
Aggregated orders by them, as in Karmada, so the `Cost` scorer only breaks ties. For dro's
DynamicWeight and Aggregated policies cost therefore steers the division itself, as STCI's
`placing.near_data` does for data:

- `cheapest`: the candidates are narrowed to the cheapest ones (cost per replica-hour,
  `pricing`; then the most room) that can take all the replicas while each stays within
  min(limit, the fleet's water level + `SPILL` × pull), and every candidate as cheap as the
  dearest of them. Spread constraints still hold: the cheapest candidate of another group joins
  until each constraint's minGroups are spanned. The clusters the workload runs on stay
  candidates, so none of its running replicas moves to save money, but a dearer one takes no
  new replica (`Steered.closed`): a scale-up goes to the cheap ones.
- `trim`: a scale-down removes replicas from holders above that level first, then from the
  dearest (then the hottest).
- `destinations`: re-balancing moves a replica off a hot cluster to the cheapest destination
  that stays within that level and relieves it, else to the coolest.

A cluster without a price counts as the dearest. The pull is the Cost weight of the pass over
2, at most 1 (`pull`): with the automatic weights, 1 − s on a fleet of heat s (`facts.heat`),
so a cool fleet aggregates on its cheapest clusters, a warmer one fills them less far above the
fleet's level, and a hot fleet (s = 1) or `pluginWeights.Cost: 0` divides exactly as without a
price.

Called by `schedule.engine`, `schedule.rebalance` and `schedule.selecting`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reconciler.schedule import framework, placing, pricing
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray

SPILL = 0.2
"""How far above the fleet's water level a cheap cluster fills at full pull, always within its
limit. On a two-day diurnal trace (2026-11-24) 0.4 (STCI's `placing.SPILL`) saved a little more
(3.6 % against 3.2 %) but left cheap clusters hot: 62 overload events against 50 (30 with
Cost off); 0 saved 3.1 % with 55."""


def pull(weights: Mapping[str, float]) -> float:
    """How strongly cost steers divisions this pass: the Cost weight over 2, within [0, 1]."""
    return min(1.0, max(0.0, float(weights.get("Cost", 0.0)) / 2.0))


@dataclass(frozen=True, slots=True)
class Steered:
    """The candidates a division keeps to for cost."""

    selected: IntArray
    closed: IntArray
    """Rows among `selected` that keep the replicas they hold but take no new one."""


def costs(fleet: Fleet, subject: framework.Subject) -> FloatArray:
    """One replica's cost per hour on each cluster, inf where it has no price."""
    each = pricing.per_replica_hour(fleet, subject.demand)
    priced: FloatArray = np.where(np.isnan(each), np.inf, each)
    return priced


def _differ(cost: FloatArray) -> bool:
    """Whether the costs tell the rows apart (some finite, not all equal)."""
    finite = np.isfinite(cost)
    return bool(finite.any()) and float(cost.max()) > float(cost.min())


def cheapest(
    fleet: Fleet,
    subject: framework.Subject,
    selected: IntArray,
    load: float,
    strength: float,
) -> Steered:
    """The candidates a divided workload keeps to for cost (see the module); `selected` as it
    is, nothing closed, when nothing steers: no pull, fewer than two candidates, no price
    difference, or even all the cheap ones cannot take the replicas."""
    unsteered = Steered(selected, selected[:0])
    if strength <= 0.0 or selected.size < 2:
        return unsteered
    cost = costs(fleet, subject)[selected]
    if not _differ(cost):
        return unsteered
    room = placing.balanced_room(fleet, subject, load + SPILL * strength)[selected]
    order = np.lexsort((selected, -room, cost))
    covered = np.cumsum(room[order]) >= (subject.replicas or 0)
    if not covered.any():
        return unsteered
    last = order[int(np.argmax(covered))]
    cheap = cost <= cost[last]
    for constraint in subject.placement.spread:
        _spread_enough(fleet.topology(constraint.by)[selected], constraint.min_groups, order, cheap)
    held = subject.previous[selected] > 0
    kept: IntArray = selected[cheap | held]
    closed: IntArray = selected[held & ~cheap]
    return Steered(kept, closed)


def _spread_enough(
    groups: npt.NDArray[np.object_], minimum: int, order: IntArray, keep: BoolArray
) -> None:
    """Add to `keep`, in `order`, the first candidate of each group it lacks until it spans
    `minimum` groups (a spread constraint's minGroups; the spread selection already made sure
    the candidates span that many)."""
    held = {groups[i] for i in np.flatnonzero(keep).tolist()}
    for i in order.tolist():
        if len(held) >= minimum:
            return
        if not keep[i] and groups[i] not in held:
            keep[i] = True
            held.add(groups[i])


def destinations(
    fleet: Fleet,
    subject: framework.Subject,
    rows: IntArray,
    after: FloatArray,
    load: float,
    strength: float,
) -> FloatArray:
    """Re-balancing's cost key for destination `rows` whose water level after taking a
    replica is `after`: the cost per replica-hour where that stays within the fleet's level +
    `SPILL` × pull, inf beyond (those rank by level alone), 0 everywhere when cost does not
    steer."""
    if strength <= 0.0:
        return np.zeros(rows.size)
    cost = costs(fleet, subject)[rows]
    ranked: FloatArray = np.where(after <= load + SPILL * strength, cost, np.inf)
    return ranked


def trim(
    fleet: Fleet,
    subject: framework.Subject,
    selected: IntArray,
    replicas: int,
    *,
    load: float = 0.0,
    strength: float = 1.0,
) -> IntArray | None:
    """A scale-down that removes replicas first from the holders among `selected` above the
    fleet's level + `SPILL` × pull, then from the dearest, then the hottest, then by name; None
    when the prices of the holders do not differ (the division then scales down as Karmada
    does). Returns replicas per cluster row."""
    previous = subject.previous
    rows = selected[previous[selected] > 0]
    held = int(previous[rows].sum())
    if held <= replicas or rows.size < 2:
        return None
    cost = costs(fleet, subject)[rows]
    if not _differ(cost):
        return None
    level = _level(fleet, subject, rows)
    hot = level > load + SPILL * strength
    order = np.lexsort((rows, -level, -cost, ~hot))
    ranked = rows[order]
    counts = previous[ranked]
    before = np.cumsum(counts) - counts  # removed ahead of each holder
    removed = np.clip(held - replicas - before, 0, counts)
    result = np.zeros(fleet.size, dtype=np.int64)
    result[ranked] = counts - removed
    return result


def _level(fleet: Fleet, subject: framework.Subject, rows: IntArray) -> FloatArray:
    """The water level of `rows` on the resources the workload requests (0 when none)."""
    requested = subject.requested
    if requested.size == 0:
        return np.zeros(rows.size)
    capacity = fleet.capacity_by_resource[np.ix_(requested, rows)]
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(capacity > 0, subject.usage[np.ix_(requested, rows)] / capacity, 1.0)
    result: FloatArray = level.max(axis=0)
    return result
