"""The capacity-independent half of a pass, for all workloads at once.

Per-replica demand becomes a (workloads × resources) matrix; single-node fit against every
cluster's largest free node becomes one (workloads × clusters) boolean matrix, computed in
chunks so memory stays bounded on large fleets.

Called by `schedule` and `schedule.reuse`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray

CHUNK_CELLS = 4_000_000
"""Workload × cluster × resource cells compared per chunk (about 4 MB of booleans)."""


class Rows:
    """The last pass's demand matrix and node fit, kept for the passes of one `dro run`
    (`reuse.Memo`): a row is made again only where its workload's demand is not the very
    mapping of the last pass, or its fit where its demand or a cluster's largest free node
    changed."""

    def __init__(self) -> None:
        self.demands: list[Mapping[str, float]] = []
        self.resources: tuple[str, ...] = ()
        self.matrix: FloatArray = np.zeros((0, 0))
        self.room: FloatArray = np.zeros((0, 0))
        self.fits: BoolArray = np.zeros((0, 0), dtype=bool)
        self.fitted: FloatArray = np.zeros((0, 0))
        """The demand matrix `fits` was computed for."""
        self.fit_columns: tuple[int, ...] = ()
        """The columns of the resources `fits` compared."""


def demand_matrix(
    fleet: Fleet, demands: Sequence[Mapping[str, float]], rows: Rows | None = None
) -> FloatArray:
    """(workloads × fleet.resources) per-replica requests; 0 where not requested. With `rows`,
    only the rows whose demand is not the last call's very mapping are filled again."""
    column = {r: j for j, r in enumerate(fleet.resources)}
    last = rows.demands if rows is not None else []
    if rows is not None and rows.resources == tuple(fleet.resources) and len(last) == len(demands):
        matrix = rows.matrix.copy()
        redo = [i for i, (now, was) in enumerate(zip(demands, last, strict=True)) if now is not was]
        matrix[redo] = 0.0
    else:
        matrix = np.zeros((len(demands), len(fleet.resources)), dtype=np.float64)
        redo = list(range(len(demands)))
    for i in redo:
        for resource, amount in demands[i].items():
            matrix[i, column[resource]] = amount
    matrix.flags.writeable = False  # kept for the next pass: nobody may change it
    if rows is not None:
        rows.demands, rows.resources, rows.matrix = list(demands), tuple(fleet.resources), matrix
    return matrix


def inverse(demand: FloatArray) -> FloatArray:
    """(workloads × resources) 1 / demand, NaN where a workload requests none of a resource:
    the per-resource scale the capacity estimate multiplies headroom by."""
    result = np.full(demand.shape, np.nan, dtype=np.float64)
    requested = demand > 0
    result[requested] = 1.0 / demand[requested]
    return result


def node_fit(fleet: Fleet, demand: FloatArray, rows: Rows | None = None) -> BoolArray:
    """(workloads × clusters): one replica fits the largest free node on every resource.

    `pods` is a per-cluster count, not a node amount, so it is left to the capacity filter.
    With `rows`, when every cluster's largest free node is as at the last call, only the
    workloads whose demand changed are compared again.
    """
    columns = [j for j, r in enumerate(fleet.resources) if r != "pods"]
    result = np.ones((demand.shape[0], fleet.size), dtype=bool)
    if not columns or not fleet.size:
        return result
    need = demand[:, columns]
    room = fleet.largest_free[:, columns]
    redo = np.arange(demand.shape[0])
    if rows is not None:
        same = rows.fit_columns == tuple(columns) and rows.fitted.shape == demand.shape
        if same and np.array_equal(rows.room, room):
            result = rows.fits.copy()
            redo = np.flatnonzero((rows.fitted != demand).any(axis=1))
        rows.room, rows.fitted, rows.fit_columns = room, demand, tuple(columns)
    step = max(1, CHUNK_CELLS // max(1, fleet.size * len(columns)))
    for start in range(0, len(redo), step):
        at = redo[start : start + step]
        part = need[at]
        result[at] = (
            (part[:, np.newaxis, :] <= room[np.newaxis, :, :]) | (part[:, np.newaxis, :] == 0)
        ).all(axis=2)
    result.flags.writeable = False
    if rows is not None:
        rows.fits = result
    return result
