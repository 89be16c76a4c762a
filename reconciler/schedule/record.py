"""Recording: a placement, or the failure to make one, becomes the workload's `Decision`.

A decision lists the clusters with their replicas, the diagnosis (the verdicts when the pass
explains itself, the scorer weights, the strategy, the fleet's water level and the trigger),
the moves still within the cooldown and those a failover or pods pending too long forced, and
the `requestedAt` the placement serves. A decision equal to the previous one keeps its
`recorded` diagnosis, so an unchanged workload's file does not change.

The verdicts are built from the turn's arrays only when something reads them
(`turnverdicts`): a decision whose `recorded` diagnosis is written again never builds any, and
a new one builds only what its file lists (`domain.verdicts.listing`).

Called by `schedule.engine`, `schedule.locations`, `schedule.overflow` and `schedule.selecting`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from reconciler.domain import (
    Decision,
    Diagnosis,
    Move,
    MoveReason,
    Placed,
    ResourceKey,
    Strategy,
    Trigger,
    Verdicts,
    clock,
    durations,
)
from reconciler.domain.verdicts import NONE as NO_VERDICTS
from reconciler.schedule import facts, framework, triggers
from reconciler.schedule.fleet import Fleet, IntArray, rows_of


@dataclass(frozen=True, slots=True)
class Result:
    """A placement: replicas per cluster (None for objects without replicas) on `rows`."""

    counts: IntArray | None
    rows: IntArray
    trigger: Trigger
    served: str | None = None
    """The `rebalance.requestedAt` this placement fully serves."""
    over: tuple[Placed, ...] = ()
    """Replicas past a water-level limit, per cluster (`overflow.over_limit`)."""
    pending: int = 0
    """Replicas that fit nowhere (a partial placement); `short` says why."""
    short: str | None = None


class Recorder:
    """Writes the decisions of one pass."""

    def __init__(
        self,
        fleet: Fleet,
        previous: Mapping[ResourceKey, Decision],
        *,
        now: float,
        cooldown: float,
        diagnose: bool,
        load: float,
        weights: Mapping[str, float],
        adapt: Callable[[ResourceKey], Mapping[str, float]] | None = None,
        explained: Callable[[ResourceKey], bool] | None = None,
    ) -> None:
        self.fleet = fleet
        self.explained = explained
        """The workloads whose turn is kept whole, every cluster's verdict (`dro explain`);
        the others keep only what their decision file lists (`keptverdicts`)."""
        self.adapt = adapt
        """Per workload key: the factors its own weights are multiplied by (STCI)."""
        self.previous = previous
        self.now = now
        self.cooldown = cooldown
        self.diagnose = diagnose
        self.load = load
        self.weights = weights
        self._scorer_weights: dict[bool, dict[str, float]] = {}
        """extensions → the weights of the scorers that run for such a policy."""

    def recent_moves(self, before: Decision | None) -> tuple[Move, ...]:
        """The previous decision's moves that are still within the cooldown."""
        if before is None:
            return ()
        return tuple(
            m
            for m in before.moves
            if not clock.elapsed(self.now, durations.epoch(m.at), self.cooldown)
        )

    def _weights(self, extensions: bool) -> dict[str, float]:
        """The weights of the scorers that run for such a policy; the same every workload."""
        found = self._scorer_weights.get(extensions)
        if found is None:
            names = framework.scorer_names(extensions)
            found = {name: self.weights.get(name, 1.0) for name in names}
            self._scorer_weights[extensions] = found
        return found

    def _diagnosis(
        self,
        claimed: facts.Claimed,
        strategy: Strategy,
        outcome: framework.Outcome | None,
        trigger: Trigger,
        holds: IntArray,
    ) -> Diagnosis:
        """The why of a decision that holds the cluster rows `holds`."""
        weights = self._weights(claimed.extensions)
        factors = self.adapt(claimed.workload.key) if self.adapt is not None else {}
        if any(name in weights for name in factors):
            weights = {
                name: round(weight * factors.get(name, 1.0), 4) for name, weight in weights.items()
            }
        return Diagnosis(
            verdicts=self._verdicts(claimed.workload.key, outcome, holds),
            weights=weights,
            strategy=strategy,
            fleet_water_level=self.load,
            trigger=trigger,
        )

    def _verdicts(
        self, key: ResourceKey, outcome: framework.Outcome | None, holds: IntArray
    ) -> Verdicts:
        """The turn's verdicts: whole for a workload explained, else bounded now to what the
        decision can list (with the clusters it holds and held before)."""
        if not self.diagnose or outcome is None:
            return NO_VERDICTS
        if self.explained is not None and self.explained(key):
            return outcome.verdicts(self.fleet)
        before = self.previous.get(key)
        if before is not None and before.clusters:
            holds = np.concatenate((holds, self._rows(p.cluster for p in before.clusters)))
        return outcome.verdicts(self.fleet, holds)

    def _rows(self, names: Iterable[str]) -> IntArray:
        """The rows of the clusters named, those in the fleet."""
        index = self.fleet.index
        return np.array([index[name] for name in names if name in index], dtype=np.int64)

    def decision(
        self,
        claimed: facts.Claimed,
        strategy: Strategy,
        outcome: framework.Outcome | None,
        result: Result,
        term: str | None,
        stuck: Mapping[int, int],
    ) -> Decision:
        """The decision for a placement; `stuck` holds the replicas taken off clusters where
        pods pended too long (row → replicas), for the moves they force."""
        names = self.fleet.name_list
        rows = result.rows.tolist()
        if result.counts is None:
            placed = tuple(Placed(names[r], None) for r in rows)
        else:
            counts = result.counts[result.rows].tolist()
            placed = tuple(Placed(names[r], c) for r, c in zip(rows, counts, strict=True))
        before = self.previous.get(claimed.workload.key)
        unchanged = (
            before is not None
            and before.unschedulable == result.short
            and before.clusters == placed
            and before.policy == claimed.ref
            and before.affinity_term == term
        )
        return Decision(
            key=claimed.workload.key,
            api_version=claimed.workload.api_version,
            policy=claimed.ref,
            clusters=placed,
            unschedulable=result.short,
            over_limit=result.over,
            pending=result.pending,
            diagnosis=self._diagnosis(claimed, strategy, outcome, result.trigger, result.rows),
            placement_digest=claimed.placement.digest,
            affinity_term=term,
            recorded=before.recorded if unchanged and before is not None else None,
            moves=(*self.recent_moves(before), *self._forced_moves(before, result, stuck)),
            rebalance_served=result.served
            or (
                before.rebalance_served
                if before is not None
                else claimed.placement.rebalance_requested_at
            ),
        )

    def _forced_moves(
        self, before: Decision | None, result: Result, stuck: Mapping[int, int]
    ) -> tuple[Move, ...]:
        """The replicas a failover, or pods pending too long, re-placed: from the clusters
        they left to those that gained, paired in name order."""
        reason = MoveReason.forced(result.trigger)
        if before is None or result.counts is None or reason is None:
            return ()
        fleet = self.fleet
        previous = np.zeros(fleet.size, dtype=np.int64)
        for placed in before.clusters:
            if placed.cluster in fleet.index:
                previous[fleet.index[placed.cluster]] = placed.replicas or 0
        left = {r: int(previous[r]) for r in rows_of(fleet.failed & (previous > 0)).tolist()}
        left.update(stuck)
        gained = result.counts - previous
        arrived = {r: int(gained[r]) for r in rows_of(gained > 0).tolist()}
        names, at = fleet.name_list, durations.rfc3339(self.now)
        moves = []
        for source, count in left.items():
            remaining = count
            for target, room in arrived.items():
                take = min(remaining, room)
                if take > 0:
                    moves.append(Move(names[source], names[target], take, reason, at))
                    remaining -= take
                    arrived[target] = room - take
        return tuple(moves)

    def unschedulable(
        self,
        claimed: facts.Claimed,
        strategy: Strategy,
        outcome: framework.Outcome | None,
        message: str,
        before: Decision | None,
        kept: tuple[Placed, ...],
        pending: int = 0,
    ) -> Decision:
        """The decision of a workload that could not be placed, keeping `kept` (a capacity
        shortage keeps the previous copies, and the cooldown of their moves); `pending` are
        the replicas a partial placement of dro's policies still misses."""
        return Decision(
            key=claimed.workload.key,
            api_version=claimed.workload.api_version,
            policy=claimed.ref,
            clusters=kept,
            unschedulable=message,
            pending=pending,
            diagnosis=self._diagnosis(
                claimed,
                strategy,
                outcome,
                triggers.UNSCHEDULABLE,
                self._rows(p.cluster for p in kept),
            ),
            placement_digest=before.placement_digest if kept and before else "",
            affinity_term=before.affinity_term if kept and before else None,
            moves=self.recent_moves(before) if kept else (),
        )
