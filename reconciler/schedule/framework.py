"""The scheduling framework: filters and scorers as batch callables over the whole fleet.

A filter takes the fleet and a `Subject` (one workload at its turn in the pass) and returns a
`Verdict`: a boolean mask over every cluster, and a way to name why a cluster was rejected. A
scorer returns one score in [0, SCORE_MAX] per cluster. Plugins are plain callables in the
`FILTERS` and `SCORERS` registries, so a new one is one file and one line.

Karmada's policies run Karmada's plugins only (`karmada=True`); dro's policies, and Karmada
policies that opt in with `multicluster.io/extensions: enabled`, run them all.

Called by 26 modules, among them `schedule`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reconciler.domain import Placement, Strategy, Verdicts, Workload
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray, frozen, rows_of, some
from reconciler.schedule.keptverdicts import KeptVerdicts
from reconciler.schedule.memo import Memos, Ref, Slot, ref
from reconciler.schedule.turnverdicts import TurnVerdicts

SCORE_MAX = 100.0


@dataclass(slots=True, kw_only=True)
class Subject:
    """One workload as the plugins see it at its turn in the pass. Built once per workload
    and read-only by convention (not frozen: a frozen dataclass costs a `__setattr__` per
    field, and one is built per workload and pass)."""

    workload: Workload
    placement: Placement
    extensions: bool
    """dro's filters and scorers apply (dro's policies, or a Karmada policy that opts in)."""
    movable: bool = False
    """Re-balancing may move its replicas (`facts.Claimed.movable`)."""
    strategy: Strategy
    replicas: int | None
    demand: FloatArray
    """Per-replica requests over `fleet.resources`."""
    requested: IntArray
    """Indices of the resources one replica requests."""
    limit: FloatArray
    """RWL limit per resource; 1 where none applies."""
    target: BoolArray
    """Clusters the placement's targets (or its current affinity term) select."""
    holders: BoolArray
    """Clusters that held this workload after the previous pass."""
    previous: IntArray
    """Replicas per cluster after the previous pass."""
    usage: FloatArray
    """(resources × clusters) usage at this workload's turn: one row per resource."""
    headroom: FloatArray
    """(resources × clusters): capacity within the RWL limit minus usage; negative where the
    cluster is above its limit."""
    allocatable: IntArray
    """Replicas each cluster can still take, within the RWL limit (Karmada's Allocatable)."""
    node_fit: BoolArray
    """One replica fits the cluster's largest free node."""
    memos: Memos = field(default_factory=Memos)
    """The pass's memos, for results that depend only on the placement (`memo.Slot`)."""
    data: DataRow | None = None
    """STCI: what its data would cost on each cluster; None when it uses no data set."""

    @property
    def available(self) -> IntArray:
        """Allocatable plus own previous replicas (Karmada's AvailableReplicas)."""
        result: IntArray = self.allocatable + self.previous
        return result


@dataclass(frozen=True, slots=True, kw_only=True)
class DataRow:
    """One workload's row of the STCI matrices (`stci.DataCosts`), over every cluster."""

    bytes_per_day: FloatArray
    egress_per_day: FloatArray
    transfer_seconds: FloatArray
    latency_ms: FloatArray
    rate: float
    """Its total data rate, bytes per day: how data-heavy it is."""


Label = Callable[[int], tuple[str, str]]
"""For a rejected cluster row: (category for the unschedulable message, detailed reason)."""
Tally = Callable[[IntArray], dict[str, int]]
"""How many of the given rejected rows fall in each category, computed at once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A filter's answer: which clusters pass, and why each other one does not."""

    passed: BoolArray
    label: Label
    tally: Tally | None = None
    """A vectorised count of `label(row)[0]`; filters with per-row categories provide it."""
    reasons: Callable[[IntArray], list[str]] | None = None
    """`label(row)[1]` of each of the given rejected rows, found at once (`details`)."""

    def details(self, rows: IntArray) -> list[str]:
        """The detailed reason of each of the given rejected rows."""
        if self.reasons is not None:
            return self.reasons(rows)
        return [self.label(row)[1] for row in rows.tolist()]

    def counts(self, rows: IntArray) -> dict[str, int]:
        """Rejected rows per category."""
        if self.tally is not None:
            return self.tally(rows)
        counted: dict[str, int] = {}
        for row in rows.tolist():
            category = self.label(row)[0]
            counted[category] = counted.get(category, 0) + 1
        return counted


def verdict(passed: BoolArray, category: str, reason: str | None = None) -> Verdict:
    """A Verdict whose rejected clusters all share one category and reason."""
    text = reason or category
    return Verdict(
        passed=passed,
        label=lambda _row: (category, text),
        tally=lambda rows: {category: len(rows)},
    )


