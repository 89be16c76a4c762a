"""The trace, step by step: what every policy sees alike at each step.

`Timeline` applies the trace's events and series in order and yields one `StepInput` per step:
the clusters present (events applied; `allocated` = the step's background usage, the load dro
does not place), the workloads with the step's desired replicas (in `Workload.replicas` and
the manifest's `spec.replicas`, so demand and division agree), and the fleet as arrays over
every cluster the trace ever holds (`names`, NaN where a cluster is absent). What a policy
placed is added to `allocated` by the replay, per policy.

Called by `simulate`, `simulate.leastloaded`, `simulate.metrics` and `simulate.replay`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from reconciler.domain import Cluster, ResourceKey, Workload
from reconciler.kube import demand
from reconciler.simulate.trace import ClusterChange, Event, FloatArray, IntArray, Trace

ALWAYS = ("cpu", "memory")
"""Resources every water level is measured on, requested or not."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepInput:
    """One step of the trace, the same for every policy."""

    t: int
    now: float
    clusters: tuple[Cluster, ...]
    """The clusters present, sorted by name; `allocated` is the step's background usage."""
    present: IntArray
    """The column (in `Timeline.names`) of each of `clusters`."""
    workloads: tuple[Workload, ...]
    desired: IntArray
    """(workloads,) desired replicas per row of `Timeline.workloads`; −1 for kinds without."""
    background: FloatArray
    """(clusters, resources) background usage over every cluster; NaN where absent."""
    capacity: FloatArray
    """(clusters, resources) capacity over every cluster; NaN where absent or undeclared."""
    joined: frozenset[str]
    """Clusters that joined the fleet at this step (none at step 0)."""
    recovered: frozenset[str]
    """Clusters un-drained, un-cordoned or un-suspended at this step."""


class Timeline:
    """Walks a trace's steps; arrays are over `names` (every cluster) × `resources`."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        spec = trace.spec
        self.names = tuple(c.name for c in spec.clusters)
        self.column = {name: i for i, name in enumerate(self.names)}
        self.workloads = spec.workloads
        self.row = {w.key: i for i, w in enumerate(self.workloads)}
        demands = [demand.per_replica(w) for w in self.workloads]
        requested = {r for d in demands for r in d}
        self.resources = tuple(sorted(set(ALWAYS) | requested))
        self.demand: FloatArray = np.array(
            [[d.get(r, 0.0) for r in self.resources] for d in demands], dtype=np.float64
        ).reshape(len(self.workloads), len(self.resources))
        """(workloads, resources) requests of one replica."""
        self.divides = np.array([w.replicas is not None for w in self.workloads], dtype=bool)

    def steps(self) -> Iterator[StepInput]:
        """Every step in order (each `StepInput` is built as the steps are walked)."""
        trace = self.trace
        declared = {c.name: c for c in trace.spec.clusters}
        state = dict(declared)
        present = {name for name, at in trace.joins.items() if at == 0}
        desired = {w.key: w.replicas for w in self.workloads}
        series = dict(trace.replicas)
        keys = {f"{w.key.namespace}/{w.key.kind}/{w.key.name}": w.key for w in self.workloads}
        events: dict[int, list[Event]] = {}
        for event in trace.events:
            events.setdefault(event.step, []).append(event)
        made: dict[tuple[int, int], Workload] = {}
        workloads = self.workloads
        for t in range(trace.steps):
            joined: set[str] = set()
            recovered: set[str] = set()
            changed = False
            for event in events.get(t, ()):
                for name in event.add:
                    if name not in present:
                        present.add(name)
                        joined.add(name)
                for name in event.remove:
                    present.discard(name)
                for name, change in event.clusters.items():
                    before = state[name]
                    after = _changed(before, change)
                    if any(
                        getattr(before, f) and not getattr(after, f)
                        for f in ("drain", "cordon", "suspend")
                    ):
                        recovered.add(name)
                    state[name] = after
                for key, count in event.replicas.items():
                    changed |= desired[key] != count
                    desired[key] = count
            for text, values in series.items():
                named = keys.get(text)
                if named is not None and values[t] >= 0 and desired[named] != int(values[t]):
                    desired[named] = int(values[t])
                    changed = True
            if changed or t == 0:
                workloads = tuple(
                    self._workload(made, i, w, desired[w.key]) for i, w in enumerate(self.workloads)
                )
            yield self._step(t, state, present, workloads, desired, joined, recovered)

    def _workload(
        self, made: dict[tuple[int, int], Workload], row: int, workload: Workload, count: int | None
    ) -> Workload:
        if count is None or count == workload.replicas:
            return workload
        found = made.get((row, count))
        if found is None:
            manifest = dict(workload.manifest)
            body = manifest.get("spec")
            manifest["spec"] = {**(body if isinstance(body, Mapping) else {}), "replicas": count}
            found = made[(row, count)] = dataclasses.replace(
                workload, manifest=MappingProxyType(manifest), replicas=count
            )
        return found

    def _step(
        self,
        t: int,
        state: Mapping[str, Cluster],
        present: set[str],
        workloads: tuple[Workload, ...],
        desired: Mapping[ResourceKey, int | None],
        joined: set[str],
        recovered: set[str],
    ) -> StepInput:
        trace = self.trace
        size = (len(self.names), len(self.resources))
        background = np.full(size, np.nan)
        capacity = np.full(size, np.nan)
        clusters = []
        columns = []
        for name in sorted(present):
            i = self.column[name]
            cluster = state[name]
            usage = trace.usage.get(name, {})
            allocated = dict(cluster.allocated)
            for j, resource in enumerate(self.resources):
                series = usage.get(resource)
                if series is not None and not np.isnan(series[t]):
                    allocated[resource] = float(series[t])
                background[i, j] = allocated.get(resource, 0.0)
                capacity[i, j] = cluster.capacity.get(resource, np.nan)
            for resource, series in usage.items():
                if resource not in self.resources and not np.isnan(series[t]):
                    allocated[resource] = float(series[t])
            clusters.append(dataclasses.replace(cluster, allocated=MappingProxyType(allocated)))
            columns.append(i)
        counts = [desired[w.key] for w in self.workloads]
        return StepInput(
            t=t,
            now=trace.time(t),
            clusters=tuple(clusters),
            present=np.array(columns, dtype=np.int64),
            workloads=workloads,
            desired=np.array([-1 if c is None else c for c in counts], dtype=np.int64),
            background=background,
            capacity=capacity,
            joined=frozenset(joined if t else ()),
            recovered=frozenset(recovered),
        )


def _changed(cluster: Cluster, change: ClusterChange) -> Cluster:
    """`cluster` with one event's changes applied."""
    fields: dict[str, Any] = {}
    for flag in ("drain", "cordon", "suspend"):
        value = getattr(change, flag)
        if value is not None:
            fields[flag] = value
    cost = change.cost
    if cost:
        fields["cost"] = MappingProxyType({**cluster.cost, **cost})
    capacity = change.capacity
    if capacity:
        fields["capacity"] = MappingProxyType({**cluster.capacity, **capacity})
    return dataclasses.replace(cluster, **fields) if fields else cluster
