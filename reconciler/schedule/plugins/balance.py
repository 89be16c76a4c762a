"""Scorer: the resource water level a cluster would have after placement.

Score = 100 × (1 − RWL after placement), where the RWL is the highest used/capacity over the
resources the workload requests (cpu and memory when it requests nothing but pods), and the
placement is the cluster's even share of the replicas (all of them when duplicated). A
cluster with no capacity of a counted resource is full (RWL 1). This is the draft's balance
term: it spreads load, and it weighs most when the fleet is loaded.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import math

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, IntArray
from reconciler.schedule.memo import Slot

_COUNTED: Slot[bytes, tuple[IntArray, FloatArray, IntArray]] = Slot(
    "the counted resource rows, their capacity and the clusters without it, per requested set"
)


def _counted(fleet: Fleet, subject: framework.Subject) -> tuple[IntArray, FloatArray, IntArray]:
    """The resource rows the level is taken over, their capacity (inf where it is 0), and the
    clusters with no capacity of one of them; memoised per pass."""
    key = subject.requested.tobytes()
    memo = _COUNTED.of(subject.memos)
    if key not in memo:
        wanted = [j for j in subject.requested.tolist() if fleet.resources[j] != "pods"]
        if not wanted:
            wanted = [fleet.resources.index(r) for r in ("cpu", "memory") if r in fleet.resources]
        rows = np.array(wanted, dtype=np.int64)
        capacity = fleet.capacity_by_resource[rows].copy()
        full = capacity <= 0
        capacity[full] = np.inf
        memo[key] = (rows, capacity, np.flatnonzero(full.any(axis=0)))
    return memo[key]


@framework.register_scorer("Balance")
def balance(fleet: Fleet, subject: framework.Subject, feasible: BoolArray) -> FloatArray:
    """Prefer clusters that stay least loaded after taking their share."""
    rows, capacity, empty = _counted(fleet, subject)
    if not len(rows):
        return np.full(fleet.size, framework.SCORE_MAX)
    replicas = subject.replicas or 0
    share = replicas
    if subject.strategy.divides:
        share = math.ceil(replicas / max(1, int(np.count_nonzero(feasible))))
    after = subject.usage[rows] + share * subject.demand[rows][:, np.newaxis]
    after /= capacity
    level = after.max(axis=0)
    level[empty] = 1.0
    np.maximum(level, 0.0, out=level)
    np.minimum(level, 1.0, out=level)
    scores: FloatArray = framework.SCORE_MAX * (1.0 - level)
    return scores
