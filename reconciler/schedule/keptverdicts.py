"""A workload's verdicts bounded at its turn: only what its decision file can list is kept.

A pass over 10,000 clusters and 100,000 workloads cannot keep each turn's arrays (a score
column per scorer, over the fleet) until the decision files are written. So at the turn the
scheduler keeps, per decision, the figures of the clusters a listing (`domain.verdicts.listing`)
can show, picked with numpy in time linear in the fleet and without a sort of it:

- the clusters the turn selected, and those the workload held before (a disruption budget may
  keep them): a file lists every one it holds;
- the best `LISTED_OTHERS + MARGIN` feasible clusters besides those, by rounded score then
  name, ranked only among the clusters that reach a cut read off a sample of the scores
  (`_cut`), with a margin for clusters re-balancing moves the workload to later;
- the first rejected clusters by name, as many as the feasible ones fall short of that;
- how many clusters are feasible, and how many each filter rejected.

A score column the pass shares (the static scorers', per placement) is kept by reference; the
others' figures as fixed point, which reads back as the same rounded floats.

`listed(selected)` gives exactly what the listing of every verdict gives when `selected` is
among the clusters kept and adds at most `MARGIN` to those held: the others kept are the best,
so those left once `selected` is taken out are still the best of the rest, and the omitted
counts are the totals less what is listed. A cluster the turn did not keep (re-balancing moved
the workload onto one that ranked low then) is listed as feasible, without scores (`_unknown`).
`every()` answers when every cluster was kept (a small fleet); `dro explain` keeps the whole
turn of the workload it explains instead (`turnverdicts`).

Called by `schedule.framework`.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from reconciler.domain import LISTED_OTHERS, ClusterVerdict, Listing, Verdicts
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray, frozen, rows_of

MARGIN = LISTED_OTHERS
"""Clusters kept beyond the selected ones and the listed others, for a decision whose clusters
change after its turn (re-balancing, a disruption budget, a bundle)."""

UNKNOWN_REASON = "not ranked at its turn: it scored below the clusters listed then"
"""The reason given for a listed cluster the turn did not keep (`_unknown`)."""


class KeptVerdicts(Verdicts):
    """The verdicts one decision file can list, kept at the workload's turn."""

    __slots__ = (
        "_feasible",
        "_filters",
        "_first_rejected",
        "_fixed",
        "_fleet",
        "_held",
        "_owner",
        "_ranked",
        "_reasons",
        "_rejected",
        "_rows",
        "_scorers",
        "_shared",
        "_totals",
        "_whole",
    )

    def __init__(
        self,
        fleet: Fleet,
        rejections: Sequence[tuple[str, BoolArray, Any]],
        total: FloatArray | None,
        scores: Mapping[str, FloatArray],
        keep: IntArray,
    ) -> None:
        """`rejections`: (filter, the rows it rejected first, its answer with a `label`);
        `keep`: the rows of the clusters the turn selected and those held before. A score
        column that is read-only is one the pass shares (a placement's static scores), and
        is kept by reference; the others' kept figures are copied."""
        super().__init__()
        self._every = None
        self._fleet = fleet
        self._filters = tuple(name for name, _, _ in rejections)
        # each cluster is charged to one filter (`framework._reject`): the masks are disjoint
        rejected_mask = np.zeros(fleet.size, dtype=bool)
        for _, mask, _answer in rejections:
            rejected_mask |= mask
        self._rejected = np.array([np.count_nonzero(m) for _, m, _ in rejections], dtype=np.int64)
        self._feasible = fleet.size - int(self._rejected.sum())
        held = np.unique(keep)
        held_mask = np.zeros(fleet.size, dtype=bool)
        held_mask[held] = True
        others = ~rejected_mask & ~held_mask
        self._ranked = _best(others, total, LISTED_OTHERS + MARGIN).astype(np.int32)
        self._whole = len(self._ranked) == np.count_nonzero(others)
        """Every feasible cluster is kept (those held, and all others ranked)."""
        wanted = LISTED_OTHERS + MARGIN + len(held)
        self._first_rejected = (
            rows_of(rejected_mask)[: wanted - self._feasible].astype(np.int32)
            if wanted > self._feasible
            else np.zeros(0, dtype=np.int32)
        )
        rows = np.unique(np.concatenate((held, self._ranked, self._first_rejected)))
        self._rows = rows.astype(np.int32)
        self._held = held[~rejected_mask[held]].astype(np.int32)
        """The held clusters that are feasible."""
        owner = np.full(len(rows), -1, dtype=np.int16)
        for index, (_, mask, _answer) in enumerate(rejections):
            owner[mask[rows]] = index
        self._owner = owner
        self._totals = np.round(total[rows], 4) if total is not None else np.zeros(len(rows))
        self._scorers = tuple(scores)
        self._shared = tuple(
            (i, column)
            for i, column in enumerate(scores.values())
            if not column.flags.writeable and len(column) == fleet.size
        )
        shared = {i for i, _ in self._shared}
        own = [column[rows] for i, column in enumerate(scores.values()) if i not in shared]
        # rounded to 4 places as fixed point: numpy's round is rint(x * 10**4) / 10**4
        self._fixed = (
            np.rint(np.array(own) * 1e4).astype(np.int32) if own else np.zeros((0, len(rows)))
        )
        reasons: dict[int, str] = {}
        for index, (_, _mask, answer) in enumerate(rejections):
            rejected = rows[owner == index]
            if len(rejected):
                reasons.update(zip(rejected.tolist(), answer.details(rejected), strict=True))
        self._reasons = reasons

    def __bool__(self) -> bool:
        return self._fleet.size > 0

    def _positions(self, rows: IntArray) -> IntArray:
        """Where each of `rows` (all kept) sits among the kept rows."""
        found: IntArray = np.searchsorted(self._rows, rows)
        return found

    def _columns(self, at: IntArray, rows: IntArray) -> list[list[float]]:
        """Each scorer's score (rounded) of the kept `rows`, found at positions `at`."""
        shared = dict(self._shared)
        own = iter((self._fixed[:, at] / 1e4).tolist())
        return [
            np.round(shared[i][rows], 4).tolist() if i in shared else next(own)
            for i in range(len(self._scorers))
        ]

    def _build(self, rows: Sequence[int]) -> list[ClusterVerdict]:
        """The verdicts of `rows`, in that order; a row not kept gets `_unknown`'s."""
        names = self._fleet.name_list
        wanted = np.array(rows, dtype=np.int64)
        at = np.minimum(self._positions(wanted), max(len(self._rows) - 1, 0))
        kept = self._rows[at] == wanted if len(self._rows) else np.zeros(len(rows), dtype=bool)
        columns = self._columns(at, np.where(kept, wanted, 0)) if len(self._rows) else []
        totals = self._totals[at].tolist() if len(self._rows) else []
        result = []
        for i, row in enumerate(rows):
            if not kept[i]:
                result.append(_unknown(names[row]))
                continue
            owner = int(self._owner[at[i]])
            if owner >= 0:
                result.append(
                    ClusterVerdict(
                        cluster=names[row],
                        rejected_by=self._filters[owner],
                        reason=self._reasons[row],
                    )
                )
                continue
            result.append(
                ClusterVerdict(
                    cluster=names[row],
                    scores={name: columns[j][i] for j, name in enumerate(self._scorers)},
                    total_score=totals[i],
                )
            )
        return result

    def _owners(self, rows: Sequence[int]) -> list[int]:
        """The index of the filter that rejected each of `rows`, -1 where none did (or where
        the row was not kept)."""
        if not rows or not len(self._rows):
            return [-1] * len(rows)
        wanted = np.array(rows, dtype=np.int64)
        at = np.minimum(self._positions(wanted), len(self._rows) - 1)
        owners: IntArray = np.where(self._rows[at] == wanted, self._owner[at], -1)
        return [int(o) for o in owners.tolist()]

    def every(self) -> tuple[ClusterVerdict, ...]:
        """One verdict per cluster, in name order, when every cluster was kept."""
        if len(self._rows) < self._fleet.size:
            raise LookupError(
                "these verdicts were bounded at the turn; keep the whole turn to read every one"
            )
        if self._every is None:
            self._every = tuple(self._build(self._rows.tolist()))
        return self._every

    def listed(self, selected: Collection[str], others: int = LISTED_OTHERS) -> Listing:
        """What `domain.verdicts.listing` gives for the verdicts of every cluster; only the
        listed verdicts are built."""
        index = self._fleet.index
        chosen = sorted({index[name] for name in selected if name in index})
        taken = set(chosen)
        best = self._best_of(
            [r for r in (*self._ranked.tolist(), *self._held.tolist()) if r not in taken]
        )[:others]
        room = others - len(best) if self._whole else 0
        first = [row for row in self._first_rejected.tolist() if row not in taken][:room]
        listed = self._build([*chosen, *best, *first])
        left = self._rejected.copy()
        feasible_left = self._feasible - len(best)
        for owner in self._owners([*chosen, *first]):
            if owner >= 0:
                left[owner] -= 1
            else:
                feasible_left -= 1  # one the turn did not keep was feasible then (`_unknown`)
        omitted: dict[str, int] = {}
        for i in rows_of(np.maximum(left, 0)).tolist():
            omitted[self._filters[i]] = omitted.get(self._filters[i], 0) + int(left[i])
        return Listing(
            verdicts=tuple(listed),
            omitted_feasible=max(0, feasible_left),
            omitted_rejected=dict(sorted(omitted.items())),
        )

    def _best_of(self, rows: list[int]) -> list[int]:
        """`rows` (all kept and feasible) by rounded score, best first, then by name."""
        if not rows:
            return []
        found = np.array(rows, dtype=np.int64)
        totals = self._totals[self._positions(found)]
        ordered: list[int] = found[np.lexsort((found, -totals))].tolist()
        return ordered

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeptVerdicts):
            return self is other or self._state() == other._state()
        return super().__eq__(other)

    __hash__ = None

    def _state(self) -> tuple[Any, ...]:
        return (
            self._rows.tolist(),
            self._owner.tolist(),
            self._totals.tolist(),
            self._scorers,
            self._columns(np.arange(len(self._rows)), self._rows.astype(np.int64)),
            self._reasons,
            self._filters,
            self._feasible,
            self._rejected.tolist(),
        )

    def __repr__(self) -> str:
        return f"KeptVerdicts({len(self._rows)} of {self._fleet.size} clusters)"


