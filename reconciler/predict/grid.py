"""Samples on a regular grid: the history as one (clusters × resources × steps) array.

Passes do not run on a clock, so the samples of a cluster arrive at irregular times. The grid
has one point every `step`, the last one at `now`, covering `window`. A grid point takes the
last sample at or before it (last value carried, so a gap repeats the value before it). A
cluster's series starts at the first grid point at or after its first sample; a resource a
cluster did not report in some sample carries its previous value, and before its first report
its first value. Everything is computed at once with `searchsorted` over all clusters.

Called by `predict`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reconciler.domain.forecast import History

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Grid:
    """The background load of every cluster on the grid."""

    clusters: tuple[str, ...]
    """Cluster names, sorted."""
    resources: tuple[str, ...]
    """Resources any cluster reported, sorted."""
    times: FloatArray
    """(steps,) the grid's times, the last one `now`."""
    values: FloatArray
    """(clusters, resources, steps) background load; NaN before a cluster's first sample and
    for a resource the cluster never reported."""
    length: IntArray
    """(clusters,) how many grid points, counted back from `now`, a cluster has samples for."""
    capacity: FloatArray
    """(clusters, resources) capacity in the cluster's latest sample (NaN when not reported)."""


def resample(history: History, *, now: float, step: float, window: float) -> Grid:
    """Put `history` on the grid of `step` ending at `now` over `window` (see the module)."""
    steps = max(1, int(window // step))
    times = now - step * np.arange(steps - 1, -1, -1, dtype=np.float64)
    clusters = tuple(sorted(c for c, samples in history.items() if samples))
    resources = tuple(
        sorted({r for c in clusters for s in history[c] for r in s.used}),
    )
    column = {r: i for i, r in enumerate(resources)}
    c_count, r_count = len(clusters), len(resources)
    capacity = np.full((c_count, r_count), np.nan)
    at: list[FloatArray] = []
    owner: list[IntArray] = []
    tables: list[FloatArray] = []
    for ci, name in enumerate(clusters):
        kept = [s for s in history[name] if s.at <= now]
        if not kept:
            continue
        table = np.full((len(kept), r_count), np.nan)
        for r, ri in column.items():
            used = np.fromiter((s.used.get(r, np.nan) for s in kept), np.float64, len(kept))
            placed = np.fromiter((s.placed.get(r, 0.0) for s in kept), np.float64, len(kept))
            table[:, ri] = np.maximum(0.0, used - placed)  # background; NaN stays NaN
        tables.append(table)
        at.append(np.fromiter((s.at for s in kept), np.float64, len(kept)))
        owner.append(np.full(len(kept), ci, dtype=np.int64))
        for r, v in kept[-1].capacity.items():
            if r in column:
                capacity[ci, column[r]] = v
    values = np.full((c_count, r_count, steps), np.nan)
    length = np.zeros(c_count, dtype=np.int64)
    if not at:
        return Grid(clusters, resources, times, values, length, capacity)
    at_arr = np.concatenate(at)
    owner_arr = np.concatenate(owner)
    table = _filled(np.concatenate(tables), owner_arr)
    origin = min(float(at_arr.min()), float(times[0]))
    span = float(now - origin) + 2.0 * step + 1.0
    keys = owner_arr * span + (at_arr - origin)
    order = np.argsort(keys, kind="stable")
    keys, owner_arr, table = keys[order], owner_arr[order], table[order]
    queries = np.arange(c_count)[:, None] * span + (times[None, :] - origin)
    found = np.searchsorted(keys, queries, side="right") - 1
    valid = (found >= 0) & (owner_arr[np.clip(found, 0, None)] == np.arange(c_count)[:, None])
    picked = table[np.clip(found, 0, None)]  # (clusters, steps, resources)
    picked[~valid] = np.nan
    values = np.ascontiguousarray(picked.transpose(0, 2, 1))
    length = valid.sum(axis=1).astype(np.int64)
    return Grid(clusters, resources, times, values, length, capacity)


def _filled(table: FloatArray, owner: IntArray) -> FloatArray:
    """Fill each cluster's missing resource values: forward within the cluster, then back from
    its first report (rows are in history order per cluster)."""
    out = table.copy()
    rows = np.arange(len(table))
    start = np.zeros(len(table), dtype=np.int64)
    if len(table) > 1:
        begins = np.flatnonzero(np.diff(owner)) + 1
        start[begins] = begins
        start = np.maximum.accumulate(start)
    for r in range(table.shape[1]):
        column = table[:, r]
        seen = np.where(np.isnan(column), -1, rows)
        last = np.maximum.accumulate(seen)
        last = np.where(last >= start, last, -1)
        forward = np.where(last >= 0, column[np.clip(last, 0, None)], np.nan)
        ahead = np.where(np.isnan(column[::-1]), len(table), rows[::-1])
        nxt = np.minimum.accumulate(ahead)[::-1]
        back_ok = nxt < len(table)
        back = np.where(back_ok, column[np.clip(nxt, 0, len(table) - 1)], np.nan)
        same = back_ok & (owner[np.clip(nxt, 0, len(table) - 1)] == owner)
        out[:, r] = np.where(np.isnan(forward) & same, back, forward)
    return out