def tally_of(picked: IntArray, name: Callable[[int], str]) -> dict[str, int]:
    """Counts per category when row i falls in category `name(picked[i])`; `name` is called
    once per category present."""
    counted: dict[str, int] = {}
    counts = np.bincount(picked)
    for j in rows_of(counts).tolist():
        category = name(j)
        counted[category] = counted.get(category, 0) + int(counts[j])
    return counted


Filter = Callable[[Fleet, Subject], Verdict]
Scorer = Callable[[Fleet, Subject, BoolArray], FloatArray]


@dataclass(frozen=True, slots=True)
class _Registered:
    plugin: Any
    karmada: bool
    weight: float = 1.0
    order: int = 0
    static: bool = False
    adapt: Callable[[Subject], float] | None = None


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
    name: str,
    weight: float = 1.0,
    *,
    karmada: bool = False,
    static: bool = False,
    adapt: Callable[[Subject], float] | None = None,
) -> Callable[[Scorer], Scorer]:
    """Decorator adding a scorer with its default weight. A `static` scorer depends only on
    the placement and the holders, like a static filter, and is cached the same way. `adapt`
    multiplies the weight per workload (the draft's auto-adjusted weights)."""

    def add(plugin: Scorer) -> Scorer:
        SCORERS[name] = _Registered(plugin, karmada, weight, static=static, adapt=adapt)
        return plugin

    return add


def scorer_names(extensions: bool) -> list[str]:
    """The scorers that run for a policy with (or without) dro's extensions."""
    return [name for name, entry in SCORERS.items() if entry.karmada or extensions]


