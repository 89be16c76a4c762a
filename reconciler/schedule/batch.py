"""The capacity-independent half of a pass, for all workloads at once.

Per-replica demand becomes a (workloads × resources) matrix; single-node fit against every
cluster's largest free node becomes one (workloads × clusters) boolean matrix, computed in
chunks so memory stays bounded on large fleets.

Called by `schedule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray

CHUNK_CELLS = 4_000_000
"""Workload × cluster × resource cells compared per chunk (about 4 MB of booleans)."""


def demand_matrix(fleet: Fleet, demands: Sequence[Mapping[str, float]]) -> FloatArray:
    """(workloads × fleet.resources) per-replica requests; 0 where not requested."""
    column = {r: j for j, r in enumerate(fleet.resources)}
    matrix = np.zeros((len(demands), len(fleet.resources)), dtype=np.float64)
    for i, demand in enumerate(demands):
        for resource, amount in demand.items():
            matrix[i, column[resource]] = amount
    return matrix


def inverse(demand: FloatArray) -> FloatArray:
    """(workloads × resources) 1 / demand, NaN where a workload requests none of a resource:
    the per-resource scale the capacity estimate multiplies headroom by."""
    result = np.full(demand.shape, np.nan, dtype=np.float64)
    requested = demand > 0
    result[requested] = 1.0 / demand[requested]
    return result


def node_fit(fleet: Fleet, demand: FloatArray) -> BoolArray:
    """(workloads × clusters): one replica fits the largest free node on every resource.

    `pods` is a per-cluster count, not a node amount, so it is left to the capacity filter.
    """
    columns = [j for j, r in enumerate(fleet.resources) if r != "pods"]
    result = np.ones((demand.shape[0], fleet.size), dtype=bool)
    if not columns or not fleet.size:
        return result
    need = demand[:, columns]
    room = fleet.largest_free[:, columns]
    step = max(1, CHUNK_CELLS // max(1, fleet.size * len(columns)))
    for start in range(0, demand.shape[0], step):
        part = need[start : start + step]
        result[start : start + step] = (
            (part[:, np.newaxis, :] <= room[np.newaxis, :, :]) | (part[:, np.newaxis, :] == 0)
        ).all(axis=2)
    return result
