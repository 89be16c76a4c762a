"""The scheduling framework: filters and scorers as batch callables over the whole fleet.

A filter takes a `Context` and returns a `Verdict`: a boolean mask over every cluster and, for
each rejected cluster, a reason. A scorer returns one score in [0, SCORE_MAX] per cluster.
Plugins are plain callables in the `FILTERS` and `SCORERS` registries, so a new one is one file
and one line. `run` applies them all and keeps every verdict and score for the diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from reconciler.domain import ClusterVerdict, Diagnosis, Placement, Workload
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, frozen

SCORE_MAX = 100.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What a plugin sees: the fleet, the placement that applies, and the workload."""

    fleet: Fleet
    placement: Placement
    workload: Workload
    demand: Mapping[str, float] = field(default_factory=dict)
    """Per-replica requests in base units (cpu cores, memory bytes …)."""
    target_mask: BoolArray | None = None
    """Clusters the placement's targets select; None means every cluster."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A filter's answer: which clusters pass, and why each other one does not."""

    passed: BoolArray
    category: str
    """How a rejection is counted in the unschedulable message ("untolerated taint")."""
    reasons: npt.NDArray[np.object_]
    """Per cluster: the detailed reason for a rejected cluster, None for a passed one."""


Filter = Callable[[Context], Verdict]
Scorer = Callable[[Context], FloatArray]

FILTERS: dict[str, Filter] = {}
SCORERS: dict[str, Scorer] = {}
DEFAULT_WEIGHTS: dict[str, float] = {}


def register_filter(name: str) -> Callable[[Filter], Filter]:
    """Decorator adding a filter plugin to the registry under `name`."""

    def add(plugin: Filter) -> Filter:
        FILTERS[name] = plugin
        return plugin

    return add


def register_scorer(name: str, weight: float = 1.0) -> Callable[[Scorer], Scorer]:
    """Decorator adding a scorer plugin with its default weight."""

    def add(plugin: Scorer) -> Scorer:
        SCORERS[name] = plugin
        DEFAULT_WEIGHTS[name] = weight
        return plugin

    return add


def verdict(passed: BoolArray, category: str, reason: str | npt.NDArray[np.object_]) -> Verdict:
    """Build a Verdict; `reason` is one string for all rejected clusters or one per cluster."""
    reasons = np.full(passed.shape, None, dtype=object)
    if isinstance(reason, str):
        reasons[~passed] = reason
    else:
        reasons[~passed] = reason[~passed]
    return Verdict(passed=frozen(passed.copy()), category=category, reasons=frozen(reasons))


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """Every filter verdict and score for one workload, and the combined result."""

    feasible: BoolArray
    total: FloatArray
    diagnosis: Diagnosis
    fit_error: str | None


def run(context: Context, weights: Mapping[str, float]) -> Outcome:
    """Apply every filter, then every scorer on the survivors; build the diagnosis."""
    fleet = context.fleet
    feasible = np.ones(fleet.size, dtype=bool)
    rejected_by = np.full(fleet.size, None, dtype=object)
    reasons = np.full(fleet.size, None, dtype=object)
    categories = np.full(fleet.size, None, dtype=object)
    for name, plugin in FILTERS.items():
        answer = plugin(context)
        newly = feasible & ~answer.passed
        rejected_by[newly] = name
        reasons[newly] = answer.reasons[newly]
        categories[newly] = answer.category
        feasible &= answer.passed
    scores = {name: np.clip(plugin(context), 0.0, SCORE_MAX) for name, plugin in SCORERS.items()}
    effective = {name: float(weights.get(name, DEFAULT_WEIGHTS[name])) for name in SCORERS}
    total = np.zeros(fleet.size, dtype=np.float64)
    for name, score in scores.items():
        total += effective[name] * score
    verdicts = tuple(
        ClusterVerdict(
            cluster=str(fleet.names[i]),
            rejected_by=rejected_by[i],
            reason=reasons[i],
            scores={name: round(float(score[i]), 4) for name, score in scores.items()},
            total_score=round(float(total[i]), 4) if feasible[i] else 0.0,
        )
        for i in range(fleet.size)
    )
    fit_error = None if feasible.any() else fit_error_message(fleet.size, categories)
    return Outcome(
        feasible=frozen(feasible),
        total=frozen(total),
        diagnosis=Diagnosis(verdicts=verdicts, weights=effective),
        fit_error=fit_error,
    )


def fit_error_message(clusters: int, categories: npt.NDArray[np.object_]) -> str:
    """Karmada's FitError style: `0/6 clusters are available: 3 untolerated taint, …`."""
    counted: dict[str, int] = {}
    for category in categories:
        if category is not None:
            counted[category] = counted.get(category, 0) + 1
    parts = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    detail = ", ".join(f"{count} {category}" for category, count in parts)
    return (
        f"0/{clusters} clusters are available: {detail}"
        if detail
        else f"0/{clusters} clusters are available"
    )
