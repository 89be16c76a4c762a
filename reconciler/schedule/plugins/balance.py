"""Scorer: the resource water level a cluster would have after placement.

Score = 100 × (1 − RWL after placement), where the RWL is the highest used/capacity over the
resources the workload requests (cpu and memory when it requests nothing but pods), and the
placement is the cluster's even share of the replicas (all of them when duplicated). This is
the draft's balance term: it spreads load, and it weighs most when the fleet is loaded.
"""

from __future__ import annotations

import math

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray


@framework.register_scorer("Balance")
def balance(fleet: Fleet, subject: framework.Subject, feasible: BoolArray) -> FloatArray:
    """Prefer clusters that stay least loaded after taking their share."""
    wanted = [j for j in subject.requested.tolist() if fleet.resources[j] != "pods"]
    if not wanted:
        wanted = [fleet.resources.index(r) for r in ("cpu", "memory") if r in fleet.resources]
    if not wanted:
        return np.full(fleet.size, framework.SCORE_MAX)
    replicas = subject.replicas or 0
    share = replicas
    if subject.strategy != "Duplicated":
        share = math.ceil(replicas / max(1, int(feasible.sum())))
    capacity = fleet.capacity_by_resource[wanted]
    after = subject.usage[wanted] + share * subject.demand[wanted][:, np.newaxis]
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(capacity > 0, after / capacity, 1.0).max(axis=0)
    scores: FloatArray = framework.SCORE_MAX * (1.0 - np.clip(level, 0.0, 1.0))
    return scores
