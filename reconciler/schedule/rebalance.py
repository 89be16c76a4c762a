"""Re-balancing: move replicas off draining clusters and clusters above their water-level limit,
within a churn budget, make-before-break.

It runs after the pass, on the pass's decisions and usage ledger; `division.assign` stays the
Karmada-exact primitive, and this step only moves replicas that a decision already placed.

- Only movable workloads are touched (`facts.Claimed.movable`): stateless DynamicWeight and
  Aggregated workloads under dro's policies, or Karmada policies that opt in.
- Sources: draining clusters first (reason `cluster drained`), then clusters above a limit
  (usage — with forecasts, within the horizon, `foresight` — over limit × capacity on a
  resource a workload requests and limits; a passing burst is not), the furthest above first.
  There, workloads with replicas overflowed onto it (reason `over limit`, whatever the
  threshold) go first, then those whose replica count changed, then by relief per replica
  (request of the hot resource / capacity); each moves just enough to get under the limit.
- Destinations: clusters where a new replica passes every filter now: nearest to the
  workload's data first (STCI), then, while cost steers (`economy.pull`), the cheapest, then
  the lowest water level after the move, when the source's level exceeds it by
  `rebalance.threshold` (drains ignore it). A destination stays within its limit, so it never
  becomes a source, and passes over an unchanged input converge.
- Filling (`Pass.filling`, added or recovered clusters): after the hot clusters, replicas move
  in one at a time from the most loaded ones while that beats the threshold, never farther from
  a workload's data; a pass that moves none in ends it (`still_filling`).
- Budget: `rebalance.maxMovesPerPass` of all movable replicas (a policy's own lowers it for
  its workloads). Cooldown: nothing moves off a cluster it moved onto within the cooldown.
  A workload's disruption budget (`disruption.Guard`) limits the clusters its moves touch.
- A move keeps the old copies running (`retiring`) until a pass observes the new copies
  Healthy (`engine.Pass.decide`); a workload with a move in flight does not move again. Only
  copies that ran before this pass retire: replicas this pass placed just move.

Called by `schedule`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from reconciler.domain import Decision, Move, Placed, durations
from reconciler.domain.reasons import MoveCode, MoveReason, Trigger, TriggerCode
from reconciler.schedule import disruption, economy, engine, express, facts, foresight, levels
from reconciler.schedule.fleet import BoolArray, FloatArray, IntArray, rows_of

DRAINED, REQUESTED = MoveReason(MoveCode.DRAINED), MoveReason(MoveCode.REQUESTED)


@dataclass(slots=True)
class _Holding:
    """One movable workload's decision as re-balancing edits it."""

    claimed: facts.Claimed
    position: int
    counts: dict[int, int]
    term: str | None
    recent: tuple[Move, ...]
    """Moves of earlier passes still within the cooldown."""
    scaling: bool = False
    """Its replica count changed this pass: its pods roll out anyway, so it moves early."""
    over: dict[int, int] = field(default_factory=dict)  # `Decision.over_limit`, by row
    settled: dict[int, int] = field(default_factory=dict)
    """Replicas per cluster that ran before this pass and that this pass's division keeps."""
    retiring: dict[int, int] = field(default_factory=dict)
    moves: list[Move] = field(default_factory=list)
    served: str | None = None
    """A `rebalance.requestedAt` whose Fresh division this pass completed."""
    guard: disruption.Guard | None = None  # its disruption budget, when it has one


@dataclass(slots=True)
class _Budget:
    fleet_left: int
    policy_left: dict[int, int]

    def allowed(self, claimed: facts.Claimed) -> int:
        own = self.policy_left.get(id(claimed.placement))
        return self.fleet_left if own is None else min(self.fleet_left, own)

    def spend(self, claimed: facts.Claimed, replicas: int) -> None:
        self.fleet_left -= replicas
        key = id(claimed.placement)
        if key in self.policy_left:
            self.policy_left[key] -= replicas


