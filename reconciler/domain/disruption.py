"""The placement disruption budget: how many of a workload's clusters may be out of service at
once for a voluntary change, and where a workload stands against it.

`placement.disruption: {maxUnavailableClusters: 1}` (or dro.yaml's `spec.disruption`) is a
`DisruptionBudget`; `schedule.disruption` says what counts as out of service and enforces it,
and each decision of a workload with a budget carries a `Disruption` (`status.disruption`).

Called by 7 modules, among them `cli.report`, `domain`, `schedule.disruption`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True, slots=True, kw_only=True)
class DisruptionBudget:
    """`maxUnavailableClusters`: a count of clusters, or a percentage of the workload's
    clusters (rounded down, but at least one), as a PodDisruptionBudget's maxUnavailable."""

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, value: int | str) -> DisruptionBudget:
        """`1` or `"1"` (clusters) or `"25%"` (of the workload's clusters)."""
        text = str(value).strip()
        if text.endswith("%"):
            return cls(percent=float(text[:-1]))
        return cls(count=int(text))

    def of(self, clusters: int) -> int:
        """The budget in clusters for a workload on `clusters` clusters: at least one, so
        that a drain can always make progress."""
        if self.count is not None:
            return max(self.count, 1)
        allowed = int(clusters * (self.percent or 0.0) // 100)
        return max(allowed, 1)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.count)


class Waiting(NamedTuple):
    """Replicas that would have moved off `cluster` this pass, held back by the budget."""

    cluster: str
    replicas: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Disruption:
    """Where one workload stands against its budget after a pass (`status.disruption`)."""

    budget: DisruptionBudget
    allowed: int
    """The budget in clusters for this workload (`DisruptionBudget.of` its clusters)."""
    leaving: tuple[str, ...] = ()
    """Clusters it is moving off: they hold retiring copies (sorted)."""
    entering: tuple[str, ...] = ()
    """Clusters whose copies are not yet observed Healthy: a move's destinations, and those
    observed Progressing, Degraded, Missing or unreachable (sorted)."""
    waiting: tuple[Waiting, ...] = ()
    """What waits for a later pass because of the budget, by cluster."""

    @property
    def out_of_service(self) -> int:
        """How many clusters' worth are out of service: a move counts once at each end, so
        the larger of the clusters left and the clusters entered."""
        return max(len(self.leaving), len(self.entering))


def in_flight_text(leaving: Iterable[str], entering: Iterable[str]) -> str:
    """`leaving a; entering b, c`: the clusters in flight, for reasons and `dro explain`."""
    parts = []
    if left := sorted(leaving):
        parts.append("leaving " + ", ".join(left))
    if entered := sorted(entering):
        parts.append("entering " + ", ".join(entered))
    return "; ".join(parts) or "none"
