"""The scheduling framework: filters and scorers as batch callables over the whole fleet.

A filter takes the fleet and a `Subject` (one workload at its turn in the pass) and returns a
`Verdict`: a boolean mask over every cluster, and a way to name why a cluster was rejected. A
scorer returns one score in [0, SCORE_MAX] per cluster. Plugins are plain callables in the
`FILTERS` and `SCORERS` registries, so a new one is one file and one line.

Karmada's policies run Karmada's plugins only (`karmada=True`); dro's policies, and Karmada
policies that opt in with `multicluster.io/extensions: enabled`, run them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from reconciler.domain import ClusterVerdict, Placement, Workload
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray

SCORE_MAX = 100.0


@dataclass(frozen=True, kw_only=True)
class Subject:
    """One workload as the plugins see it at its turn in the pass."""

    workload: Workload
    placement: Placement
    extensions: bool
    """dro's filters and scorers apply (dro's policies, or a Karmada policy that opts in)."""
    strategy: str
    replicas: int | None
    demand: FloatArray
    """Per-replica requests over `fleet.resources`."""
    limit: FloatArray
    """RWL limit per resource; 1 where none applies."""
    target: BoolArray
    """Clusters the placement's targets (or its current affinity term) select."""
    holders: BoolArray
    """Clusters that held this workload after the previous pass."""
    previous: IntArray
    """Replicas per cluster after the previous pass."""
    used: FloatArray
    """(clusters × resources) usage at this workload's turn."""
    allocatable: IntArray
    """Replicas each cluster can still take, within the RWL limit (Karmada's Allocatable)."""
    node_fit: BoolArray
    """One replica fits the cluster's largest free node."""
    cache: dict[Any, Any] = field(default_factory=dict)
    """Per-pass memo for results that depend only on the placement."""

    @property
    def available(self) -> IntArray:
        """Allocatable plus own previous replicas (Karmada's AvailableReplicas)."""
        result: IntArray = self.allocatable + self.previous
        return result

    @cached_property
    def requested(self) -> IntArray:
        """Column indices of the resources one replica requests."""
        return np.flatnonzero(self.demand > 0)


Label = Callable[[int], tuple[str, str]]
"""For a rejected cluster row: (category for the unschedulable message, detailed reason)."""
Categories = Callable[[IntArray], list[str]]
"""The categories of many rejected rows at once, for the unschedulable message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A filter's answer: which clusters pass, and why each other one does not."""

    passed: BoolArray
    label: Label
    categories: Categories | None = None
    """A vectorised form of `label(row)[0]`; filters with per-row categories provide it."""

    def categories_of(self, rows: IntArray) -> list[str]:
        """The category of each rejected row."""
        if self.categories is not None:
            return self.categories(rows)
        return [self.label(row)[0] for row in rows.tolist()]


def verdict(passed: BoolArray, category: str, reason: str | None = None) -> Verdict:
    """A Verdict whose rejected clusters all share one category and reason."""
    text = reason or category
    return Verdict(
        passed=passed,
        label=lambda _row: (category, text),
        categories=lambda rows: [category] * len(rows),
    )


Filter = Callable[[Fleet, Subject], Verdict]
Scorer = Callable[[Fleet, Subject, BoolArray], FloatArray]


@dataclass(frozen=True, slots=True)
class _Registered:
    plugin: Any
    karmada: bool
    weight: float = 1.0
    order: int = 0
    static: bool = False


FILTERS: dict[str, _Registered] = {}
SCORERS: dict[str, _Registered] = {}


def register_filter(
    name: str, *, order: int, karmada: bool = False, static: bool = False
) -> Callable[[Filter], Filter]:
    """Decorator adding a filter at position `order`; `karmada=True` also runs it for
    Karmada's own policies. A rejected cluster is charged to the first filter that rejects it.
    A `static` filter depends only on the placement and the holders; for a workload that holds
    nothing yet its verdict is computed once per placement and pass."""

    def add(plugin: Filter) -> Filter:
        FILTERS[name] = _Registered(plugin, karmada, order=order, static=static)
        ordered = sorted(FILTERS.items(), key=lambda item: item[1].order)
        FILTERS.clear()
        FILTERS.update(ordered)
        return plugin

    return add