def run(
    ledger: engine.Pass,
    order: Sequence[facts.Claimed],
    decisions: list[Decision],
    demand: FloatArray,
    scale: FloatArray,
    node_fit: BoolArray,
    tracker: disruption.Tracker | None = None,
) -> list[Decision]:
    """Re-balance the pass's `decisions` (aligned with `order`) in place of the ledger, each
    move within its workload's disruption budget (`tracker`)."""
    fleet = ledger.fleet
    if levels.calm(ledger, order):
        return decisions
    holdings = _holdings(ledger, order, decisions, tracker)
    if not holdings:
        return decisions
    budget = _budget(ledger, holdings)
    if budget.fleet_left <= 0:
        return decisions
    by_cluster: dict[int, list[_Holding]] = {}
    for holding in holdings:
        for row in holding.counts:
            by_cluster.setdefault(row, []).append(holding)
    at = durations.rfc3339(ledger.now)
    changed: set[int] = set()
    for holding in holdings:
        wanted = ledger.fresh_targets.get(holding.claimed.workload.key)
        if wanted is not None:
            _toward(ledger, holding, wanted, demand[holding.position], budget, at)
            changed.add(holding.position)
    for source in _sources(ledger, holdings, by_cluster):
        draining = bool(fleet.draining[source])
        for holding in _by_relief(ledger, by_cluster[source], source, demand):
            if budget.fleet_left <= 0:
                break
            i = holding.position
            moved = _move_off(
                ledger, holding, source, draining, demand[i], scale[i], node_fit[i], budget, at
            )
            if moved:
                changed.add(i)
    for target in rows_of(ledger.filling).tolist():
        changed |= _fill(ledger, target, by_cluster, demand, scale, node_fit, budget, at)
    for holding in holdings:
        if holding.position in changed:
            decisions[holding.position] = _rebuilt(ledger, decisions[holding.position], holding)
    return decisions


def _holdings(
    ledger: engine.Pass,
    order: Sequence[facts.Claimed],
    decisions: Sequence[Decision],
    tracker: disruption.Tracker | None,
) -> list[_Holding]:
    result = []
    index = ledger.fleet.index
    for position, (claimed, decision) in enumerate(zip(order, decisions, strict=True)):
        if not claimed.movable or decision.unschedulable or not decision.clusters:
            continue
        if decision.retiring:
            continue  # a move still waits for its new copies: no second move on top
        counts = {index[p.cluster]: p.replicas or 0 for p in decision.clusters if p.replicas}
        before = ledger.previous.get(claimed.workload.key)
        settled = {
            index[p.cluster]: min(p.replicas or 0, counts.get(index[p.cluster], 0))
            for p in (before.clusters if before is not None else ())
            if p.cluster in index
        }
        result.append(
            _Holding(
                claimed=claimed,
                position=position,
                counts=counts,
                settled=settled,
                term=decision.affinity_term,
                recent=decision.moves,
                scaling=decision.diagnosis.trigger.code is TriggerCode.SCALED,
                over={index[p.cluster]: p.replicas or 0 for p in decision.over_limit},
                guard=tracker.guard(position) if tracker is not None else None,
            )
        )
    return result


def _budget(ledger: engine.Pass, holdings: Sequence[_Holding]) -> _Budget:
    total = sum(sum(h.counts.values()) for h in holdings)
    per_policy: dict[int, int] = {}
    budgets = {}
    for holding in holdings:
        placement = holding.claimed.placement
        if placement.max_moves is not None:
            key = id(placement)
            per_policy[key] = per_policy.get(key, 0) + sum(holding.counts.values())
            budgets[key] = placement.max_moves
    return _Budget(
        fleet_left=ledger.config.rebalance.max_moves.of(total),
        policy_left={key: budgets[key].of(replicas) for key, replicas in per_policy.items()},
    )


