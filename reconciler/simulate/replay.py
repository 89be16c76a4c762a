"""The replay: one policy through every step of a trace, in memory, with dro's own scheduler.

A `Scheduled` policy calls `schedule.place_and_project` at each step with the step's spec
(`dataclasses.replace` of the validated one: the step's clusters and workloads, the policy's
claims), the decisions of its previous step, the step's time as `now`, and the Filling
clusters as a pass would have them: still filling after the last step (`still_filling`),
joined this step, or recovered (un-drained, un-cordoned, un-suspended). Each cluster's
`allocated` is what it would report: the trace's background plus the requests of what the
policy ran there the step before (retiring copies included), at most its capacity.

Every policy hands back, per step, two (workloads × clusters) count matrices: the target
(`Decision.clusters`) and what runs (`Decision.rendered()`, retiring copies included).
`Recorder` turns them into the step's measurements (`simulate.metrics` sums them up).

Called by `simulate` and `simulate.metrics`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from reconciler import schedule
from reconciler.domain import ClusterSample, Decision, ResourceKey, Spec
from reconciler.schedule import stci
from reconciler.schedule.fleet import Fleet
from reconciler.simulate import policies, seams
from reconciler.simulate.timeline import StepInput, Timeline
from reconciler.simulate.trace import FloatArray, IntArray

DAY = 86400.0


class Policy(Protocol):
    """One policy's replay: a step's input → (target, running) count matrices."""

    name: str

    def step(self, inp: StepInput, placed: FloatArray) -> tuple[IntArray, IntArray]:
        """The target and the running replicas per (workload, cluster) after this step;
        `placed` is what the policy ran per (cluster, resource) after the previous step."""


class Scheduled:
    """A policy that dro's scheduler places: `dro`, `dro-reactive`, `dro-nocost`, Karmada's."""

    def __init__(self, name: str, timeline: Timeline, *, predict: bool = False) -> None:
        self.name = name
        self.timeline = timeline
        spec = timeline.trace.spec
        self.spec = policies.without_cost(spec) if name == "dro-nocost" else spec
        self.karmada = (
            policies.Karmada(spec, static=name == "karmada-static")
            if name.startswith("karmada")
            else None
        )
        self.predict = predict
        self.settings = seams.prediction_settings(spec, timeline.trace.step)
        self.previous: dict[ResourceKey, Decision] | None = None
        self.still: set[str] = set()
        self.history: dict[str, list[ClusterSample]] = {}
        self.forecasts: dict[int, Mapping[str, Any]] = {}
        """Step → the forecasts made at it (for the forecast error)."""

    def step(self, inp: StepInput, placed: FloatArray) -> tuple[IntArray, IntArray]:
        """Place the step's spec with the previous decisions; see the module docstring."""
        tl = self.timeline
        clusters = []
        for cluster, col in zip(inp.clusters, inp.present.tolist(), strict=True):
            allocated = dict(cluster.allocated)
            for j, resource in enumerate(tl.resources):
                cap = cluster.capacity.get(resource)
                if cap is None and resource not in allocated:
                    continue  # undeclared: unbounded, as the scheduler reads it
                used = allocated.get(resource, 0.0) + float(placed[col, j])
                allocated[resource] = min(used, cap) if cap is not None else used
            clusters.append(dataclasses.replace(cluster, allocated=MappingProxyType(allocated)))
        spec: Spec = dataclasses.replace(
            self.spec, clusters=tuple(clusters), workloads=inp.workloads
        )
        if self.karmada is not None:
            spec = dataclasses.replace(spec, claims=self.karmada.claims_for(clusters))
        filling = (self.still | inp.joined | inp.recovered) & {c.name for c in clusters}
        extra: dict[str, Any] = {}
        if self.predict:
            self._remember(inp, spec, placed)
            found = seams.forecast(
                {name: tuple(samples) for name, samples in sorted(self.history.items())},
                now=inp.now,
                settings=self.settings,
            )
            self.forecasts[inp.t] = found
            if found:
                extra["forecasts"] = found
        placement = schedule.place_and_project(
            spec,
            self.previous,
            None,
            diagnose=False,
            now=inp.now,
            filling=filling,
            **extra,
        )
        decisions = placement.decisions
        self.previous = {d.key: d for d in decisions}
        self.still = schedule.still_filling(decisions, filling, inp.now)
        return self._counts(decisions)

    def _remember(self, inp: StepInput, spec: Spec, placed: FloatArray) -> None:
        """Add this step's observation of each present cluster to the history (within the
        window): capacity, used (what `allocated` reports) and dro's own placed requests."""
        tl = self.timeline
        for cluster, col in zip(spec.clusters, inp.present.tolist(), strict=True):
            samples = self.history.setdefault(cluster.name, [])
            samples.append(
                ClusterSample(
                    at=inp.now,
                    capacity=cluster.capacity,
                    used=cluster.allocated,
                    placed={r: float(placed[col, j]) for j, r in enumerate(tl.resources)},
                )
            )
            while samples and samples[0].at < inp.now - self.settings.window:
                samples.pop(0)

    def _counts(self, decisions: tuple[Decision, ...]) -> tuple[IntArray, IntArray]:
        tl = self.timeline
        shape = (len(tl.workloads), len(tl.names))
        target = np.zeros(shape, dtype=np.int64)
        running = np.zeros(shape, dtype=np.int64)
        rows, cols, counts, rrows, rcols, rcounts = [], [], [], [], [], []
        for decision in decisions:
            row = tl.row[decision.key]
            for placed in decision.clusters:
                rows.append(row)
                cols.append(tl.column[placed.cluster])
                counts.append(placed.replicas or 0)
            for placed in decision.rendered() if decision.retiring else decision.clusters:
                rrows.append(row)
                rcols.append(tl.column[placed.cluster])
                rcounts.append(placed.replicas or 0)
        np.add.at(target, (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)), counts)
        np.add.at(
            running, (np.array(rrows, dtype=np.int64), np.array(rcols, dtype=np.int64)), rcounts
        )
        return target, running


