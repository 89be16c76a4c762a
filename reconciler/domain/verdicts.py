"""Verdicts: why each cluster was kept or rejected for one workload, built only when read.

A pass over 1,000 clusters and 10,000 workloads has ten million (workload, cluster) verdicts,
and most are never read: a workload whose placement stands writes its previous diagnosis again
(`Decision.recorded`). So a `Diagnosis` holds a `Verdicts`, which the scheduler makes from
the arrays of the workload's turn (`schedule.framework.Outcome`) and which builds the
`ClusterVerdict`s on the first read, the same ones as at the turn.

Two reads: `every()`, one verdict per cluster in name order (`dro explain`), and `listed()`,
what a decision file lists, bounded as KubeFleet's scheduler bounds a ClusterSchedulingPolicy
Snapshot's decisions (`maxClusterDecisionCount`, 20): every selected cluster, then at most
`LISTED_OTHERS` others (the feasible ones by score, best first, then the rejected ones by
name), and how many clusters were left out, by why (`Listing`).

Called by `domain`, `domain.decision` and `schedule.record`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from reconciler.domain.base import empty

LISTED_OTHERS = 20
"""At most this many clusters that a decision did not select are listed in its file, as
KubeFleet's scheduler lists at most 20 unselected clusters (`maxClusterDecisionCount`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterVerdict:
    """Why one cluster was kept or rejected for one workload, and how it scored."""

    cluster: str
    rejected_by: str | None = None
    """The filter plugin that rejected the cluster, or None when it passed every filter."""
    reason: str | None = None
    scores: Mapping[str, float] = field(default_factory=empty)
    """Plugin name → score in [0, 100]."""
    total_score: float = 0.0
    cost_per_replica_hour: float | None = None
    """What one replica would cost per hour there (`schedule.pricing`); None where the
    cluster was rejected or declares no price."""


@dataclass(frozen=True, slots=True)
class Listing:
    """What a decision file lists of its verdicts: the selected clusters' (by name), then the
    others', and the clusters left out."""

    verdicts: tuple[ClusterVerdict, ...]
    omitted_feasible: int = 0
    """Feasible clusters not listed: they scored below those listed."""
    omitted_rejected: Mapping[str, int] = field(default_factory=empty)
    """Filter → rejected clusters not listed, by filter name."""

    @property
    def omitted(self) -> int:
        """Every cluster left out."""
        return self.omitted_feasible + sum(self.omitted_rejected.values())


class Verdicts:
    """One workload's verdicts: here given outright, in name order; a subclass builds them
    when first read (`schedule.framework`). Equal when their verdicts are."""

    __slots__ = ("_every",)

    def __init__(self, every: Iterable[ClusterVerdict] = ()) -> None:
        self._every: tuple[ClusterVerdict, ...] | None = tuple(every)

    def every(self) -> tuple[ClusterVerdict, ...]:
        """One verdict per cluster, in name order."""
        return self._every or ()

    def __bool__(self) -> bool:
        """Whether there is any verdict (without building them)."""
        return bool(self._every)

    def listed(self, selected: Collection[str], others: int = LISTED_OTHERS) -> Listing:
        """The selected clusters' verdicts, then at most `others` more (`listing`)."""
        return listing(self.every(), selected, others)

    def mapped(self, change: Callable[[ClusterVerdict], ClusterVerdict]) -> Verdicts:
        """These verdicts with `change` applied to each, also only when read."""
        return _Mapped(self, change)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Verdicts):
            return NotImplemented
        return self is other or self.every() == other.every()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Verdicts({self.every()!r})"


NONE = Verdicts()
"""No verdicts: the diagnosis of a pass that does not explain itself."""


def listing(
    verdicts: Iterable[ClusterVerdict], selected: Collection[str], others: int = LISTED_OTHERS
) -> Listing:
    """Every verdict of a `selected` cluster, by name; then at most `others` more: the feasible
    ones by score (best first, then by name), then the rejected ones by name; and how many
    were left out, the rejected ones by the filter that rejected them."""
    chosen: list[ClusterVerdict] = []
    feasible: list[ClusterVerdict] = []
    rejected: list[ClusterVerdict] = []
    for verdict in verdicts:
        if verdict.cluster in selected:
            chosen.append(verdict)
        elif verdict.rejected_by is None:
            feasible.append(verdict)
        else:
            rejected.append(verdict)
    chosen.sort(key=lambda v: v.cluster)
    feasible.sort(key=lambda v: (-v.total_score, v.cluster))
    rejected.sort(key=lambda v: v.cluster)
    shown = feasible[:others]
    room = others - len(shown)
    shown += rejected[:room]
    left: dict[str, int] = {}
    for verdict in rejected[room:]:
        assert verdict.rejected_by is not None
        left[verdict.rejected_by] = left.get(verdict.rejected_by, 0) + 1
    return Listing(
        verdicts=(*chosen, *shown),
        omitted_feasible=max(0, len(feasible) - others),
        omitted_rejected=dict(sorted(left.items())),
    )


class _Mapped(Verdicts):
    """Verdicts with a change applied to each, when read."""

    __slots__ = ("_base", "_change")

    def __init__(self, base: Verdicts, change: Callable[[ClusterVerdict], ClusterVerdict]) -> None:
        super().__init__()
        self._every = None
        self._base = base
        self._change = change

    def every(self) -> tuple[ClusterVerdict, ...]:
        if self._every is None:
            self._every = tuple(self._change(v) for v in self._base.every())
        return self._every

    def __bool__(self) -> bool:
        return bool(self._base)

    def listed(self, selected: Collection[str], others: int = LISTED_OTHERS) -> Listing:
        found = self._base.listed(selected, others)
        changed = tuple(self._change(v) for v in found.verdicts)
        return Listing(changed, found.omitted_feasible, found.omitted_rejected)
