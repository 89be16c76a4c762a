"""A workload's verdicts as the arrays of its turn hold them, built only when read.

`framework.Outcome.verdicts` hands these out: the filters' rejections (each filter's rows and
its `label`) and the score columns of the turn, over the fleet. Nothing is built until a
reader asks: a decision whose previous diagnosis is written again (`Decision.recorded`)
never builds any. `every()` builds one `ClusterVerdict` per cluster (`dro explain`);
`listed()` picks what a decision file lists straight from the arrays and builds only those
(at most the selected clusters and `LISTED_OTHERS` more), so a fleet of 1,000 clusters costs
a few dozen verdicts per written decision, not 1,000.

The arrays are the turn's and nothing changes them afterwards (the filters' labels read only
the turn's arrays and the fleet's, which are read-only), so a later read gives the verdicts
the turn would have given.

Called by `schedule.framework`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from reconciler.domain import LISTED_OTHERS, ClusterVerdict, Listing, Verdicts
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray, rows_of

Label = Callable[[int], tuple[str, str]]


class TurnVerdicts(Verdicts):
    """The verdicts of one workload's turn, from its filters' rejections and its scores."""

    __slots__ = ("_fleet", "_rejections", "_scores", "_total")

    def __init__(
        self,
        fleet: Fleet,
        rejections: Sequence[tuple[str, BoolArray, Any]],
        total: FloatArray | None,
        scores: Mapping[str, FloatArray],
    ) -> None:
        """`rejections`: (filter, the rows it rejected first, its answer with a `label`)."""
        super().__init__()
        self._every = None
        self._fleet = fleet
        self._rejections = tuple(rejections)
        self._total = total
        self._scores = scores

    def __bool__(self) -> bool:
        return self._fleet.size > 0

    def _owners(self) -> IntArray:
        """Per cluster row: the index of the filter that rejected it, -1 where none did (the
        last one wins, as when the verdicts are built one by one)."""
        owner = np.full(self._fleet.size, -1, dtype=np.int64)
        for index, (_, rows, _answer) in enumerate(self._rejections):
            owner[rows] = index
        return owner

    def _build(self, rows: IntArray, owner: IntArray) -> list[ClusterVerdict]:
        """The verdicts of `rows`, in that order."""
        names = self._fleet.name_list
        picked = rows.tolist()
        columns = {name: np.round(s[rows], 4).tolist() for name, s in self._scores.items()}
        total = self._total if self._total is not None else np.zeros(self._fleet.size)
        totals = np.round(total[rows], 4).tolist()
        result = []
        for i, row in enumerate(picked):
            index = int(owner[row])
            if index >= 0:
                plugin, _, answer = self._rejections[index]
                label: Label = answer.label
                result.append(
                    ClusterVerdict(cluster=names[row], rejected_by=plugin, reason=label(row)[1])
                )
                continue
            result.append(
                ClusterVerdict(
                    cluster=names[row],
                    scores={name: column[i] for name, column in columns.items()},
                    total_score=totals[i],
                )
            )
        return result

    def every(self) -> tuple[ClusterVerdict, ...]:
        """One verdict per cluster, in name order; built once."""
        if self._every is None:
            rows = np.arange(self._fleet.size, dtype=np.int64)
            self._every = tuple(self._build(rows, self._owners()))
        return self._every

    def listed(self, selected: Collection[str], others: int = LISTED_OTHERS) -> Listing:
        """What `domain.verdicts.listing` picks, picked from the arrays: only the listed
        verdicts are built."""
        if self._every is not None:
            return super().listed(selected, others)
        fleet = self._fleet
        owner = self._owners()
        chosen = np.zeros(fleet.size, dtype=bool)
        index = fleet.index
        chosen[[index[name] for name in selected if name in index]] = True
        total = self._total if self._total is not None else np.zeros(fleet.size)
        feasible = rows_of(~chosen & (owner < 0))
        best = feasible[np.lexsort((feasible, -np.round(total[feasible], 4)))]
        rejected = rows_of(~chosen & (owner >= 0))
        shown = best[:others]
        room = others - len(shown)
        left = np.bincount(owner[rejected[room:]], minlength=len(self._rejections))
        omitted: dict[str, int] = {}
        for i in rows_of(left).tolist():
            name = self._rejections[i][0]
            omitted[name] = omitted.get(name, 0) + int(left[i])
        rows = np.concatenate((rows_of(chosen), shown, rejected[:room]))
        return Listing(
            verdicts=tuple(self._build(rows, owner)),
            omitted_feasible=max(0, len(best) - others),
            omitted_rejected=dict(sorted(omitted.items())),
        )
