"""Water levels on a pass's usage ledger, as re-balancing reads them: per resource, a
cluster's overall level, the resource that decides a move, and a level shown against a limit.

Called by `schedule.rebalance`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reconciler.schedule import engine, facts
from reconciler.schedule.fleet import FloatArray, rows_of


def level(ledger: engine.Pass) -> FloatArray:
    """(resources × clusters) ledger levels: 0 for unbounded capacity, 1 for none at all."""
    capacity = ledger.fleet.capacity_by_resource
    with np.errstate(divide="ignore", invalid="ignore"):
        result: FloatArray = np.where(capacity > 0, ledger.usage / capacity, 1.0)
    return result


def overall(ledger: engine.Pass) -> FloatArray:
    """Each cluster's water level: the highest of its cpu and memory levels."""
    fleet = ledger.fleet
    rows = [fleet.resources.index(r) for r in ("cpu", "memory") if r in fleet.resources]
    result: FloatArray = level(ledger)[rows].max(axis=0, initial=0.0)
    return result


def decisive(ledger: engine.Pass, demand: FloatArray, source: int) -> int:
    """The requested resource with the highest water level on `source` (cpu when none)."""
    capacity = ledger.fleet.capacity_by_resource[:, source]
    rows = rows_of((demand > 0) & np.isfinite(capacity) & (capacity > 0))
    if not len(rows):
        return ledger.fleet.resources.index("cpu") if "cpu" in ledger.fleet.resources else 0
    levels = ledger.usage[rows, source] / capacity[rows]
    return int(rows[int(np.argmax(levels))])


def above(level: float, limit: float) -> str:
    """`level` with two decimals, or as many more as it takes to read above `limit`."""
    for digits in range(2, 7):
        shown = f"{level:.{digits}f}"
        if float(shown) > limit:
            return shown
    return f"{level:g}"


def calm(ledger: engine.Pass, order: Sequence[facts.Claimed]) -> bool:
    """Whether re-balancing has nothing to do this pass, found without looking at any
    decision: no Fresh request, no cluster filling or draining, and no cluster above the
    water-level limit of any movable workload (`rebalance` moves only off such clusters).
    Prediction makes no pass calm: its calm clusters are weighed per workload."""
    if ledger.fresh_targets or ledger.foresight is not None:
        return False
    fleet = ledger.fleet
    if ledger.filling.any() or fleet.draining.any():
        return False
    placements = {(id(c.placement), c.extensions): c for c in order if c.movable}
    if not placements:
        return True
    now = level(ledger)
    for claimed in placements.values():
        limit = ledger.facts.limit(claimed)
        limited = rows_of(limit < 1.0)
        if len(limited) and bool((now[limited] > limit[limited][:, np.newaxis]).any()):
            return False
    return True