def _sources(
    ledger: engine.Pass, holdings: Sequence[_Holding], by_cluster: dict[int, list[_Holding]]
) -> list[int]:
    """Draining clusters, then clusters above some movable workload's limit, worst first."""
    fleet = ledger.fleet
    level = levels.level(ledger)
    excess = np.full(fleet.size, -np.inf)
    seen: set[int] = set()
    for holding in holdings:
        limit = ledger.facts.limit(holding.claimed)
        if id(limit) in seen:
            continue
        seen.add(id(limit))
        limited = rows_of(limit < 1.0)
        if len(limited):
            above = (level[limited] - limit[limited][:, np.newaxis]).max(axis=0)
            above[foresight.calm(ledger.foresight, limit, fleet.capacity_by_resource)] = -np.inf
            excess = np.maximum(excess, above)
    held = np.zeros(fleet.size, dtype=bool)
    held[list(by_cluster)] = True
    drained = rows_of(held & fleet.draining)
    hot = rows_of(held & ~fleet.draining & (excess > 0))
    hot = hot[np.lexsort((hot, -excess[hot]))]
    return [*drained.tolist(), *hot.tolist()]


def _by_relief(
    ledger: engine.Pass, holders: Sequence[_Holding], source: int, demand: FloatArray
) -> list[_Holding]:
    """Holders of `source`: workloads that scaled this pass first (their rollout happens
    anyway), then the largest request per replica (as a share of its capacity) first; ties by
    the scheduling order."""
    capacity = ledger.fleet.capacity_by_resource[:, source]
    rows = [h.position for h in holders]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(capacity > 0, demand[rows] / capacity, 0.0).max(axis=1).tolist()
    ranked = sorted(
        zip(share, rows, holders, strict=True),
        key=lambda t: (not t[2].over.get(source), not t[2].scaling, -t[0], t[1]),
    )
    return [holding for _, _, holding in ranked]


def _move_off(
    ledger: engine.Pass,
    holding: _Holding,
    source: int,
    draining: bool,
    demand: FloatArray,
    scale: FloatArray,
    node_fit: BoolArray,
    budget: _Budget,
    at: str,
) -> int:
    """Move what this workload should move off `source`; returns the replicas moved."""
    claimed = holding.claimed
    data = ledger.facts.data_row(claimed.workload.key)
    nowhere = (id(claimed.placement), demand.tobytes(), holding.term, id(data))  # alike
    if _cooling(ledger, holding, source) or ledger.nowhere.get(nowhere) == ledger.clock:
        return 0
    need, resource, reason = _need(ledger, holding, source, draining, demand)
    wanted = min(holding.counts.get(source, 0), need, budget.allowed(claimed))
    if wanted <= 0 or reason is None:
        return 0
    subject = ledger.facts.newcomer(claimed, demand, scale, node_fit, holding.term)
    feasible = express.feasible(ledger.fleet, subject)
    feasible[source] = False
    allocatable = subject.allocatable
    capacity = ledger.fleet.capacity_by_resource[resource]
    rows = rows_of(feasible & (allocatable > 0) & (capacity > 0))
    if not len(rows):
        ledger.nowhere[nowhere] = ledger.clock
        return 0
    level_before = float(ledger.usage[resource, source] / capacity[source])
    after_one = (ledger.usage[resource, rows] + demand[resource]) / capacity[rows]
    distance = data.bytes_per_day[rows] if data is not None else np.zeros(len(rows))
    cost = economy.destinations(ledger.fleet, subject, rows, after_one, ledger.load, ledger.pull)
    moved = 0
    for row in rows[np.lexsort((rows, after_one, cost, distance))].tolist():
        take = min(wanted - moved, int(allocatable[row]))
        after = float((ledger.usage[resource, row] + take * demand[resource]) / capacity[row])
        soft = draining or reason.code is MoveCode.OVER_LIMIT
        if not soft and level_before - after < ledger.config.rebalance.threshold:
            if data is not None or ledger.pull:
                continue  # ordered by distance or cost first: a later one may still relieve it
            break
        if not _admits(ledger, holding, source, row, take):
            continue
        _apply(ledger, holding, source, row, take, demand)
        names = ledger.fleet.name_list
        holding.moves.append(Move(names[source], names[row], take, reason, at))
        moved += take
        if moved >= wanted:
            break
    budget.spend(claimed, moved)
    if holding.guard is not None:
        holding.guard.settle(ledger.fleet.name_list[source], wanted - moved)
    return moved


