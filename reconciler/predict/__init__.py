"""PREDICT: each cluster's background load over the horizon, from its status history.

`forecast` puts the history on a regular grid (`grid.resample`), picks a model per cluster by
how much history it has, fits it to every series at once (`model`) and returns one
`ClusterForecast` per cluster:

- additive Holt-Winters with a daily season (season = 1 day / step) from two days of grid
  points on, Holt's linear trend from three, else the last value; each fitted by the error of
  its forecasts at the horizon (ceil(horizon / step) steps ahead, the lead it is used at);
- `next_step`: the forecast one step ahead; `at_horizon`: at the horizon;
- `level`: the peak of the forecast over the horizon plus an error band, `band` × the root
  mean square of the errors at the horizon over the last day (`spec.prediction.band`, 0 by
  default: the water-level limit is the margin; 1.65 makes it a one-sided 95 % bound for
  normal errors), never below 0; `peak_at` is when the resource nearest its capacity peaks
  (None when its forecast does not rise after the next step);
- `error`: the mean absolute percentage error of the forecasts at the horizon over the last
  day.

Clusters are grouped by history length, so each group is one rectangular array; numpy works
over series × parameter candidates and Python only loops over time. A pure stage: values in,
values out, the same bytes for the same history.

Called by `foresee` and `simulate.seams`.
"""

from __future__ import annotations

import math

import numpy as np

from reconciler.domain.forecast import ClusterForecast, Forecasts, History, Model
from reconciler.domain.spec import Prediction
from reconciler.predict import model
from reconciler.predict.grid import FloatArray, Grid, resample

DAY = 86_400.0
TINY = 1e-9


def season_length(step: float) -> int:
    """Grid points in one day (at least 2)."""
    return max(2, round(DAY / step))


def model_for(points: int, step: float) -> Model:
    """The model a cluster with `points` grid points of history gets."""
    if points >= 2 * season_length(step):
        return "holt-winters"
    if points >= 3:
        return "holt"
    return "last-value"


def forecast(
    history: History,
    *,
    now: float,
    horizon: float,
    step: float,
    window: float,
    band: float = 0.0,
) -> Forecasts:
    """Forecast every cluster in `history` (see the module); one without samples has none."""
    grid = resample(history, now=now, step=step, window=window)
    return forecast_grid(grid, now=now, horizon=horizon, step=step, band=band)


def forecast_for(history: History, *, now: float, settings: Prediction) -> Forecasts:
    """`forecast` with the horizon, step, window and band of `spec.prediction`."""
    return forecast(
        history,
        now=now,
        horizon=settings.horizon,
        step=settings.step,
        window=settings.window,
        band=settings.band,
    )


def forecast_grid(
    grid: Grid, *, now: float, horizon: float, step: float, band: float = 0.0
) -> Forecasts:
    """`forecast` from a grid already built (the benchmark times this part alone)."""
    m = season_length(step)
    ahead = max(1, math.ceil(horizon / step - 1e-9))
    result: dict[str, ClusterForecast] = {}
    for points in sorted({int(n) for n in grid.length if n > 0}):
        members = np.flatnonzero(grid.length == points)
        block = grid.values[members][:, :, -points:]  # (g, resources, points)
        reported = ~np.isnan(block[:, :, -1])
        y = np.where(np.isnan(block), 0.0, block).reshape(-1, points)
        chosen = model_for(points, step)
        if chosen == "holt-winters":
            fitted = model.fit(y, m, seasonal=True, ahead=ahead)
        elif chosen == "holt":
            fitted = model.fit(y, m, seasonal=False, ahead=ahead)
        else:
            fitted = model.last_value(y, ahead)
        path = fitted.forecast(ahead).reshape(len(members), -1, ahead)
        recent = min(m, max(1, points - 1))
        errors = fitted.errors[:, -recent:].reshape(len(members), -1, recent)
        actual = y[:, -recent:].reshape(len(members), -1, recent)
        margin = band * np.sqrt((errors**2).mean(axis=2))
        if points < 2:
            margin = np.zeros_like(margin)
        level = np.maximum(0.0, path.max(axis=2) + margin)
        nxt = np.maximum(0.0, path[:, :, 0])
        far = np.maximum(0.0, path[:, :, -1])
        mape = _mape(errors, actual) if points >= 2 else np.zeros_like(margin)
        peaks = path.argmax(axis=2)
        top = path.max(axis=2)
        rising = top > path[:, :, 0] + 1e-9 * np.maximum(1.0, np.abs(top))
        pressure = _pressure(path.max(axis=2), grid.capacity[members], y, len(members))
        for i, ci in enumerate(members):
            names = [r for ri, r in enumerate(grid.resources) if reported[i, ri]]
            index = [ri for ri, r in enumerate(grid.resources) if reported[i, ri]]
            hottest = max(index, key=lambda ri: (pressure[i, ri], -ri)) if index else 0
            result[grid.clusters[ci]] = ClusterForecast(
                cluster=grid.clusters[ci],
                model=chosen,
                level={r: float(level[i, ri]) for r, ri in zip(names, index, strict=True)},
                next_step={r: float(nxt[i, ri]) for r, ri in zip(names, index, strict=True)},
                at_horizon={r: float(far[i, ri]) for r, ri in zip(names, index, strict=True)},
                peak_at=now + step * (int(peaks[i, hottest]) + 1)
                if index and rising[i, hottest]
                else None,
                error={r: float(mape[i, ri]) for r, ri in zip(names, index, strict=True)},
                samples=points,
            )
    return {name: result[name] for name in sorted(result)}


def _mape(errors: FloatArray, actual: FloatArray) -> FloatArray:
    """Mean |e| / |y| over the points where y is not 0 (0 when there is none)."""
    scale = np.abs(actual)
    counted = scale > TINY
    ratio = np.where(counted, np.abs(errors) / np.where(counted, scale, 1.0), 0.0)
    count = counted.sum(axis=2)
    return np.where(count > 0, ratio.sum(axis=2) / np.maximum(count, 1), 0.0)


def _pressure(peak: FloatArray, capacity: FloatArray, y: FloatArray, groups: int) -> FloatArray:
    """How near each resource's peak comes to its capacity, or, without a capacity, how far
    it rises above its last value: the resource whose peak time is reported."""
    last = np.abs(y[:, -1]).reshape(groups, -1)
    known = np.isfinite(capacity) & (capacity > TINY)
    by_capacity = np.where(known, peak / np.where(known, capacity, 1.0), -np.inf)
    by_rise = peak / np.maximum(last, TINY) - 1.0 - 1e6
    return np.where(known, by_capacity, by_rise)
