"""Reuse: a pass of `dro run` decides again only the workloads whose turn could go otherwise.

A workload's turn in `engine.Pass` reads its own inputs (the workload and its placement, its
previous decision, its data access), what is the same for the whole pass (the clusters, their
observations, the scheduler settings, the overrides, the links), the clock, and the ledger:
the usage the workloads ahead of it left. It writes its decision and its charges to the
ledger. `Memo` keeps, per workload, the last pass's inputs, decision and charges, the instant
from which its comparisons with the clock would answer otherwise (`domain.clock`), and the
ledger columns its turn read:

- none, when its previous division stood (`engine.Pass._stands`: the static filters and the
  triggers read no usage);
- the clusters its static filters kept, and the ones it held, for a placement without
  affinity terms (every later filter and scorer, and the division, look only at those);
- every column otherwise.

At its turn in the next pass, a workload whose inputs are equal (its previous decision the
very object the last pass started from: `branch.readback` gives one object per blob), whose
instant has not come, and whose read columns no earlier turn changed (`dirty`: the columns
where this pass's charges so far differ from the last pass's), gets the same decision: the
memo's is returned, and its charges are made again, so the ledger, its clock and every later
turn are as a full pass leaves them. Anything else is decided as usual, and recorded.

What a decision's turn also writes elsewhere is never reused: a turn in the express lane
(its memos span alike workloads), a Fresh request or a drain step (kept for re-balancing),
and a decision that waits by its nature (`Decision.waits`) or is unschedulable. Any change
to what is the same for the whole pass (`Memo.begin`) starts the memo afresh. A pass with the
memo equals one without it, byte for byte (tests/test_schedule_reuse.py, on random change
sequences; tests/test_incremental.py for whole passes).

Called by `schedule`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from reconciler.domain import Decision, Placement, ResourceKey, Workload, clock
from reconciler.domain.data import DataAccess
from reconciler.kube import demand
from reconciler.schedule import batch, engine, facts, framework
from reconciler.schedule.fleet import BoolArray, FloatArray, IntArray

T = TypeVar("T")
Charges = tuple[tuple[IntArray, IntArray], ...]
"""The ledger charges of one turn, in order: (cluster rows, replicas per row)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One workload's turn in the last pass: what it read and what it wrote."""

    claimed: facts.Claimed
    before: Decision | None
    access: tuple[DataAccess, ...]
    decision: Decision | None
    """None when the turn wrote more than its decision and charges: it is never reused."""
    charges: Charges
    reads: frozenset[int] | None
    """The ledger columns the turn read (None: every column)."""
    until: float
    """From this instant on, the turn's comparisons with the clock could answer otherwise."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A workload as the last pass claimed it, and its demand per replica."""

    claimed: facts.Claimed
    demand: Mapping[str, float]


class Memo:
    """Each workload's last turn, for the passes of one `dro run` (`pipeline.Warm`)."""

    def __init__(self) -> None:
        self.whole: tuple[Any, ...] | None = None
        """What the last pass held the same for every workload (`begin`)."""
        self.turns: dict[ResourceKey, Turn] = {}
        self.vetted: dict[ResourceKey, tuple[facts.Claimed, Decision, str | None]] = {}
        """Each previous decision's vetting (`standing.vet`): for its claim, why it was set
        aside (None: it stands)."""
        self.claims: dict[ResourceKey, Claim] = {}
        self._claimed: dict[ResourceKey, Claim] = {}
        self.reused = 0
        """How many turns the last pass reused (for the pass's log and the tests)."""
        self.by_priority = Sorting()
        """The order of the claimed workloads (`schedule.claimed_workloads`)."""
        self.by_key = Sorting()
        """The order of the pass's decisions."""
        self.rows = batch.Rows()
        """The last pass's demand matrix and node fit (`batch.demand_matrix`, `node_fit`)."""

    def claimed(self, made: facts.Claimed) -> facts.Claimed:
        """The workload as claimed this pass: the very `Claimed` of the last pass when it is
        equal to `made` (so that every later check of it is an identity check)."""
        key = made.workload.key
        last = self.claims.get(key)
        if last is None or last.claimed != made:
            last = Claim(made, demand.per_replica(made.workload))
        self._claimed[key] = last
        return last.claimed

    def unchanged(
        self, workload: Workload, placement: Placement, *fields: object
    ) -> facts.Claimed | None:
        """The last pass's `Claimed` of this very workload, kept for this pass, when the last
        pass claimed it with this very placement and these `fields` (its policy's ref,
        priority and extensions, and whether an override sets its replicas); else None."""
        key = workload.key
        last = self.claims.get(key)
        if last is None:
            return None
        claimed = last.claimed
        if claimed.workload is not workload or claimed.placement is not placement:
            return None
        if fields != (
            claimed.ref,
            claimed.priority,
            claimed.extensions,
            claimed.replicas_overridden,
        ):
            return None
        self._claimed[key] = last
        return claimed

    def demand(self, claimed: facts.Claimed) -> Mapping[str, float]:
        """The workload's demand per replica (`kube.demand.per_replica`)."""
        return self._claimed[claimed.workload.key].demand

    def begin(self, whole: tuple[Any, ...]) -> dict[ResourceKey, Turn]:
        """A pass starts with `whole`, its workloads claimed: the turns it may reuse (none
        when `whole` changed)."""
        self.claims, self._claimed = self._claimed, {}
        if self.whole is None or self.whole != whole:
            self.turns = {}
            self.vetted = {}
        self.whole = whole
        return self.turns


