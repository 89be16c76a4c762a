"""A workload's verdicts bounded at its turn: only what its decision file can list is kept.

A pass over 10,000 clusters and 100,000 workloads cannot keep each turn's arrays (a score
column per scorer, over the fleet) until the decision files are written. So at the turn the
scheduler keeps, per decision, the figures of the clusters a listing (`domain.verdicts.listing`)
can show, picked with numpy in time linear in the fleet and without a sort of it:

- the clusters the turn selected, and those the workload held before (a disruption budget may
  keep them), with a margin of `MARGIN` for clusters re-balancing moves it to later;
- the best feasible clusters, by rounded score then name: as many as the selected ones, the
  margin and `LISTED_OTHERS` (`np.partition` finds the score of the last one kept);
- the first rejected clusters by name, as many as the feasible ones fall short of that;
- how many clusters are feasible, and how many each filter rejected.

`listed(selected)` then gives exactly what the listing of every verdict gives, for any
`selected` of at most as many clusters as kept for it, all among those kept: the feasible
clusters kept are the best ones, so those left once `selected` is taken out are still the best
of the rest, and the omitted counts are the totals less what is listed. A decision whose
clusters went beyond that (re-balancing moved it onto a cluster that ranked low at its turn)
lists such a cluster by what the turn knew of it (`_unknown`). `every()` answers when every
cluster was kept (a fleet of at most `LISTED_OTHERS + MARGIN` clusters); `dro explain` keeps
the whole turn for the workload it explains instead (`turnverdicts`).

Called by `schedule.framework`.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
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
        "_complete",
        "_feasible",
        "_filters",
        "_first_rejected",
        "_fleet",
        "_owner",
        "_ranked",
        "_reasons",
        "_rejected",
        "_rows",
        "_scorers",
        "_scores",
        "_spare",
        "_totals",
    )

    def __init__(
        self,
        fleet: Fleet,
        rejections: Sequence[tuple[str, BoolArray, Any]],
        total: FloatArray | None,
        scores: Mapping[str, FloatArray],
        keep: Iterable[int],
    ) -> None:
        """`rejections`: (filter, the rows it rejected first, its answer with a `label`);
        `keep`: the rows of the clusters the turn selected and those held before."""
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
        held = np.unique(np.fromiter(keep, dtype=np.int64))
        self._spare = len(held) + MARGIN
        wanted = LISTED_OTHERS + self._spare
        self._ranked = _best(~rejected_mask, total, wanted)
        self._first_rejected = (
            rows_of(rejected_mask)[: wanted - self._feasible]
            if wanted > self._feasible
            else np.zeros(0, dtype=np.int64)
        )
        rows = np.unique(np.concatenate((held, self._ranked, self._first_rejected)))
        self._rows = rows
        self._complete = len(rows) == fleet.size
        owner = np.full(len(rows), -1, dtype=np.int64)
        for index, (_, mask, _answer) in enumerate(rejections):
            owner[mask[rows]] = index
        self._owner = owner
        totals = total[rows] if total is not None else np.zeros(len(rows))
        self._totals = np.round(totals, 4)
        self._scorers = tuple(scores)
        self._scores = (
            np.round(np.array([scores[name][rows] for name in self._scorers]), 4)
            if self._scorers
            else np.zeros((0, len(rows)))
        )
        reasons: dict[int, str] = {}
        for position in rows_of(self._owner >= 0).tolist():
            row = int(rows[position])
            answer = rejections[int(self._owner[position])][2]
            reasons[row] = answer.label(row)[1]
        self._reasons = reasons

    def __bool__(self) -> bool:
        return self._fleet.size > 0

    def _positions(self, rows: IntArray) -> IntArray:
        """Where each of `rows` (all kept) sits among the kept rows."""
        found: IntArray = np.searchsorted(self._rows, rows)
        return found

    def _build(self, rows: Sequence[int]) -> list[ClusterVerdict]:
        """The verdicts of `rows`, in that order; a row not kept gets `_unknown`'s."""
        names = self._fleet.name_list
        wanted = np.array(rows, dtype=np.int64)
        at = self._positions(wanted)
        kept = (at < len(self._rows)) & (self._rows[np.minimum(at, len(self._rows) - 1)] == wanted)
        columns = self._scores[:, np.where(kept, at, 0)].tolist() if len(self._rows) else []
        totals = self._totals[np.where(kept, at, 0)].tolist() if len(self._rows) else []
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
        if not self._complete:
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
        best = [row for row in self._ranked.tolist() if row not in taken][:others]
        room = others - len(best) if len(self._ranked) == self._feasible else 0
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

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeptVerdicts) and not (self._complete and other._complete):
            return self is other or self._state() == other._state()
        return super().__eq__(other)

    __hash__ = None

    def _state(self) -> tuple[Any, ...]:
        return (
            self._rows.tolist(),
            self._owner.tolist(),
            self._totals.tolist(),
            self._scorers,
            self._scores.tolist(),
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
    """A score that at least `count` feasible rows reach (or all of them, when fewer), less
    the rounding: one read off a sorted sample of the scores, lowered until enough reach it.
    (`np.partition` would find the `count`-th score exactly, but takes milliseconds on a
    fleet's scores, which repeat a few values thousands of times.)"""
    size = len(total)
    if size <= 8 * count:
        return -np.inf
    share = size // (8 * count)
    sample = np.sort(total[_sample(size, size // share)])
    rank = count // share + 2
    while rank < len(sample):
        cut = float(sample[-rank]) - 1e-3
        if np.count_nonzero(feasible & (total >= cut)) >= count:
            return cut
        rank *= 2
    return -np.inf


@functools.cache
def _sample(size: int, count: int) -> IntArray:
    """`count` rows of a fleet of `size`, spread at random (a fixed seed): a stride could
    follow a pattern of the fleet's names, as regions taken in turn do."""
    rows: IntArray = np.random.default_rng(0).choice(size, count, replace=False)
    rows.sort()
    return frozen(rows)
