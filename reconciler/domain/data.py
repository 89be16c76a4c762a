"""Data for Storage-Transmission-Compute Integration (STCI): data sets, the links between
clusters, and what a workload reads and writes.

Amounts are floats in base units: bytes, bytes per day for rates, bytes per second for
bandwidth, milliseconds for latency, and a price per GiB moved across a link.

Called by 9 modules, among them `domain.policy`, `schedule`, `validate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler.domain.base import Origin

READ, WRITE = "read", "write"
TIERS = ("sameZone", "sameRegion", "crossRegion", "crossProvider")
"""How far apart two clusters are, nearest first; a pair not listed in `Topology.links` gets
the defaults of its tier."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DataSet:
    """Where a data set lives (a primary and replicas), its size and how fast it changes."""

    name: str
    origin: Origin
    size: float = 0.0
    change_rate: float = 0.0
    """Bytes per day written to the primary (what keeping a replica in sync costs)."""
    primary: str | None = None
    replicas: tuple[str, ...] = ()

    @property
    def holders(self) -> tuple[str, ...]:
        """Clusters a reader finds the data on: the primary and every replica."""
        return ((self.primary,) if self.primary else ()) + self.replicas


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """What moving data between two clusters costs."""

    latency_ms: float
    bandwidth: float
    """Bytes per second."""
    cost_per_gib: float


LOCAL = Link(latency_ms=0.0, bandwidth=float("inf"), cost_per_gib=0.0)
"""A cluster and itself: nothing crosses a domain."""
DEFAULT_TIERS: Mapping[str, Link] = {
    "sameZone": Link(latency_ms=0.5, bandwidth=25 * 2**30, cost_per_gib=0.0),
    "sameRegion": Link(latency_ms=2.0, bandwidth=10 * 2**30, cost_per_gib=0.01),
    "crossRegion": Link(latency_ms=80.0, bandwidth=2**30, cost_per_gib=0.02),
    "crossProvider": Link(latency_ms=90.0, bandwidth=500 * 2**20, cost_per_gib=0.09),
}
"""Used when `topology.yaml` is absent or leaves a tier out: typical public-cloud figures."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Topology:
    """The links between clusters: defaults per tier, and measured pairs (both directions)."""

    tiers: Mapping[str, Link] = field(default_factory=lambda: dict(DEFAULT_TIERS))
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DataAccess:
    """One data set a workload reads or writes, and at what rate (bytes per day)."""

    dataset: str
    access: str = READ
    rate: float = 0.0