def default_weights() -> dict[str, float]:
    """Every scorer's default weight."""
    return {name: entry.weight for name, entry in SCORERS.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """Every filter verdict and score for one workload, and the combined result."""

    feasible: BoolArray
    rejected_by: tuple[tuple[str, BoolArray, Verdict], ...]
    """(filter, the clusters it rejected first, its verdict) in filter order."""
    total: FloatArray | None = None
    """The weighted score per cluster (0 where infeasible); None until scored."""
    scores: Mapping[str, FloatArray] = field(default_factory=dict)

    def fit_error(self, clusters: int) -> str:
        """Karmada's FitError style: `0/6 clusters are available: 3 untolerated taint, …`."""
        counted: dict[str, int] = {}
        for _, rows, answer in self.rejected_by:
            for category, count in answer.counts(rows_of(rows)).items():
                counted[category] = counted.get(category, 0) + count
        return fit_error_message(clusters, counted)

    def verdicts(self, fleet: Fleet, keep: IntArray | None = None) -> Verdicts:
        """The clusters' verdicts (who rejected each and why, or its scores). With `keep`
        (the rows the decision holds), only what its file can list is kept, now
        (`keptverdicts`); without, the turn's arrays are kept and every verdict is built when
        read (`turnverdicts`, for `dro explain`)."""
        if keep is None:
            return TurnVerdicts(fleet, self.rejected_by, self.total, self.scores)
        return KeptVerdicts(fleet, self.rejected_by, self.total, self.scores, keep)


def run(
    fleet: Fleet, subject: Subject, weights: Mapping[str, float], *, score: bool = True
) -> Outcome:
    """Apply the filters that apply to `subject`, then (unless `score` is False) its scorers."""
    outcome = apply_filters(fleet, subject)
    return apply_scorers(fleet, subject, outcome, weights) if score else outcome


def _applies(entry: _Registered, subject: Subject) -> bool:
    return entry.karmada or subject.extensions


Rejections = tuple[tuple[str, BoolArray, Verdict], ...]
"""(filter name, the clusters it rejected first, its verdict), in filter order."""

_STATIC_FILTERS: Slot[tuple[Ref, Ref, bool], tuple[BoolArray, Rejections]] = Slot(
    "the static filters' feasible clusters and rejections, per (placement, target, extensions)"
)
_STATIC_SCORES: Slot[tuple[Ref, bool], tuple[dict[str, FloatArray], FloatArray]] = Slot(
    "the static scorers' columns and weighted total, per (placement, extensions)"
)


def _static_filters(fleet: Fleet, subject: Subject) -> tuple[BoolArray, Rejections]:
    """The leading static filters' result, memoised per placement for workloads that hold
    nothing yet (their verdicts depend on nothing else)."""
    fresh = not some(subject.holders)
    key = (ref(subject.placement), ref(subject.target), subject.extensions)
    memo = _STATIC_FILTERS.of(subject.memos)
    if fresh and key in memo:
        feasible, rejected = memo[key]
        return feasible.copy(), rejected
    feasible = np.ones(fleet.size, dtype=bool)
    rejected_by: list[tuple[str, BoolArray, Verdict]] = []
    for name, entry in FILTERS.items():
        if not entry.static:
            break
        if _applies(entry, subject):
            _reject(name, entry.plugin(fleet, subject), feasible, rejected_by)
    if fresh:
        memo[key] = (frozen(feasible.copy()), tuple(rejected_by))
    return feasible, tuple(rejected_by)


def static_filters(fleet: Fleet, subject: Subject) -> BoolArray:
    """The clusters that pass the leading static filters (which alone may drop a cluster the
    subject holds: every later filter keeps holders)."""
    return _static_filters(fleet, subject)[0]


def static_feasible(fleet: Fleet, subject: Subject) -> BoolArray:
    """The clusters that pass the leading static filters, for a subject that holds nothing;
    memoised per placement, and shared: the caller must not change it."""
    key = (ref(subject.placement), ref(subject.target), subject.extensions)
    memo = _STATIC_FILTERS.of(subject.memos)
    if key not in memo:
        _static_filters(fleet, subject)
    return memo[key][0]


def _reject(
    name: str,
    answer: Verdict,
    feasible: BoolArray,
    rejected_by: list[tuple[str, BoolArray, Verdict]],
) -> None:
    newly = feasible & ~answer.passed
    if some(newly):
        rejected_by.append((name, newly, answer))
        feasible &= answer.passed


def apply_filters(fleet: Fleet, subject: Subject) -> Outcome:
    """Every filter that applies, in order; a cluster is charged to the first that rejects it."""
    feasible, leading = _static_filters(fleet, subject)
    rejected_by = list(leading)
    started = False
    for name, entry in FILTERS.items():
        started = started or not entry.static
        if started and _applies(entry, subject) and some(feasible):
            _reject(name, entry.plugin(fleet, subject), feasible, rejected_by)
    return Outcome(feasible=feasible, rejected_by=tuple(rejected_by))


def _static_scores(
    fleet: Fleet, subject: Subject, weights: Mapping[str, float], feasible: BoolArray
) -> tuple[dict[str, FloatArray], FloatArray]:
    fresh = not some(subject.holders)
    key = (ref(subject.placement), subject.extensions)
    memo = _STATIC_SCORES.of(subject.memos)
    if fresh and key in memo:
        return memo[key]
    columns: dict[str, FloatArray] = {}
    total = np.zeros(fleet.size, dtype=np.float64)
    for name, entry in SCORERS.items():
        if entry.static and _applies(entry, subject):
            columns[name] = _bounded(entry.plugin(fleet, subject, feasible))
            total += float(weights.get(name, entry.weight)) * columns[name]
    if fresh:  # shared by the workloads of the placement: read-only (`keptverdicts`)
        columns = {name: frozen(column) for name, column in columns.items()}
        memo[key] = (columns, total)
    return columns, total


def _bounded(column: FloatArray) -> FloatArray:
    result: FloatArray = np.minimum(np.maximum(column, 0.0), SCORE_MAX)
    return result


def apply_scorers(
    fleet: Fleet, subject: Subject, outcome: Outcome, weights: Mapping[str, float]
) -> Outcome:
    """Score the feasible clusters with every scorer that applies, each in [0, SCORE_MAX]."""
    if not some(outcome.feasible):
        return outcome
    static, static_total = _static_scores(fleet, subject, weights, outcome.feasible)
    scores = dict(static)
    total = static_total.copy()
    for name, entry in SCORERS.items():
        if not entry.static and _applies(entry, subject):
            column = _bounded(entry.plugin(fleet, subject, outcome.feasible))
            scores[name] = column
            weight = float(weights.get(name, entry.weight))
            if entry.adapt is not None:
                weight *= entry.adapt(subject)
            total += weight * column
    total[~outcome.feasible] = 0.0
    ordered = {name: scores[name] for name in SCORERS if name in scores}
    return Outcome(
        feasible=outcome.feasible, rejected_by=outcome.rejected_by, total=total, scores=ordered
    )


def fit_error_message(clusters: int, counted: Mapping[str, int]) -> str:
    """`0/N clusters are available: <count> <category>, …`, most frequent first."""
    parts = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    detail = ", ".join(f"{count} {category}" for category, count in parts)
    return (
        f"0/{clusters} clusters are available: {detail}"
        if detail
        else f"0/{clusters} clusters are available"
    )
