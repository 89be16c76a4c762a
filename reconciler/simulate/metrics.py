"""What `dro simulate` reports per policy, summed over the steps a `Recorder` measured.

- overload events: cluster-steps whose water level is above 0.90 on any resource a workload
  requests (cpu and memory always);
- peak water level: the highest such level (requests over capacity: above 1.0 means more
  was given to a cluster than it has);
- pending replica-steps: desired replicas not placed, plus replicas a cluster was given beyond
  its capacity, summed over the steps;
- moved: replicas added on a cluster beyond what grew the workload's total (a move a scale
  change did not require; counted when decided, so retiring copies count as moved), and their
  share of all desired replica-steps;
- spread: the standard deviation of the water level across clusters, averaged over steps;
- cost: Σ over steps of the placed requests' price per hour × the step's hours;
- cross-domain bytes: the data that crosses domains (STCI), when workloads use data;
- forecast error: the mean absolute percentage error of the background forecast at the
  horizon (`ClusterForecast.at_horizon`, ceil(horizon / step) steps ahead: 2h by default), on
  days 3 and later, beside a seasonal-naive forecast (the same time the day before) on the
  same cluster-steps.

Called by `simulate` and `simulate.chart`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reconciler.simulate import seams
from reconciler.simulate.replay import Recorder
from reconciler.simulate.timeline import ALWAYS, StepInput, Timeline
from reconciler.simulate.trace import FloatArray

OVERLOAD = 0.90
DAY = 86400.0
SKIP_DAYS = 2
"""The forecast error counts from day 3 on: prediction needs two days of history."""


def summary(recorder: Recorder, timeline: Timeline, steps: Sequence[StepInput]) -> dict[str, Any]:
    """One policy's figures (see the module docstring), rounded for stable output."""
    overall = np.nanmax(
        np.where(np.isnan(recorder.levels), -np.inf, recorder.levels), axis=2
    )  # (steps, clusters)
    present = np.isfinite(overall)
    level = np.where(present, overall, np.nan)
    replica_steps = int(sum(int(s.desired[timeline.divides].clip(0).sum()) for s in steps))
    spreads = [float(np.std(row[np.isfinite(row)])) for row in level if np.isfinite(row).any()]
    moved = int(recorder.moved.sum())
    return {
        "policy": recorder.name,
        "overloadEvents": int((np.nan_to_num(level, nan=0.0) > OVERLOAD).sum()),
        "peakWaterLevel": round(float(np.nanmax(level)) if present.any() else 0.0, 4),
        "pendingReplicaSteps": int(recorder.pending.sum()),
        "movedReplicas": moved,
        "movedPercent": round(100.0 * moved / replica_steps, 4) if replica_steps else 0.0,
        "waterLevelSpread": round(float(np.mean(spreads)) if spreads else 0.0, 4),
        "cost": round(float(recorder.cost.sum()), 2),
        "crossDomainBytes": round(float(recorder.cross_domain.sum())),
    }


def timing(recorder: Recorder) -> dict[str, float]:
    """Seconds in the policy's steps, in all and per step (not part of the deterministic
    output: `--timings` shows it)."""
    total = float(recorder.seconds.sum())
    steps = max(1, len(recorder.seconds))
    return {
        "seconds": round(total, 3),
        "secondsPerStep": round(total / steps, 4),
        "cpuSecondsPerStep": round(recorder.cpu_seconds / steps, 4),
    }


def forecast_error(
    forecasts: Mapping[int, Mapping[str, Any]],
    timeline: Timeline,
    steps: Sequence[StepInput],
    horizon: float,
) -> dict[str, float | int | None]:
    """MAPE of the forecasts (when any) and of a seasonal-naive forecast, on the same
    cluster-steps (see the module docstring); None where there is nothing to measure."""
    step = timeline.trace.step
    ahead = max(1, math.ceil(horizon / step - 1e-9))
    season = round(DAY / step)
    background = np.stack([s.background for s in steps])  # (steps, clusters, resources)
    rows = [timeline.resources.index(r) for r in ALWAYS]
    first = max(round(SKIP_DAYS * DAY / step), season)
    model: list[float] = []
    naive: list[float] = []
    actual: list[float] = []
    for t in range(len(steps)):
        target = t + ahead
        if target < first or target >= len(steps) or abs(season * step - DAY) > 1e-6:
            continue
        made = forecasts.get(t) if forecasts else None
        if forecasts and made is None:
            continue
        for c, name in enumerate(timeline.names):
            for j in rows:
                truth = background[target, c, j]
                before = background[target - season, c, j]
                if not (np.isfinite(truth) and truth > 0 and np.isfinite(before)):
                    continue
                if made is not None:
                    found = made.get(name)
                    value = seams.point(found, timeline.resources[j]) if found else None
                    if value is None:
                        continue
                    model.append(value)
                actual.append(truth)
                naive.append(before)
    truth_a: FloatArray = np.array(actual)
    return {
        "aheadSeconds": ahead * step,
        "clusterSteps": len(actual),
        "mape": _mape(np.array(model), truth_a) if model else None,
        "seasonalNaiveMape": _mape(np.array(naive), truth_a) if naive else None,
    }


def _mape(predicted: FloatArray, truth: FloatArray) -> float:
    return round(float(np.mean(np.abs(predicted - truth) / truth)), 4)