@dataclass
class Recorder:
    """One policy's measurements, step by step (arrays over steps)."""

    name: str
    timeline: Timeline
    levels: FloatArray = field(init=False)
    """(steps, clusters, resources) water level after the step; NaN where absent."""
    pending: IntArray = field(init=False)
    moved: IntArray = field(init=False)
    cost: FloatArray = field(init=False)
    cross_domain: FloatArray = field(init=False)
    seconds: FloatArray = field(init=False)
    placed: FloatArray = field(init=False)
    """(clusters, resources) what ran after the last step recorded."""
    cpu_seconds: float = 0.0
    """The processor time the policy's steps took (wall time varies with the machine's load)."""
    _target: IntArray | None = None
    _data: dict[tuple[str, ...], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tl = self.timeline
        steps = tl.trace.steps
        self.levels = np.full((steps, len(tl.names), len(tl.resources)), np.nan)
        self.pending = np.zeros(steps, dtype=np.int64)
        self.moved = np.zeros(steps, dtype=np.int64)
        self.cost = np.zeros(steps)
        self.cross_domain = np.zeros(steps)
        self.seconds = np.zeros(steps)
        self.placed = np.zeros((len(tl.names), len(tl.resources)))

    def record(self, inp: StepInput, target: IntArray, running: IntArray, seconds: float) -> None:
        """Measure one step from its count matrices."""
        tl = self.timeline
        t = inp.t
        rows = tl.divides
        placed = running.T.astype(np.float64) @ tl.demand  # (clusters, resources)
        used = np.nan_to_num(inp.background) + placed
        bounded = np.isfinite(inp.capacity) & (inp.capacity > 0)
        self.levels[t] = np.where(bounded, used / np.where(bounded, inp.capacity, 1.0), np.nan)
        short = np.maximum(inp.desired - target.sum(axis=1), 0)
        self.pending[t] = int(short[rows].sum()) + _stranded(used, inp.capacity, placed, running)
        if self._target is not None:
            added = np.maximum(target - self._target, 0).sum(axis=1)
            grown = np.maximum(target.sum(axis=1) - self._target.sum(axis=1), 0)
            self.moved[t] = int((added - grown)[rows].sum())
        self._target = target
        prices = seams.unit_prices(inp.clusters, tl.resources)
        hours = tl.trace.step / 3600.0
        self.cost[t] = float((placed[inp.present] * prices).sum() * hours)
        self.cross_domain[t] = self._bytes(inp, target) * tl.trace.step / DAY
        self.seconds[t] = seconds
        self.placed = placed

    def _bytes(self, inp: StepInput, target: IntArray) -> float:
        """Cross-domain bytes per day of the step's placement: each workload's data traffic
        split over its clusters in proportion to their replicas (`bench/stci.py`'s model)."""
        tl = self.timeline
        spec = tl.trace.spec
        if not (spec.data_access or any(p.placement.data for p in spec.placement_policies)):
            return 0.0
        names = tuple(c.name for c in inp.clusters)
        costs = self._data.get(names)
        if costs is None:
            claimed = schedule.claimed_workloads(dataclasses.replace(spec, clusters=inp.clusters))
            by_key = {c.workload.key: schedule.data_access(spec, c) for c in claimed}
            accesses = [by_key[w.key] for w in tl.workloads]
            fleet = Fleet(clusters=inp.clusters)
            costs = self._data[names] = stci.data_costs(
                fleet, spec.links, spec.data_sets, accesses
            ).bytes_per_day
        share = target[:, inp.present].astype(np.float64)
        total = share.sum(axis=1, keepdims=True)
        share = np.divide(share, total, out=np.zeros_like(share), where=total > 0)
        return float((share * costs).sum())


def _stranded(used: FloatArray, capacity: FloatArray, placed: FloatArray, running: IntArray) -> int:
    """Replicas a cluster was given beyond its capacity: they cannot run there (pending pods),
    at the average request of the replicas it holds, on its most over-committed resource."""
    over = np.nan_to_num(np.maximum(used - capacity, 0.0))
    replicas = running.sum(axis=0).astype(np.float64)[:, None]
    per = np.divide(placed, replicas, out=np.ones_like(placed), where=replicas > 0)
    per = np.where(per > 0, per, 1.0)
    stuck = np.ceil(np.minimum(over / per, replicas) - 1e-9).max(axis=1, initial=0.0)
    return int(np.maximum(stuck, 0).sum())


def play(policy: Policy, timeline: Timeline, steps: list[StepInput]) -> Recorder:
    """Replay every step through `policy` and measure it."""
    recorder = Recorder(policy.name, timeline)
    for inp in steps:
        started, cpu = time.perf_counter(), time.process_time()
        target, running = policy.step(inp, recorder.placed)
        recorder.cpu_seconds += time.process_time() - cpu
        recorder.record(inp, target, running, time.perf_counter() - started)
    return recorder
