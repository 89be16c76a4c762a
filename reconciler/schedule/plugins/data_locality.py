"""STCI plugins: keep a workload near its data (the draft's storage-transmission-compute
integration).

- Filter `DataLatency`: with `placement.maxDataLatencyMs`, clusters farther than that from any
  data set the workload uses are rejected.
- Scorer `DataLocality`: 100 where nothing crosses a domain, less as the bytes per day that
  cross, their egress price and their transfer time grow (each relative to the costliest
  feasible cluster, then averaged). Its weight grows with how data-heavy the workload is
  (`weight_factor`): the draft's auto-adjusted weights.

A workload that uses no data set passes the filter and scores 0 everywhere, so the other
scorers alone decide for it.

Called by `schedule.engine` and `schedule.plugins`.
"""

from __future__ import annotations

import math

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray

HEAVY = float(2**40)
"""1 TiB a day: a workload moving this much weighs locality twice its configured weight."""


@framework.register_filter("DataLatency", order=55)
def data_latency(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject clusters farther from the workload's data than `maxDataLatencyMs`."""
    limit = subject.placement.max_data_latency_ms
    data = subject.data
    if limit is None or data is None:
        return framework.verdict(np.ones(fleet.size, dtype=bool), "")
    latency = data.latency_ms
    passed: BoolArray = latency <= limit
    category = f"data farther than {limit:g} ms"
    return framework.Verdict(
        passed=passed,
        label=lambda row: (category, f"{float(latency[row]):g} ms to its data (limit {limit:g})"),
        tally=lambda rows: {category: len(rows)},
    )


def weight_factor(data: framework.DataRow | None) -> float:
    """How much more than its configured weight `DataLocality` counts for a workload:
    1 + log2(1 + rate / 1 TiB a day), so 1 for no data, 2 at 1 TiB/d, 3 at 3 TiB/d."""
    if data is None:
        return 1.0
    return round(1.0 + math.log2(1.0 + data.rate / HEAVY), 4)


def _adapt(subject: framework.Subject) -> float:
    return weight_factor(subject.data)


@framework.register_scorer("DataLocality", adapt=_adapt)
def data_locality(fleet: Fleet, subject: framework.Subject, feasible: BoolArray) -> FloatArray:
    """100 where the workload's data is local, down to 0 on the costliest feasible cluster."""
    data = subject.data
    if data is None:
        return np.zeros(fleet.size)
    shares = [
        _relative(values, feasible)
        for values in (data.bytes_per_day, data.egress_per_day, data.transfer_seconds)
    ]
    scores: FloatArray = framework.SCORE_MAX * (1.0 - np.mean(shares, axis=0))
    return scores


def _relative(values: FloatArray, feasible: BoolArray) -> FloatArray:
    """`values` over their largest finite value on the feasible clusters (0 when all are 0)."""
    finite = np.where(np.isfinite(values), values, 0.0)
    top = float(finite[feasible].max()) if feasible.any() else 0.0
    if top <= 0.0:
        return np.zeros_like(values)
    shares: FloatArray = np.clip(np.where(np.isfinite(values), values / top, 1.0), 0.0, 1.0)
    return shares
