"""Where `dro simulate` meets stages that may or may not be in this build: prediction and
pricing, each behind one function.

- `forecaster()`: `reconciler.predict.forecast(history, *, now, horizon, step, window)`
  when the prediction stage is installed, else None (then `dro` schedules as `dro-reactive`).
- `prediction_settings(spec, step)`: horizon and window from `dro.yaml`'s `spec.prediction`
  when the config carries it, else 2h and 7d; the grid step is the trace's step (one pass,
  one sample per step).
- `point(forecast, resource)` and `ahead(…)`: the background a `ClusterForecast` expects, for
  the forecast error: at the horizon when prediction provides it (`at_horizon`), else one
  step ahead (`next_step`).
- `unit_prices(cluster, resources)`: price per base unit-hour of each resource from
  `Cluster.spec.cost` (cpu per core-hour; byte resources per GiB-hour, as the schema's
  "unit-hour" is written for memory), 0 where no price is declared.

Called by `simulate`, `simulate.metrics` and `simulate.replay`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from reconciler.domain import Cluster, ClusterForecast, Forecasts, History, Spec
from reconciler.kube import quantity
from reconciler.simulate.trace import FloatArray, duration

GIB = float(2**30)
HORIZON = 7200.0
WINDOW = 7 * 86400.0

Forecaster = Callable[..., Forecasts]
"""`forecast(history, *, now, horizon, step, window) -> Forecasts`."""


def forecaster() -> Forecaster | None:
    """The prediction stage's `forecast`, or None when this build has none."""
    try:
        module = importlib.import_module("reconciler.predict")
    except ImportError:
        return None
    found = getattr(module, "forecast", None)
    return cast("Forecaster", found) if callable(found) else None


def prediction_settings(spec: Spec, step: float) -> tuple[float, float, float]:
    """(horizon, window, grid step) in seconds: `spec.prediction`'s horizon and window when
    set, else 2h and 7d; the grid is the trace's `step`."""
    settings: Any = getattr(spec.config, "prediction", None)
    horizon = _seconds(getattr(settings, "horizon", None), HORIZON)
    window = _seconds(getattr(settings, "window", None), WINDOW)
    return horizon, window, step


def _seconds(value: object, default: float) -> float:
    """A setting in seconds, written as a number or a duration (`2h`); `default` when unset."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    if isinstance(value, str):
        return duration(value)
    return default


def forecast(
    predict: Forecaster, history: History, *, now: float, horizon: float, step: float, window: float
) -> Forecasts:
    """One call of the prediction stage."""
    return predict(history, now=now, horizon=horizon, step=step, window=window)


def point(found: ClusterForecast, resource: str) -> float | None:
    """The background `found` expects `ahead(found, …)` seconds on (None when it has none)."""
    expected = getattr(found, "at_horizon", None) or found.next_step
    value = expected.get(resource)
    return None if value is None else float(value)


def ahead(found: ClusterForecast, horizon: float, step: float) -> float:
    """How far ahead `point` looks: the horizon when the forecast carries its value there
    (`at_horizon`), else one step (`next_step`)."""
    return horizon if getattr(found, "at_horizon", None) else step


def unit_prices(clusters: Sequence[Cluster], resources: Sequence[str]) -> FloatArray:
    """(clusters, resources) price per base unit-hour (cores; bytes priced per GiB)."""
    prices = np.zeros((len(clusters), len(resources)))
    for i, cluster in enumerate(clusters):
        for j, resource in enumerate(resources):
            price = cluster.cost.get(resource, 0.0)
            prices[i, j] = price / GIB if quantity.in_bytes(resource) else price
    return prices