def register_scorer(
    name: str, weight: float = 1.0, *, karmada: bool = False
) -> Callable[[Scorer], Scorer]:
    """Decorator adding a scorer with its default weight."""

    def add(plugin: Scorer) -> Scorer:
        SCORERS[name] = _Registered(plugin, karmada, weight)
        return plugin

    return add


def default_weights() -> dict[str, float]:
    """Every scorer's default weight."""
    return {name: entry.weight for name, entry in SCORERS.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """Every filter verdict and score for one workload, and the combined result."""

    feasible: BoolArray
    total: FloatArray
    scores: Mapping[str, FloatArray]
    rejected_by: list[tuple[str, BoolArray, Verdict]]
    """(filter, the clusters it rejected first, its verdict) in filter order."""

    def fit_error(self, clusters: int) -> str:
        """Karmada's FitError style: `0/6 clusters are available: 3 untolerated taint, …`."""
        counted: dict[str, int] = {}
        for _, rows, answer in self.rejected_by:
            for category in answer.categories_of(np.flatnonzero(rows)):
                counted[category] = counted.get(category, 0) + 1
        return fit_error_message(clusters, counted)

    def verdicts(self, fleet: Fleet) -> tuple[ClusterVerdict, ...]:
        """One verdict per cluster, in name order: who rejected it and why, or its scores."""
        rejected: dict[int, tuple[str, str]] = {}
        for name, rows, answer in self.rejected_by:
            for row in np.flatnonzero(rows).tolist():
                rejected[row] = (name, answer.label(row)[1])
        columns = {name: np.round(score, 4).tolist() for name, score in self.scores.items()}
        totals = np.round(self.total, 4).tolist()
        result = []
        for row, cluster in enumerate(fleet.names.tolist()):
            if row in rejected:
                plugin, reason = rejected[row]
                result.append(ClusterVerdict(cluster=cluster, rejected_by=plugin, reason=reason))
                continue
            result.append(
                ClusterVerdict(
                    cluster=cluster,
                    scores={name: column[row] for name, column in columns.items()},
                    total_score=totals[row],
                )
            )
        return tuple(result)


def run(
    fleet: Fleet, subject: Subject, weights: Mapping[str, float], *, score: bool = True
) -> Outcome:
    """Apply the filters that apply to `subject`, then its scorers; keep everything."""
    feasible = np.ones(fleet.size, dtype=bool)
    rejected_by: list[tuple[str, BoolArray, Verdict]] = []
    fresh = not subject.holders.any()
    for name, entry in FILTERS.items():
        if not (entry.karmada or subject.extensions):
            continue
        if entry.static and fresh:
            key = ("verdict", name, id(subject.placement), id(subject.target))
            if key not in subject.cache:
                subject.cache[key] = entry.plugin(fleet, subject)
            answer: Verdict = subject.cache[key]
        else:
            answer = entry.plugin(fleet, subject)
        newly = feasible & ~answer.passed
        if newly.any():
            rejected_by.append((name, newly, answer))
            feasible &= answer.passed
    scores: dict[str, FloatArray] = {}
    total = np.zeros(fleet.size, dtype=np.float64)
    if score:
        for name, entry in SCORERS.items():
            if not (entry.karmada or subject.extensions):
                continue
            column = np.clip(entry.plugin(fleet, subject, feasible), 0.0, SCORE_MAX)
            scores[name] = column
            total += float(weights.get(name, entry.weight)) * column
    total[~feasible] = 0.0
    return Outcome(feasible=feasible, total=total, scores=scores, rejected_by=rejected_by)


def fit_error_message(clusters: int, counted: Mapping[str, int]) -> str:
    """`0/N clusters are available: <count> <category>, …`, most frequent first."""
    parts = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    detail = ", ".join(f"{count} {category}" for category, count in parts)
    return (
        f"0/{clusters} clusters are available: {detail}"
        if detail
        else f"0/{clusters} clusters are available"
    )