def _unknown(cluster: str) -> ClusterVerdict:
    """A cluster a decision holds that its turn did not keep: feasible then (the scheduler or
    re-balancing placed it), its scores not kept."""
    return ClusterVerdict(cluster=cluster, reason=UNKNOWN_REASON)


def _best(feasible: BoolArray, total: FloatArray | None, count: int) -> IntArray:
    """The `count` best `feasible` rows by (score rounded to 4 places, descending; row), in
    that order, without sorting the fleet: only the rows scoring at least `_cut` are ranked."""
    if total is None or count <= 0:
        return rows_of(feasible)[: max(count, 0)]
    rows = rows_of(feasible & (total >= _cut(feasible, total, count)))
    rounded = np.round(total[rows], 4)
    result: IntArray = rows[np.lexsort((rows, -rounded))[:count]]
    return result


def _cut(feasible: BoolArray, total: FloatArray, count: int) -> float:
    """A score that at least `count` feasible rows reach (or -inf when fewer do), less a
    margin so that every row whose rounded score can tie the `count`-th best's is above it:
    one read off a sorted sample of the scores, lowered until enough reach it.
    (`np.partition` would find the `count`-th score exactly, but takes milliseconds on a
    fleet's scores, which repeat a few values thousands of times.)"""
    size = len(total)
    if size <= 8 * count:
        return -np.inf
    share = size // (8 * count)
    sample = np.sort(total[_sample(size, size // share)])
    rank = count // share + 2
    while rank < len(sample):
        reached = float(sample[-rank])
        if np.count_nonzero(feasible & (total >= reached)) >= count:
            return reached - 1e-3
        rank *= 2
    return -np.inf


@functools.cache
def _sample(size: int, count: int) -> IntArray:
    """`count` rows of a fleet of `size`, spread at random (a fixed seed): a stride could
    follow a pattern of the fleet's names, as regions taken in turn do."""
    rows: IntArray = np.random.default_rng(0).choice(size, count, replace=False)
    rows.sort()
    return frozen(rows)
