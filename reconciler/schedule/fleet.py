"""The fleet as numpy arrays: one row per cluster, sorted by name.

Plugins work on whole columns: a label becomes an array of values over all clusters, taints a
(clusters × distinct taints) matrix, resources (clusters × resources) matrices of capacity,
usage and largest free node. Arrays are read-only once built.

The resource model has one seam: a cluster with an `Observation` (measured live) uses it in
place of its declared `capacity`, `allocated` and `largestNodeFree`. A resource a cluster does
not declare has no capacity there, except `pods` and `ephemeral-storage`, which are unbounded
until declared or observed. Without a declared largest free node, the whole free amount counts
as one node.

Called by 40 modules, among them `schedule`, `simulate.replay`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from reconciler.domain import (
    EMPTY,
    Cluster,
    ClusterAffinity,
    Observation,
    ResourceKey,
    Taint,
    clock,
    durations,
)
from reconciler.kube.health import HEALTHY

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

UNBOUNDED_WHEN_UNDECLARED = frozenset({"pods", "ephemeral-storage"})

ArrayT = TypeVar("ArrayT", bound=np.ndarray[Any, Any])


def rows_of(values: BoolArray | IntArray) -> IntArray:
    """Indices of the non-zero entries of a 1-D array: `np.flatnonzero` without its wrapper
    overhead, which matters in the per-workload loop."""
    result: IntArray = values.nonzero()[0]
    return result


def some(mask: BoolArray | IntArray) -> bool:
    """Whether any entry is non-zero; cheaper than `ndarray.any()` per call."""
    return bool(np.count_nonzero(mask))


def frozen(array: ArrayT) -> ArrayT:
    """Mark an array read-only and return it."""
    array.flags.writeable = False
    return array


@dataclass(frozen=True, slots=False, kw_only=True)
class Fleet:
    """Columnar view of the clusters a pass schedules onto."""

    clusters: tuple[Cluster, ...]
    observations: Mapping[str, Observation] = field(default_factory=lambda: EMPTY)
    extra_resources: Sequence[str] = ()
    """Resources that workloads request but no cluster declares (they get a zero column)."""
    now: float = 0.0
    """The pass's time (seconds since the epoch), against which unreachability is measured."""
    failover_after: float = 300.0
    """`failover.after`: how long a cluster may be unreachable before its replicas move."""
    unschedulable_after: float = 300.0
    """`rebalance.unschedulableAfter`: how long pods may pend before their share moves."""
    names: npt.NDArray[np.str_] = field(init=False)
    resources: tuple[str, ...] = field(init=False)
    taints: tuple[Taint, ...] = field(init=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.clusters, key=lambda c: c.name))
        object.__setattr__(self, "clusters", ordered)
        object.__setattr__(self, "names", frozen(np.array([c.name for c in ordered], dtype=str)))
        declared = {r for c in ordered for r in (*c.capacity, *c.allocated, *c.largest_node_free)}
        observed = {
            r
            for o in self.observations.values()
            for r in (*o.capacity, *o.used, *o.largest_node_free)
        }
        resources = sorted(declared | observed | set(self.extra_resources))
        object.__setattr__(self, "resources", tuple(resources))
        taints = sorted(
            {t for c in ordered for t in c.taints},
            key=lambda t: (t.key, t.value, t.effect, t.time_added or 0.0),
        )
        object.__setattr__(self, "taints", tuple(taints))

    @property
    def size(self) -> int:
        """Number of clusters."""
        return len(self.clusters)

    @cached_property
    def name_list(self) -> list[str]:
        """Cluster names by row, as Python strings."""
        return [c.name for c in self.clusters]

    @cached_property
    def index(self) -> Mapping[str, int]:
        """Cluster name → row."""
        return {c.name: i for i, c in enumerate(self.clusters)}

    def label(self, key: str) -> npt.NDArray[np.object_]:
        """The value of one label on every cluster (None where unset)."""
        return self._labels.get(key, self._missing)

    def topology(self, by: str) -> npt.NDArray[np.object_]:
        """The spread group of every cluster: its name, provider, region, zone or a label."""
        if by == "cluster":
            return frozen(self.names.astype(object))
        if by in ("provider", "region", "zone"):
            values = [getattr(c, by) or None for c in self.clusters]
            return frozen(np.array(values, dtype=object))
        return self.label(by)

    @cached_property
    def _missing(self) -> npt.NDArray[np.object_]:
        return frozen(np.full(self.size, None, dtype=object))

    @cached_property
    def _labels(self) -> Mapping[str, npt.NDArray[np.object_]]:
        keys = sorted({k for c in self.clusters for k in c.labels})
        return {
            k: frozen(np.array([c.labels.get(k) for c in self.clusters], dtype=object))
            for k in keys
        }

    @cached_property
    def taint_matrix(self) -> BoolArray:
        """(clusters × distinct taints): True where the cluster carries the taint."""
        matrix = np.zeros((self.size, len(self.taints)), dtype=bool)
        column = {t: j for j, t in enumerate(self.taints)}
        for i, cluster in enumerate(self.clusters):
            for taint in cluster.taints:
                matrix[i, column[taint]] = True
        return frozen(matrix)

    def _matrix(self, declared: str, observed: str) -> FloatArray:
        matrix = np.full((self.size, len(self.resources)), np.nan, dtype=np.float64)
        column = {r: j for j, r in enumerate(self.resources)}
        for i, cluster in enumerate(self.clusters):
            seen = self.observations.get(cluster.name)
            values = getattr(seen, observed) if seen is not None else getattr(cluster, declared)
            for resource, amount in values.items():
                matrix[i, column[resource]] = amount
        return matrix

    @cached_property
    def capacity(self) -> FloatArray:
        """(clusters × resources) total allocatable; inf where nothing limits it."""
        matrix = self._matrix("capacity", "capacity")
        unbounded = np.array([r in UNBOUNDED_WHEN_UNDECLARED for r in self.resources], dtype=bool)
        missing = np.isnan(matrix)
        matrix[missing & unbounded[np.newaxis, :]] = np.inf
        matrix[np.isnan(matrix)] = 0.0
        return frozen(matrix)

    @cached_property
    def capacity_by_resource(self) -> FloatArray:
        """`capacity` transposed into (resources × clusters), contiguous: one row per resource,
        so per-resource work over every cluster is a row operation."""
        return frozen(np.ascontiguousarray(self.capacity.T))

    @cached_property
    def used(self) -> FloatArray:
        """(clusters × resources) usage, dro's own replicas included."""
        matrix = self._matrix("allocated", "used")
        matrix[np.isnan(matrix)] = 0.0
        return frozen(matrix)

    @cached_property
    def largest_free(self) -> FloatArray:
        """(clusters × resources) free amount of the emptiest node; the free total if unknown."""
        matrix = self._matrix("largest_node_free", "largest_node_free")
        free = np.maximum(self.capacity - self.used, 0.0)
        missing = np.isnan(matrix)
        matrix[missing] = free[missing]
        return frozen(matrix)

    def load(self) -> float:
        """The fleet's water level: the highest of Σused / Σcapacity over cpu and memory."""
        levels = []
        for resource in ("cpu", "memory"):
            if resource not in self.resources:
                continue
            j = self.resources.index(resource)
            finite = np.isfinite(self.capacity[:, j])
            total = float(self.capacity[finite, j].sum())
            if total > 0:
                levels.append(float(self.used[finite, j].sum()) / total)
        return max(levels, default=0.0)

    @cached_property
    def draining(self) -> BoolArray:
        """Clusters with `spec.drain`."""
        return frozen(np.array([c.drain for c in self.clusters], dtype=bool))

    @cached_property
    def cordoned(self) -> BoolArray:
        """Clusters that take no new replicas: `spec.cordon`, or unreachable."""
        cordon = np.array([c.cordon for c in self.clusters], dtype=bool)
        return frozen(cordon | self.unreachable)

    @cached_property
    def unreachable(self) -> BoolArray:
        """Clusters whose API could not be listed (`Observation.unreachable_since`); one
        without a kubeconfig, or suspended (`spec.suspend`), never is."""
        return frozen(~np.isnan(self.unreachable_since))

    @cached_property
    def unreachable_since(self) -> FloatArray:
        """Seconds since the epoch each cluster became unreachable; NaN when reachable."""
        since = np.full(self.size, np.nan)
        for i, cluster in enumerate(self.clusters):
            seen = self.observations.get(cluster.name)
            if seen is None or not seen.unreachable_since or cluster.suspend:
                continue
            if cluster.reachable_by_dro:
                since[i] = durations.epoch(seen.unreachable_since)
        return frozen(since)

    def settled(self, key: ResourceKey, clusters: Iterable[str]) -> bool:
        """Whether this workload's copies on `clusters` are up, so that the old copies of a
        move may retire: each one is Healthy in a fresh observation of its cluster, or the
        cluster is not observed this pass (no kubeconfig, or an offline pass). A stale
        observation (unreachable or suspended) proves nothing, so the old copies stay."""
        for name in clusters:
            seen = self.observations.get(name)
            if seen is None:
                continue
            if seen.stale or seen.health.get(key, ("", ""))[0] != HEALTHY:
                return False
        return True

    def stuck(self, key: ResourceKey) -> list[tuple[int, int]]:
        """(row, pods) where this workload's pods have pended for `unschedulable_after`."""
        return self._stuck.get(key, [])

    @cached_property
    def _stuck(self) -> Mapping[ResourceKey, list[tuple[int, int]]]:
        index: dict[ResourceKey, list[tuple[int, int]]] = {}
        for row, cluster in enumerate(self.clusters):
            seen = self.observations.get(cluster.name)
            for key, (pods, since) in (seen.pending if seen is not None else {}).items():
                if pods > 0 and clock.elapsed(
                    self.now, durations.epoch(since), self.unschedulable_after
                ):
                    index.setdefault(key, []).append((row, pods))
        return index

    @cached_property
    def failed(self) -> BoolArray:
        """Clusters unreachable for at least `failover_after` seconds at `now`: failover moves
        the replicas of the policies that allow it off them."""
        down = np.where(self.unreachable, self.now - np.nan_to_num(self.unreachable_since), -1.0)
        failed = self.unreachable & (down >= self.failover_after)
        waiting = self.unreachable & ~failed
        if waiting.any():  # they fail over once `failover_after` has passed (`clock`)
            clock.note(float(np.min(self.unreachable_since[waiting])) + self.failover_after)
        return frozen(failed)

    def affinity_mask(self, affinity: ClusterAffinity) -> BoolArray:
        """Clusters an affinity term selects: every non-empty part ANDed, `exclude` wins."""
        mask = np.ones(self.size, dtype=bool)
        if affinity.names is not None:
            mask &= np.isin(self.names, np.array(affinity.names, dtype=str))
        if affinity.label_selector is not None:
            selector = affinity.label_selector
            for key, value in selector.match_labels.items():
                mask &= self.label(key) == value
            for requirement in selector.match_expressions:
                column = self.label(requirement.key)
                present = column != None  # noqa: E711 - elementwise comparison with None
                inside = np.isin(column, np.array(requirement.values, dtype=object))
                mask &= {
                    "Exists": present,
                    "DoesNotExist": ~present,
                    "In": present & inside,
                    "NotIn": ~(present & inside),
                }[requirement.operator]
        for field_requirement in affinity.field_selector:
            inside = self._field_matches(field_requirement.key, field_requirement.values)
            mask &= inside if field_requirement.operator == "In" else ~inside
        if affinity.exclude:
            mask &= ~np.isin(self.names, np.array(affinity.exclude, dtype=str))
        return mask

    def _field_matches(self, key: str, values: Sequence[str]) -> BoolArray:
        """Karmada's fieldSelector: provider/region by value; zones overlap with any listed."""
        wanted = set(values)
        if key == "zone":
            return np.array(
                [bool(wanted & ({c.zone} | set(c.zones)) - {""}) for c in self.clusters],
                dtype=bool,
            )
        return np.isin(self.topology(key), np.array(list(values), dtype=object))

    def any_affinity(self, terms: Sequence[ClusterAffinity]) -> BoolArray:
        """Clusters selected by at least one term; every cluster when there are no terms."""
        if not terms:
            return np.ones(self.size, dtype=bool)
        mask = np.zeros(self.size, dtype=bool)
        for term in terms:
            mask |= self.affinity_mask(term)
        return mask