def _fill(
    ledger: engine.Pass,
    target: int,
    by_cluster: dict[int, list[_Holding]],
    demand: FloatArray,
    scale: FloatArray,
    node_fit: BoolArray,
    budget: _Budget,
    at: str,
) -> set[int]:
    """Move replicas into the Filling cluster `target`, the most loaded sources first, while
    each move beats the threshold; returns the positions of the workloads moved."""
    threshold = ledger.config.rebalance.threshold
    level = levels.overall(ledger)
    sources = [r for r in by_cluster if r != target and not ledger.filling[r]]
    moved: set[int] = set()
    for source in sorted(sources, key=lambda r: (-float(level[r]), r)):
        if float(level[source] - level[target]) < threshold:
            break
        for holding in _by_relief(ledger, by_cluster[source], source, demand):
            i = holding.position
            if budget.allowed(holding.claimed) <= 0 or _cooling(ledger, holding, source):
                continue
            take, reason = _fill_one(
                ledger, holding, source, target, demand[i], scale[i], node_fit[i], budget
            )
            if take and reason is not None and _admits(ledger, holding, source, target, take):
                _apply(ledger, holding, source, target, take, demand[i])
                names = ledger.fleet.name_list
                holding.moves.append(Move(names[source], names[target], take, reason, at))
                budget.spend(holding.claimed, take)
                moved.add(i)
        level = levels.overall(ledger)
    return moved


def _fill_one(
    ledger: engine.Pass,
    holding: _Holding,
    source: int,
    target: int,
    demand: FloatArray,
    scale: FloatArray,
    node_fit: BoolArray,
    budget: _Budget,
) -> tuple[int, MoveReason | None]:
    """How many of this workload's replicas on `source` to move into `target`, and why."""
    fleet = ledger.fleet
    data = ledger.facts.data_row(holding.claimed.workload.key)
    if data is not None and data.bytes_per_day[target] > data.bytes_per_day[source]:
        return 0, None  # filling is optional: it never takes a workload farther from its data
    subject = ledger.facts.newcomer(holding.claimed, demand, scale, node_fit, holding.term)
    if not express.feasible(fleet, subject)[target]:
        return 0, None
    resource = levels.decisive(ledger, demand, source)
    capacity = fleet.capacity_by_resource[resource]
    per = float(demand[resource])
    here, there = float(ledger.usage[resource, source]), float(ledger.usage[resource, target])
    limit = min(int(subject.allocatable[target]), holding.counts.get(source, 0))
    limit = min(limit, budget.allowed(holding.claimed))

    def worth(take: int) -> bool:
        """Whether one more replica, after `take`, still beats the threshold."""
        left = (here - take * per) / capacity[source]
        arrived = (there + (take + 1) * per) / capacity[target]
        return not left - arrived < ledger.config.rebalance.threshold

    take = _first_false(worth, limit)
    shown = f"{here / capacity[source]:.2f} vs {there / capacity[target]:.2f}"
    where = f"{fleet.name_list[target]}: water level {shown} ({fleet.resources[resource]})"
    return take, MoveReason(MoveCode.FILLING, where)


def _first_false(holds: Callable[[int], bool], limit: int) -> int:
    """The first n in [0, limit) where `holds` (false once false) fails, else `limit`."""
    low, high = 0, limit
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            low = middle + 1
        else:
            high = middle
    return low


def still_filling(decisions: Sequence[Decision], filling: Collection[str], now: float) -> set[str]:
    """The Filling clusters that this pass (at `now`) moved replicas into: they stay Filling."""
    at = durations.rfc3339(now)
    return {
        move.target
        for decision in decisions
        for move in decision.moves
        if move.at == at and move.target in filling and move.reason.code is MoveCode.FILLING
    }


def _toward(
    ledger: engine.Pass,
    holding: _Holding,
    wanted: tuple[IntArray, str],
    demand: FloatArray,
    budget: _Budget,
    at: str,
) -> None:
    """Move toward a requested Fresh division, surplus clusters to short ones in name
    order, as far as the budget allows; the request is served once the division is reached."""
    target, request = wanted
    names = ledger.fleet.name_list
    surplus = {r: n - int(target[r]) for r, n in holding.counts.items() if n > target[r]}
    short = {int(r): int(target[r]) - holding.counts.get(int(r), 0) for r in rows_of(target)}
    short = {r: n for r, n in short.items() if n > 0}
    allowed = budget.allowed(holding.claimed)
    moved = 0
    for source in sorted(surplus):
        for row in sorted(short):
            take = min(surplus[source], short[row], allowed - moved)
            if take <= 0 or not _admits(ledger, holding, source, row, take):
                continue
            _apply(ledger, holding, source, row, take, demand)
            holding.moves.append(Move(names[source], names[row], take, REQUESTED, at))
            surplus[source] -= take
            short[row] -= take
            moved += take
    budget.spend(holding.claimed, moved)
    if not any(short.values()):
        holding.served = request


