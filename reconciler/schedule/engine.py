"""One scheduling pass: every workload in order, each placement consuming capacity.

Workloads go in a fixed order: the claiming policy's priority (highest first), then namespace,
kind and name. At its turn a workload sees the usage left by the ones ahead of it, so a pass
never over-commits a cluster. A workload's free capacity on a cluster is its capacity within
the RWL limit minus the usage at that turn (Karmada's AllocatableReplicas); its own previous
replicas are part of that usage and come back as `previous` in the division.

A divided workload is re-divided only on a trigger: the first placement, a changed placement,
changed replicas, or a cluster it is on that is gone or no longer a candidate. Otherwise its
previous division stands. Duplicated workloads and objects without replicas follow their
candidates on every pass.

Called by `schedule`, `schedule.levels`, `schedule.rebalance` and `schedule.reuse`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

import numpy as np

from reconciler.domain import (
    Decision,
    Placed,
    ResourceKey,
    SchedulerConfig,
    Strategy,
    Trigger,
    durations,
)
from reconciler.kube import movehooks
from reconciler.render import overridden
from reconciler.schedule import (
    disruption,
    economy,
    express,
    facts,
    framework,
    held,
    locations,
    moving,
    overflow,
    record,
    runs,
    selecting,
    stci,
    stepwise,
    triggers,
)
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray, rows_of, some
from reconciler.schedule.foresight import Foresight
from reconciler.schedule.plugins import data_locality
from reconciler.schedule.record import Result
from reconciler.schedule.selecting import Refused


class Pass:
    """The mutable state of one pass: the usage ledger, the per-placement facts, and the
    Fresh divisions that re-balancing carries out."""

    def __init__(
        self,
        fleet: Fleet,
        config: SchedulerConfig,
        previous: Mapping[ResourceKey, Decision],
        *,
        diagnose: bool,
        standing_verdicts: bool = True,
        now: float,
        filling: Collection[str] = (),
        data: stci.DataCosts | None = None,
        rows: Mapping[ResourceKey, int] | None = None,
        hooks: Mapping[ResourceKey, ResourceKey] | None = None,
        replicas: overridden.Replicas | None = None,
        foresight: Foresight | None = None,
        explained: Callable[[ResourceKey], bool] | None = None,
    ) -> None:
        self.fleet = fleet
        self.foresight = foresight
        """The pass's forecasts (`foresight`), None when prediction is off."""
        self.replicas = replicas
        """The overrides of `spec.replicas`: what runs where they apply (None: none)."""
        self.hooks = hooks or {}
        """Stateful workload → its data-sync hook Job (`movehooks`)."""
        self.filling: BoolArray = np.isin(fleet.names, np.array(sorted(filling), dtype=str))
        """Clusters re-balancing fills: added or recovered ones (see `rebalance`)."""
        self.now = now
        self.config = config
        self.previous = previous
        self.diagnose = diagnose
        self.standing_verdicts = standing_verdicts
        """False: a placement that stands keeps its recorded diagnosis, unscored (a pass)."""
        base = fleet.used.T if foresight is None else foresight.base
        self.usage: FloatArray = base.copy(order="C")
        """(resources × clusters) usage as the pass goes: the ledger. It starts from the
        usage now, or with forecasts from the effective usage (`foresight.Foresight.base`)."""
        self.load = round(fleet.load(), 4)
        self.weights = facts.effective_weights(config, self.load)
        self.pull = economy.pull(self.weights)
        """How strongly cost narrows divisions this pass (`economy`)."""
        self.facts = facts.Facts(fleet, config, self.usage, data, rows)
        self.record = record.Recorder(
            fleet,
            previous,
            now=now,
            cooldown=config.rebalance.cooldown,
            diagnose=diagnose,
            load=self.load,
            weights=self.weights,
            adapt=self._adapted,
            explained=explained,
        )
        self.clock = 0
        """Counts the changes to the ledger."""
        self.changed: IntArray = np.zeros(fleet.size, dtype=np.int64)
        """The `clock` of each cluster's last usage change."""
        self.fresh_targets: dict[ResourceKey, tuple[IntArray, str]] = {}
        """Workload key → (its Fresh division, the requestedAt it serves), for requests that
        re-balancing carries out under the churn budget."""
        self.full: dict[express.RefusalKey, int] = {}
        """A newcomer of these alike ones fit nowhere, even past its limits, at this `clock`."""
        self.nowhere: dict[tuple[int, bytes, str | None, int], int] = {}
        """Re-balancing: (placement, demand, term, data row) → the `clock` at which a replica
        of such a workload found no destination (none appears until the ledger changes)."""
        self.steps: dict[ResourceKey, stepwise.Step] = {}  # drain steps, for their budgets
        self.lane = express.Lane(fleet, self.facts, previous, self.changed, diagnose=diagnose)

    def _adapted(self, key: ResourceKey) -> dict[str, float]:
        """The factors a workload's weights are multiplied by: DataLocality's, when it uses
        data (recorded in its diagnosis)."""
        row = self.facts.data_row(key)
        return {} if row is None else {"DataLocality": data_locality.weight_factor(row)}

    # --- one workload -------------------------------------------------------------------------

    def decide(
        self, claimed: facts.Claimed, demand: FloatArray, scale: FloatArray, node_fit: BoolArray
    ) -> Decision:
        """Place one workload at its turn, and charge its placement to the ledger."""
        decided = self._decide(claimed, demand, scale, node_fit)
        workload = claimed.workload
        before = self.previous.get(workload.key)
        if moving.runs_whole(claimed.extensions, workload, claimed.placement):
            decided = moving.step(
                self.fleet,
                before,
                decided,
                at=durations.rfc3339(self.now),
                hook=self.hooks.get(workload.key),
                volumes=movehooks.has_volumes(workload),
            )
        elif before is not None and before.retiring:
            decided = moving.keep_retiring(self.fleet, before, decided)
        elif not claimed.movable and workload.replicas is not None:
            decided = self._step(claimed, before, decided, demand)
        kept = [
            (self.fleet.index[p.cluster], p.running)
            for p in decided.retiring
            if p.running and p.cluster in self.fleet.index
        ]
        if kept:  # the old copies still run: the ledger keeps counting them
            rows = np.array([row for row, _ in kept], dtype=np.int64)
            self.add(rows, demand, np.array([n for _, n in kept], dtype=np.int64))
        return self._charge_overrides(before, decided, demand)

    def _step(
        self, claimed: facts.Claimed, before: Decision | None, decided: Decision, demand: FloatArray
    ) -> Decision:
        """A workload re-balancing does not move leaves draining clusters step by step."""
        budget = disruption.budget_of(claimed.placement, self.config)
        step = stepwise.hold(self.fleet, budget, before, decided, divides=claimed.strategy.divides)
        if step is None:
            return decided
        self.steps[decided.key] = step
        if len(step.rows):
            self.add(step.rows, demand, step.replicas)
        return step.decision

    def _charge_overrides(
        self, before: Decision | None, decided: Decision, demand: FloatArray
    ) -> Decision:
        """Charge and record what runs where an override sets `spec.replicas`."""
        effective = self.replicas.of(decided) if self.replicas is not None else {}
        surplus = runs.surplus(self.fleet, before, decided, effective)
        rows = rows_of(surplus)
        if len(rows):
            self.add(rows, demand, surplus[rows])
        return decided if effective == decided.effective else replace(decided, effective=effective)

    def _decide(
        self, claimed: facts.Claimed, demand: FloatArray, scale: FloatArray, node_fit: BoolArray
    ) -> Decision:
        if self.lane.eligible(claimed):
            decided = self._express(claimed, demand, scale, node_fit)
            if decided is not None:
                return decided
        fleet = self.fleet
        workload, placement = claimed.workload, claimed.placement
        before = self.previous.get(workload.key)
        previous, holders, lost = held.previous(fleet, before)
        stuck = held.stuck(fleet, claimed, previous)
        running = held.running(fleet, before, previous)
        terms, names = locations.terms(placement, before)
        failures: locations.Failures = []
        outcome: framework.Outcome | None = None
        subject: framework.Subject | None = None
        for attempt, term in enumerate(terms):
            target, tiers = self.facts.target(placement, term)
            if subject is None:
                subject = self.facts.subject(
                    claimed, demand, scale, node_fit, previous, holders, target
                )
                subject.allocatable[list(stuck)] = 0
            else:
                subject = replace(subject, target=target)
            if attempt == 0 and self._stands(subject, before, lost, stuck):
                result = Result(previous, rows_of(previous), triggers.STEADY)
                self._charge(demand, running, result.counts)
                return self.record.decision(claimed, subject.strategy, None, result, None, stuck)
            outcome = framework.apply_filters(fleet, subject)
            tried = self._place(
                subject, outcome, tiers, before, lost, refresh=attempt > 0, stuck=stuck
            )
            if isinstance(tried, Refused):
                failures.append(locations.Attempt(term, names, tried, subject, outcome))
                continue
            result, outcome = tried
            result = locations.noted(
                placement, term, failures, self._carried(subject, before, result)
            )
            self._charge(demand, running, result.counts)
            term_name = names[term] if term is not None else None
            return self.record.decision(
                claimed, subject.strategy, outcome, result, term_name, stuck
            )
        assert outcome is not None
        assert subject is not None
        failure = locations.refused(placement, failures)
        for tried_term in locations.spill_order(placement, failures):
            subject, outcome = tried_term.subject, tried_term.outcome
            spilled = self._spilled(
                claimed, subject, outcome, before, lost, running, demand, stuck, tried_term.name
            )
            if spilled is not None:
                return locations.spilled(placement, tried_term, failures, spilled)
        if not some(subject.holders):  # alike newcomers find no room either, until it changes
            self.full[express.RefusalKey.of(claimed, demand)] = self.clock
        return self._unschedulable(
            claimed, subject.strategy, outcome, failure, before, running, demand
        )

    def _express(
        self, claimed: facts.Claimed, demand: FloatArray, scale: FloatArray, node_fit: BoolArray
    ) -> Decision | None:
        """The express lane's decision for an eligible workload, charged to the ledger; None
        when the lane leaves it to the full path."""
        answer = self.lane.look(claimed, demand, scale, node_fit, clock=self.clock)
        if isinstance(answer, express.Refusal):
            key = express.RefusalKey.of(claimed, demand)
            if overflow.applies(claimed) and self.full.get(key) != self.clock:
                return None  # the full path places what fits (`overflow`)
            return self.refuse(claimed, answer.strategy, None, answer.message, demand)
        if answer is None:
            return None
        decision = self.place_newcomer(claimed, answer.subject, answer.outcome, demand)
        if decision.unschedulable is not None:  # capacity or spread fell short
            self.lane.remember(answer, decision.unschedulable, clock=self.clock)
        return decision

    def _stands(
        self,
        subject: framework.Subject,
        before: Decision | None,
        lost: list[str],
        stuck: Mapping[int, int],
    ) -> bool:
        """Whether a divided workload's previous division stands, found without the filters'
        verdicts: the static filters alone may drop a holder (every later one keeps holders),
        and a kept holder makes it feasible. Passes that explain standing placements, ordered
        affinity terms, pods pending and Fresh requests take the full path."""
        if stuck or before is None or not before.clusters:
            return False
        if self.diagnose and (self.standing_verdicts or before.recorded is None):
            return False  # the verdicts are wanted, and a recorded diagnosis cannot stand in
        if before.over_limit or before.pending:
            return False  # re-checked every pass: room may have appeared
        placement = subject.placement
        if not subject.strategy.divides or placement.affinity_terms:
            return False
        if triggers.pending_request(placement, before) is not None:
            return False
        kept = framework.static_filters(self.fleet, subject)
        if not some(kept & subject.holders):
            return False  # the full path finds out whether anything is feasible at all
        return triggers.trigger(self.fleet, subject, kept, before, lost, subject.movable) is None

    def _place(
        self,
        subject: framework.Subject,
        outcome: framework.Outcome,
        tiers: IntArray,
        before: Decision | None,
        lost: list[str],
        *,
        refresh: bool,
        stuck: Mapping[int, int],
    ) -> tuple[Result, framework.Outcome] | Refused:
        """The placement, and the outcome with its scores when they were needed; or why not."""
        fleet = self.fleet
        feasible = outcome.feasible
        if not some(feasible):
            return Refused(outcome.fit_error(fleet.size), keep=False)
        trigger = triggers.FOLLOWS
        if subject.strategy.divides:
            reason = triggers.AFFINITY_FAILED if refresh else None
            if stuck and reason is None:
                reason = triggers.pending(fleet)
            reason = reason or triggers.trigger(
                fleet, subject, feasible, before, lost, subject.movable
            )
            request = triggers.pending_request(subject.placement, before)
            if reason is None and request is not None:
                outcome = self._scored(subject, outcome)
                target = self._select(subject, outcome, tiers, triggers.REQUESTED, fresh=True)
                if isinstance(target, Refused):
                    return target
                if not subject.movable:
                    return replace(target, served=request), outcome
                assert target.counts is not None
                self.fresh_targets[subject.workload.key] = (target.counts, request)
                steady = Result(subject.previous, rows_of(subject.previous), triggers.STEADY)
                return steady, outcome
            if reason is None:
                if self.diagnose:
                    outcome = framework.apply_scorers(fleet, subject, outcome, self.weights)
                steady = Result(subject.previous, rows_of(subject.previous), triggers.STEADY)
                return steady, outcome
            trigger = reason
            if request is not None:
                outcome = self._scored(subject, outcome)
                placed = self._select(subject, outcome, tiers, trigger, fresh=True)
                if isinstance(placed, Refused):
                    return placed
                return replace(placed, served=request), outcome
        outcome = self._scored(subject, outcome)
        placed = self._select(subject, outcome, tiers, trigger)
        return placed if isinstance(placed, Refused) else (placed, outcome)

    def _scored(self, subject: framework.Subject, outcome: framework.Outcome) -> framework.Outcome:
        """The outcome with its scores when anything reads them: the diagnosis, Aggregated's
        candidate order and spread selection. Other divisions never look at scores."""
        if self.diagnose or subject.strategy is Strategy.AGGREGATED or subject.placement.spread:
            return framework.apply_scorers(self.fleet, subject, outcome, self.weights)
        return outcome

    def _select(
        self,
        subject: framework.Subject,
        outcome: framework.Outcome,
        tiers: IntArray,
        trigger: Trigger,
        *,
        fresh: bool = False,
    ) -> Result | Refused:
        return selecting.select(
            self.fleet,
            self.facts,
            subject,
            outcome,
            tiers,
            trigger,
            load=self.load,
            fresh=fresh,
            pull=self.pull,
        )

    def place_newcomer(
        self,
        claimed: facts.Claimed,
        subject: framework.Subject,
        outcome: framework.Outcome,
        demand: FloatArray,
    ) -> Decision:
        """Place a workload that holds nothing yet on the clusters `outcome` finds feasible
        (at least one), as `decide` would, and charge it to the ledger."""
        before = self.previous.get(claimed.workload.key)
        trigger = triggers.newcomer(before) if subject.strategy.divides else triggers.FOLLOWS
        tiers = self.facts.target(subject.placement, None)[1]
        outcome = self._scored(subject, outcome)
        result = self._select(subject, outcome, tiers, trigger)
        if isinstance(result, Refused):
            spilled = self._spilled(claimed, subject, outcome, before, [], subject.previous, demand)
            if spilled is not None:
                return spilled
            return self._unschedulable(
                claimed, subject.strategy, outcome, result, None, subject.previous, demand
            )
        if result.counts is not None and len(result.rows):
            self.add(result.rows, demand, result.counts[result.rows])
        return self.record.decision(claimed, subject.strategy, outcome, result, None, {})

    def refuse(
        self,
        claimed: facts.Claimed,
        strategy: Strategy,
        outcome: framework.Outcome | None,
        message: str,
        demand: FloatArray,
    ) -> Decision:
        """Record a workload placed for the first time as unschedulable, with `message`."""
        zeros = np.zeros(self.fleet.size, dtype=np.int64)
        failure = Refused(message, keep=False)
        return self._unschedulable(claimed, strategy, outcome, failure, None, zeros, demand)

    def _carried(
        self, subject: framework.Subject, before: Decision | None, result: Result
    ) -> Result:
        """`result` with the over-limit replicas an earlier pass listed that it still holds
        (`overflow.over_limit`); read before the ledger is charged."""
        if before is None or not before.over_limit or result.counts is None:
            return result
        over = overflow.over_limit(self.fleet, subject, result.counts, before, None)
        return replace(result, over=over)

    def _spilled(
        self,
        claimed: facts.Claimed,
        subject: framework.Subject,
        within: framework.Outcome,
        before: Decision | None,
        lost: list[str],
        running: IntArray,
        demand: FloatArray,
        stuck: Mapping[int, int] | None = None,
        term: str | None = None,
    ) -> Decision | None:
        """A shortfall under the limits placed in part (`overflow.spill`): every candidate
        filled to its limit, the rest overflowed up to the ceiling, what fits nowhere
        pending; None when that does not apply or nothing fits."""
        spilled = overflow.spill(self.fleet, self.facts, claimed, subject, within, self._scored)
        if spilled is None:
            return None
        fleet = self.fleet
        trigger = (
            (triggers.pending(fleet) if stuck else None)
            or triggers.trigger(
                fleet, subject, spilled.outcome.feasible, before, lost, subject.movable
            )
            or triggers.AGAIN
        )
        result = overflow.result(fleet, subject, spilled, before, trigger)
        self._charge(demand, running, spilled.counts)
        outcome = spilled.outcome
        outcome = outcome if outcome.total is not None else self._scored(spilled.subject, outcome)
        return self.record.decision(claimed, subject.strategy, outcome, result, term, stuck or {})

    def _charge(self, demand: FloatArray, previous: IntArray, counts: IntArray | None) -> None:
        if counts is None:
            return
        delta = counts - previous
        rows = rows_of(delta)
        if len(rows):
            self.add(rows, demand, delta[rows])

    def add(self, rows: IntArray, demand: FloatArray, replicas: IntArray) -> None:
        """Charge `replicas` (one count per row; negative frees room) of a workload with this
        per-replica `demand` to the ledger. Every change to the usage goes through here, so
        `changed` knows when each cluster's usage last changed."""
        self.usage[:, rows] += demand[:, np.newaxis] * replicas[np.newaxis, :]
        self.clock += 1
        self.changed[rows] = self.clock

    def _unschedulable(
        self,
        claimed: facts.Claimed,
        strategy: Strategy,
        outcome: framework.Outcome | None,
        failure: Refused,
        before: Decision | None,
        running: IntArray,
        demand: FloatArray,
    ) -> Decision:
        """All-or-nothing: a capacity shortage keeps the previous copies (and the cooldown of
        their moves), a fit error does not. Retiring copies go either way, and give their
        room back."""
        kept: tuple[Placed, ...] = ()
        counts = np.zeros_like(running)
        if failure.keep and before is not None:
            kept = tuple(p for p in before.clusters if p.cluster in self.fleet.index)
            for placed in kept:
                counts[self.fleet.index[placed.cluster]] = placed.replicas or 0
        self._charge(demand, running, counts)
        pending = 0
        if overflow.applies(claimed):
            pending = (claimed.workload.replicas or 0) - sum(p.replicas or 0 for p in kept)
        return self.record.unschedulable(
            claimed, strategy, outcome, failure.message, before, kept, pending
        )