class Sorting:
    """One sort of a pass, kept for the next (a fresh one just sorts): when what the items
    are sorted by is, item for item, the very same as the last pass's, they sort alike, and
    the last permutation is taken instead of sorting again."""

    def __init__(self) -> None:
        self._same: tuple[Any, ...] | None = None
        self._permutation: list[int] = []

    def sort(self, items: Sequence[T], same: tuple[Any, ...], by: Callable[[T], Any]) -> list[T]:
        """`items` sorted by `by` (a stable sort), where `same` holds, per item, everything
        `by` reads of it."""
        if same != self._same:
            self._permutation = sorted(range(len(items)), key=lambda i: by(items[i]))
            self._same = same
        return [items[i] for i in self._permutation]


class Recording(engine.Pass):
    """An `engine.Pass` that records, per turn, its ledger charges, whether its previous
    division stood, the subject its first attempt weighed, and whether it took the express
    lane."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.charges: list[tuple[IntArray, IntArray]] = []
        self.stood = False
        self.subject: framework.Subject | None = None
        self.express = False
        self.twice = False
        """Whether a charge of the turn named a cluster twice (`_replay` adds each once)."""

    def begin_turn(self) -> None:
        """Forget what the last turn recorded."""
        self.charges = []
        self.stood = False
        self.subject = None
        self.express = False
        self.twice = False

    def add(self, rows: IntArray, demand: FloatArray, replicas: IntArray) -> None:
        """`engine.Pass.add`, recorded."""
        if len(np.unique(rows)) != len(rows):
            self.twice = True
        self.charges.append((rows.copy(), np.asarray(replicas).copy()))
        super().add(rows, demand, replicas)

    def _stands(
        self,
        subject: framework.Subject,
        before: Decision | None,
        lost: list[str],
        stuck: Mapping[int, int],
    ) -> bool:
        self.subject = subject
        self.stood = super()._stands(subject, before, lost, stuck)
        return self.stood

    def _express(
        self, claimed: facts.Claimed, demand: FloatArray, scale: FloatArray, node_fit: BoolArray
    ) -> Decision | None:
        self.express = True
        return super()._express(claimed, demand, scale, node_fit)


def decide_all(
    run: Recording,
    turns: Mapping[ResourceKey, Turn],
    order: Sequence[facts.Claimed],
    inputs: tuple[FloatArray, FloatArray, BoolArray],
    accesses: Sequence[tuple[DataAccess, ...]],
    memo: Memo,
) -> list[Decision]:
    """Every workload's decision at its turn, reused from `turns` where nothing it read
    changed; `memo` keeps this pass's turns for the next one. `inputs` are the demand,
    scale and node-fit matrices, a row per workload of `order`."""
    matrix, scales, fits = inputs
    dirty = _dirty_at_start(turns, order)
    kept: dict[ResourceKey, Turn] = {}
    decisions: list[Decision] = []
    now = run.now
    replayed: list[tuple[int, IntArray, IntArray]] = []
    earliest = np.inf
    reused = 0
    previous = run.previous
    for i, claimed in enumerate(order):
        key = claimed.workload.key
        last = turns.get(key)
        before = previous.get(key)
        if last is not None and _holds(last, claimed, before, accesses[i], now, dirty):
            assert last.decision is not None
            for rows, replicas in last.charges:
                replayed.append((i, rows, replicas))
            earliest = min(earliest, last.until)
            reused += 1
            decisions.append(last.decision)
            kept[key] = last
            continue
        _replay(run, matrix, replayed)
        replayed = []
        run.begin_turn()
        with clock.recording() as deadlines:
            decision = run.decide(claimed, matrix[i], scales[i], fits[i])
        charges = tuple(run.charges)
        if last is None or last.claimed is not claimed or not _same(charges, last.charges):
            _mark(dirty, charges)
            if last is not None:
                _mark(dirty, last.charges)
        decisions.append(decision)
        reusable = _keepable(run, decision, before)
        kept[key] = Turn(
            claimed,
            before,
            accesses[i],
            decision if reusable else None,
            charges,
            _reads(run, claimed) if reusable else None,
            deadlines.earliest,
        )
    _replay(run, matrix, replayed)
    if earliest < np.inf:
        clock.carry(float(earliest))
    memo.reused = reused
    memo.turns = kept
    return decisions


def _replay(
    run: engine.Pass, matrix: FloatArray, charges: list[tuple[int, IntArray, IntArray]]
) -> None:
    """Make again, in one step, the charges of reused turns (turn row, cluster rows,
    replicas), in order: what `engine.Pass.add` makes of them one by one. Each cell of the
    usage takes its additions in the same order (`np.add.at` adds index by index), and each
    cluster's `changed` the clock of its last charge. A turn's rows are distinct (`Recording`
    reuses no turn that charged a cluster twice at once)."""
    if len(charges) <= 1:
        for turn, rows, replicas in charges:
            engine.Pass.add(run, rows, matrix[turn], replicas)
        return
    lengths = [len(rows) for _, rows, _ in charges]
    rows = np.concatenate([rows for _, rows, _ in charges])
    replicas = np.concatenate([replicas for _, _, replicas in charges])
    turns = np.repeat(np.array([turn for turn, _, _ in charges], dtype=np.int64), lengths)
    np.add.at(run.usage.T, rows, matrix[turns] * replicas[:, np.newaxis])
    clocks = run.clock + np.repeat(np.arange(1, len(charges) + 1, dtype=np.int64), lengths)
    np.maximum.at(run.changed, rows, clocks)
    run.clock += len(charges)


def _holds(
    last: Turn,
    claimed: facts.Claimed,
    before: Decision | None,
    access: tuple[DataAccess, ...],
    now: float,
    dirty: set[int],
) -> bool:
    """Whether the last turn is this turn's: same inputs, its instant not come, and no
    column it read changed."""
    if last.decision is None or last.before is not before or now >= last.until:
        return False
    if last.claimed is not claimed or last.access != access:
        return False
    if last.reads is None:
        return not dirty
    return last.reads.isdisjoint(dirty)


def _keepable(run: Recording, decision: Decision, before: Decision | None) -> bool:
    """Whether a turn wrote only its decision and its charges, and its decision does not
    wait by its nature."""
    key = decision.key
    if run.express or run.twice or key in run.steps or key in run.fresh_targets:
        return False
    if decision.unschedulable is not None or decision.waits:
        return False
    return before is None or not before.waits


def _reads(run: Recording, claimed: facts.Claimed) -> frozenset[int] | None:
    """The ledger columns the turn just decided read (module docstring)."""
    if run.stood:
        return frozenset()
    subject = run.subject
    if subject is None or claimed.placement.affinity_terms:
        return None
    read = framework.static_filters(run.fleet, subject) | subject.holders
    return frozenset(np.flatnonzero(read).tolist())


def _dirty_at_start(turns: Mapping[ResourceKey, Turn], order: Sequence[facts.Claimed]) -> set[int]:
    """The columns that differ before the first turn: those charged last pass by a workload
    that is gone or claimed otherwise (its turn may have moved in the order)."""
    dirty: set[int] = set()
    now = {claimed.workload.key: claimed for claimed in order}
    for key, turn in turns.items():
        if now.get(key) is not turn.claimed:
            _mark(dirty, turn.charges)
    return dirty


def _mark(dirty: set[int], charges: Charges) -> None:
    for rows, _ in charges:
        dirty.update(rows.tolist())


def _same(one: Charges, other: Charges) -> bool:
    return len(one) == len(other) and all(
        np.array_equal(rows, their_rows) and np.array_equal(replicas, their_replicas)
        for (rows, replicas), (their_rows, their_replicas) in zip(one, other, strict=True)
    )