def _cooling(ledger: engine.Pass, holding: _Holding, source: int) -> bool:
    """The workload moved onto `source` within the cooldown (or earlier in this pass)."""
    name = ledger.fleet.name_list[source]
    return any(m.target == name for m in (*holding.recent, *holding.moves))


def _need(
    ledger: engine.Pass, holding: _Holding, source: int, draining: bool, demand: FloatArray
) -> tuple[int, int, MoveReason | None]:
    """(replicas to move, the resource that decides, the reason) for this workload."""
    fleet = ledger.fleet
    requested = rows_of(demand > 0)
    capacity = fleet.capacity_by_resource[:, source]
    fallback = int(requested[0]) if len(requested) else 0
    if draining:
        return holding.counts.get(source, 0), fallback, DRAINED
    limit = ledger.facts.limit(holding.claimed)
    excess = ledger.usage[:, source] - limit * capacity
    over = rows_of((excess > 0) & (limit < 1.0) & (demand > 0) & (capacity > 0))
    if not len(over):
        return 0, fallback, None
    need = max(math.ceil(float(excess[r] / demand[r]) - 1e-9) for r in over.tolist())
    level = ledger.usage[over, source] / capacity[over]
    worst = int(over[int(np.argmax(level - limit[over]))])
    resource = fleet.resources[worst]
    shown = levels.above(float(ledger.usage[worst, source] / capacity[worst]), float(limit[worst]))
    above = f"{shown} > {float(limit[worst]):g} ({resource})"
    if holding.over.get(source):
        return need, worst, MoveReason(MoveCode.OVER_LIMIT, above)
    return need, worst, foresight.reason(ledger.foresight, worst, source, above)


def _admits(ledger: engine.Pass, holding: _Holding, source: int, target: int, take: int) -> bool:
    """Whether the workload's disruption budget lets `take` replicas move now."""
    names = ledger.fleet.name_list
    return holding.guard is None or holding.guard.admits(names[source], names[target], take)


def _apply(
    ledger: engine.Pass, holding: _Holding, source: int, target: int, take: int, demand: FloatArray
) -> None:
    ledger.add(np.array([source, target]), demand, np.array([-take, take]))
    holding.counts[source] -= take
    holding.over[source] = max(0, holding.over.get(source, 0) - take)
    holding.counts[target] = holding.counts.get(target, 0) + take
    # Only copies that already ran keep running until the new ones are up: replicas this
    # pass placed (a first placement, a scale-up) have not started, so they simply move.
    holding.retiring[source] = max(0, holding.settled.get(source, 0) - holding.counts[source])


def _rebuilt(ledger: engine.Pass, decision: Decision, holding: _Holding) -> Decision:
    names = ledger.fleet.name_list
    clusters = tuple(
        Placed(names[row], count) for row, count in sorted(holding.counts.items()) if count > 0
    )
    retiring = tuple(Placed(names[row], n) for row, n in sorted(holding.retiring.items()) if n)
    reasons = "; ".join(sorted({m.reason.text for m in holding.moves}))
    diagnosis = replace(decision.diagnosis, trigger=Trigger(TriggerCode.REBALANCED, reasons))
    return replace(
        decision,
        clusters=clusters,
        retiring=retiring,
        moves=(*decision.moves, *holding.moves),
        diagnosis=diagnosis if holding.moves else decision.diagnosis,
        recorded=None if holding.moves else decision.recorded,
        rebalance_served=holding.served or decision.rebalance_served,
        over_limit=tuple(Placed(names[row], n) for row, n in sorted(holding.over.items()) if n),
    )
