"""The fleet as numpy arrays: one row per cluster, sorted by name.

Plugins work on whole columns: a label becomes an array of values over all clusters, taints a
(clusters × distinct taints) matrix, resources (clusters × resources) matrices of capacity,
allocation and largest free node. Arrays are read-only once built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from reconciler.domain import Cluster, ClusterAffinity, Taint

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


ArrayT = TypeVar("ArrayT", bound=np.ndarray[Any, Any])


def frozen(array: ArrayT) -> ArrayT:
    """Mark an array read-only and return it."""
    array.flags.writeable = False
    return array


@dataclass(frozen=True, slots=False, kw_only=True)
class Fleet:
    """Columnar view of the clusters a pass schedules onto."""

    clusters: tuple[Cluster, ...]
    names: npt.NDArray[np.str_] = field(init=False)
    resources: tuple[str, ...] = field(init=False)
    taints: tuple[Taint, ...] = field(init=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.clusters, key=lambda c: c.name))
        object.__setattr__(self, "clusters", ordered)
        object.__setattr__(self, "names", frozen(np.array([c.name for c in ordered], dtype=str)))
        resources = sorted({r for c in ordered for r in (*c.capacity, *c.allocated)})
        object.__setattr__(self, "resources", tuple(resources))
        taints = sorted(
            {t for c in ordered for t in c.taints}, key=lambda t: (t.key, t.value, t.effect)
        )
        object.__setattr__(self, "taints", tuple(taints))

    @property
    def size(self) -> int:
        """Number of clusters."""
        return len(self.clusters)

    @cached_property
    def index(self) -> Mapping[str, int]:
        """Cluster name → row."""
        return {c.name: i for i, c in enumerate(self.clusters)}

    def label(self, key: str) -> npt.NDArray[np.object_]:
        """The value of one label on every cluster (None where unset)."""
        return self._labels.get(key, self._missing)

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

    def _resource_matrix(self, pick: str) -> FloatArray:
        matrix = np.zeros((self.size, len(self.resources)), dtype=np.float64)
        for i, cluster in enumerate(self.clusters):
            values = getattr(cluster, pick)
            for j, resource in enumerate(self.resources):
                matrix[i, j] = values.get(resource, 0.0)
        return frozen(matrix)

    @cached_property
    def capacity(self) -> FloatArray:
        """(clusters × resources) total capacity."""
        return self._resource_matrix("capacity")

    @cached_property
    def allocated(self) -> FloatArray:
        """(clusters × resources) usage, dro's own replicas included."""
        return self._resource_matrix("allocated")

    @cached_property
    def water_level(self) -> FloatArray:
        """(clusters × resources) RWL = allocated / capacity; 1 where capacity is 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(self.capacity > 0, self.allocated / self.capacity, 1.0)
        return frozen(level)

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
            column = self.label(field_requirement.key)
            inside = np.isin(column, np.array(field_requirement.values, dtype=object))
            mask &= inside if field_requirement.operator == "In" else ~inside
        if affinity.exclude:
            mask &= ~np.isin(self.names, np.array(affinity.exclude, dtype=str))
        return mask

    def any_affinity(self, terms: Sequence[ClusterAffinity]) -> BoolArray:
        """Clusters selected by at least one term; every cluster when there are no terms."""
        if not terms:
            return np.ones(self.size, dtype=bool)
        mask = np.zeros(self.size, dtype=bool)
        for term in terms:
            mask |= self.affinity_mask(term)
        return mask
