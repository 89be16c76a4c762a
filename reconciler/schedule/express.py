"""The express lane: a first placement that needs no explanation, without the framework's
per-filter bookkeeping.

Most workloads of a large first pass are placed for the first time, under a placement with
plain targets, and nothing asks why. For them the filters' verdicts and reasons are never read,
only which clusters pass. This lane computes that mask directly:

- the static filters' mask, memoised per placement (a newcomer holds nothing, so it depends
  on the placement only: `framework.static_feasible`);
- NodeFit and Capacity from the pass's fit matrix and the subject's estimate of the replicas
  each cluster can take (`Facts.room`);
- WaterLevel from the subject's headroom, when it is not implied by Capacity.

The lane answers with a value and the engine acts on it: a `Refusal` it records, or a
`Newcomer` it selects, divides and charges as for any workload (`Pass.place_newcomer`). When
no cluster passes, the filters run in full for the reasons of the unschedulable message. A
workload with a previous decision, or with ordered affinity terms, or a pass that explains
itself, goes through `Pass.decide` in full. The lane knows nothing of the engine: `engine.Pass`
builds one `Lane` per pass and calls it. `tests/test_express.py` checks that both lanes decide
alike.

Called by `schedule.engine` and `schedule.rebalance`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from reconciler.domain import Decision, ResourceKey, Strategy
from reconciler.schedule import facts, framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray, rows_of, some
from reconciler.schedule.memo import Ref, ref


class RefusalKey(NamedTuple):
    """What a newcomer's refusal depends on besides the usage: its placement, whether dro's
    plugins apply, its per-replica demand and its replica count."""

    placement: Ref
    extensions: bool
    demand: bytes
    replicas: int | None

    @classmethod
    def of(cls, claimed: facts.Claimed, demand: FloatArray) -> RefusalKey:
        """The key of `claimed` with this per-replica `demand`."""
        workload = claimed.workload
        return cls(ref(claimed.placement), claimed.extensions, demand.tobytes(), workload.replicas)


@dataclass(frozen=True, slots=True)
class _Refused:
    """A memoised refusal: the ledger's clock when worded, the message, and the clusters past
    the static filters (whose usage it read)."""

    clock: int
    message: str
    rows: IntArray


@dataclass(frozen=True, slots=True)
class Refusal:
    """The lane's answer for a workload no cluster takes: record it as unschedulable."""

    message: str
    strategy: Strategy


@dataclass(frozen=True, slots=True)
class Newcomer:
    """The lane's answer for a workload some cluster takes: place it on `outcome`'s feasible
    clusters, and tell the lane (`Lane.remember`) if that falls short after all."""

    subject: framework.Subject
    outcome: framework.Outcome
    key: RefusalKey


class Lane:
    """The express lane of one pass: what it reads of the pass, and its memo of refusals."""

    def __init__(
        self,
        fleet: Fleet,
        memo: facts.Facts,
        previous: Mapping[ResourceKey, Decision],
        changed: IntArray,
        *,
        diagnose: bool,
    ) -> None:
        self.fleet = fleet
        self.facts = memo
        self.previous = previous
        self.changed = changed
        """The ledger's clock of each cluster's last usage change (`Pass.changed`, shared)."""
        self.diagnose = diagnose
        self._refusals: dict[RefusalKey, _Refused] = {}

    def eligible(self, claimed: facts.Claimed) -> bool:
        """Whether the express lane may place this workload: it holds nothing (a first
        placement, or one that was unschedulable), the pass does not explain itself, its
        placement has no ordered affinity terms, and it uses no data set (STCI)."""
        if self.diagnose or claimed.placement.affinity_terms:
            return False
        if self.facts.data_row(claimed.workload.key) is not None:
            return False  # its data makes every cluster's score its own: no shared refusal
        before = self.previous.get(claimed.workload.key)
        return before is None or not (before.clusters or before.retiring)

    def look(
        self,
        claimed: facts.Claimed,
        demand: FloatArray,
        scale: FloatArray,
        node_fit: BoolArray,
        *,
        clock: int,
    ) -> Refusal | Newcomer | None:
        """The lane's answer for an eligible workload at the ledger's `clock`; None when the
        lane cannot decide it (the engine then does)."""
        key = RefusalKey.of(claimed, demand)
        message = self._still_refused(key)
        if message is not None:
            return Refusal(message, claimed.strategy)
        subject = self.facts.newcomer(claimed, demand, scale, node_fit, None)
        passed = feasible(self.fleet, subject)
        if some(passed):
            return Newcomer(subject, framework.Outcome(feasible=passed, rejected_by=()), key)
        message = self._refusal(subject, key, clock)
        return None if message is None else Refusal(message, subject.strategy)

    # A refusal is memoised: whether a newcomer fits, and why not, depends only on its
    # placement, its demand and replica count, and the usage of the clusters that pass the
    # static filters (the filters' verdicts, the estimate, spread and division all read
    # nothing else). A run of workloads alike, refused while those clusters' usage stands
    # still, is worked out once.

    def _still_refused(self, key: RefusalKey) -> str | None:
        """The memoised refusal under `key`, if none of the usage it read has changed since."""
        memo = self._refusals.get(key)
        if memo is None:
            return None
        if len(memo.rows) and int(self.changed[memo.rows].max()) > memo.clock:
            return None
        return memo.message

    def _refusal(self, subject: framework.Subject, key: RefusalKey, clock: int) -> str | None:
        """Why no cluster takes this newcomer, in the filters' words, memoised under `key`;
        None if the filters find a cluster after all."""
        outcome = framework.apply_filters(self.fleet, subject)
        if some(outcome.feasible):
            return None  # the lane and the filters disagree: let the engine decide
        message = outcome.fit_error(self.fleet.size)
        self._remember(subject, key, message, clock)
        return message

    def remember(self, newcomer: Newcomer, why: str, *, clock: int) -> None:
        """A newcomer the lane let through was refused after all (capacity or spread fell
        short): memoise why, at the ledger's `clock`."""
        self._remember(newcomer.subject, newcomer.key, why, clock)

    def _remember(self, subject: framework.Subject, key: RefusalKey, why: str, clock: int) -> None:
        rows = rows_of(framework.static_feasible(self.fleet, subject))
        self._refusals[key] = _Refused(clock, why, rows)


def feasible(fleet: Fleet, subject: framework.Subject) -> BoolArray:
    """Clusters that pass every filter for a subject that holds nothing (a newcomer), as
    `framework.apply_filters(...).feasible` finds them, without the verdicts.

    With one replica or more, WaterLevel needs no mask of its own: a cluster above the limit
    on a requested resource has negative headroom there, so it can take no replica and
    Capacity rejects it anyway.
    """
    base = framework.static_feasible(fleet, subject)
    if not subject.extensions:
        return base
    passed = base & subject.node_fit
    replicas = subject.replicas
    if replicas:
        need = 1 if subject.strategy.divides else replicas
        passed &= subject.allocatable >= need
    elif replicas == 0:
        requested = subject.requested
        limited = requested[subject.limit[requested] < 1.0]
        if len(limited):
            passed &= ~np.logical_or.reduce(subject.headroom[limited] < 0, axis=0)
    return passed
