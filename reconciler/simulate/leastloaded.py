"""`least-loaded`: the baseline without dro, as a plain scheduler with no re-balancing would do.

Replicas stay where they are. A scale-down removes replicas one by one from the holder with
the highest water level; a scale-up adds each replica to the candidate with the lowest water
level that it fits on (every requested resource within capacity), or leaves it pending.
Replicas on a cluster that leaves the fleet, or is drained, are lost and placed again as a
scale-up. Candidates are the clusters a workload's placement selects (its targets, or its
first affinity term), that are not cordoned, drained or suspended, and whose NoSchedule and
NoExecute taints it tolerates. Duplicated workloads run their replicas on every candidate.
Water levels are the highest of cpu and memory, used over capacity (numpy over clusters).

Called by `simulate`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reconciler.domain import Cluster, Placement, Strategy
from reconciler.simulate import policies
from reconciler.simulate.timeline import ALWAYS, StepInput, Timeline
from reconciler.simulate.trace import BoolArray, FloatArray, IntArray


class LeastLoaded:
    """The `least-loaded` policy's state: replicas per (workload, cluster)."""

    name = "least-loaded"

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        spec = timeline.trace.spec
        found = policies.claimed(spec)
        self.placements = [
            p.placement if (p := found.get(w.key)) is not None else spec.config.default_placement
            for w in timeline.workloads
        ]
        self.counts = np.zeros((len(timeline.workloads), len(timeline.names)), dtype=np.int64)
        self.level_rows = [timeline.resources.index(r) for r in ALWAYS]
        self._masks: dict[tuple[int, tuple[str, ...]], BoolArray] = {}

    def step(self, inp: StepInput, placed: FloatArray) -> tuple[IntArray, IntArray]:
        """Apply the step's scale changes; see the module docstring."""
        del placed  # the counts are this policy's own state
        tl = self.timeline
        usable = np.zeros(len(tl.names), dtype=bool)
        usable[inp.present] = [not (c.drain or c.suspend) for c in inp.clusters]
        self.counts[:, ~usable] = 0
        capacity = np.where(np.isfinite(inp.capacity), inp.capacity, np.inf)
        used = np.nan_to_num(inp.background) + self.counts.T.astype(np.float64) @ tl.demand
        candidates = self._candidates(inp)
        want = np.where(tl.divides, inp.desired, 1)
        have = self.counts.sum(axis=1)
        for w in np.flatnonzero(have > want).tolist():  # scale-downs first: they free room
            self._shrink(w, int(have[w] - want[w]), used, capacity)
        for w in np.flatnonzero(want > 0).tolist():
            strategy = self.placements[w].replicas.strategy if tl.divides[w] else None
            if strategy is Strategy.DUPLICATED or strategy is None:
                self._duplicate(w, int(want[w]), candidates[w], used)
            elif self.counts[w].sum() < want[w]:
                self._grow(w, int(want[w] - self.counts[w].sum()), candidates[w], used, capacity)
        return self.counts.copy(), self.counts.copy()

    def _level(self, used: FloatArray, capacity: FloatArray) -> FloatArray:
        rows = self.level_rows
        bounded = capacity[:, rows]
        safe = np.where((bounded > 0) & np.isfinite(bounded), bounded, np.inf)
        result: FloatArray = (used[:, rows] / safe).max(axis=1)
        return result

    def _shrink(self, w: int, count: int, used: FloatArray, capacity: FloatArray) -> None:
        demand = self.timeline.demand[w]
        for _ in range(count):
            holders = np.flatnonzero(self.counts[w] > 0)
            if not len(holders):
                return
            level = self._level(used[holders], capacity[holders])
            c = int(holders[int(np.argmax(level))])
            self.counts[w, c] -= 1
            used[c] -= demand

    def _grow(
        self, w: int, count: int, candidates: BoolArray, used: FloatArray, capacity: FloatArray
    ) -> None:
        demand = self.timeline.demand[w]
        requested = demand > 0
        for _ in range(count):
            fits = candidates & np.all((used + demand <= capacity + 1e-9) | ~requested, axis=1)
            options = np.flatnonzero(fits)
            if not len(options):
                return  # the rest stays pending
            level = self._level(used[options], capacity[options])
            c = int(options[int(np.argmin(level))])
            self.counts[w, c] += 1
            used[c] += demand

    def _duplicate(self, w: int, count: int, candidates: BoolArray, used: FloatArray) -> None:
        change = np.where(candidates, count, 0) - self.counts[w]
        used += change[:, None] * self.timeline.demand[w][None, :]
        self.counts[w] = np.where(candidates, count, 0)

    def _candidates(self, inp: StepInput) -> BoolArray:
        """(workloads, clusters): the clusters each workload's placement may use this step."""
        tl = self.timeline
        names = tuple(c.name for c in inp.clusters)
        result = np.zeros((len(tl.workloads), len(tl.names)), dtype=bool)
        for w, placement in enumerate(self.placements):
            key = (id(placement), names)
            mask = self._masks.get(key)
            if mask is None:
                mask = self._masks[key] = _mask(placement, inp.clusters, inp.present, len(tl.names))
            result[w] = mask
        return result


def _mask(
    placement: Placement, clusters: Sequence[Cluster], present: IntArray, size: int
) -> BoolArray:
    """The clusters `placement` selects, schedulable and with every hard taint tolerated."""
    terms = placement.targets
    first = placement.affinity_terms[0].affinity if placement.affinity_terms else None
    mask = np.zeros(size, dtype=bool)
    for cluster, col in zip(clusters, present.tolist(), strict=True):
        if cluster.cordon or cluster.drain or cluster.suspend:
            continue
        if terms and not any(t.matches(cluster.name, cluster.labels) for t in terms):
            continue
        if first is not None and not first.matches(cluster.name, cluster.labels):
            continue  # the first clusterAffinities term, or location (within the targets)
        if any(
            taint.effect != "PreferNoSchedule"
            and not any(tol.tolerates(taint) for tol in placement.tolerations)
            for taint in cluster.taints
        ):
            continue
        mask[col] = True
    return mask
