"""Where `dro simulate` meets the prediction and pricing stages, each behind one function.

- `prediction_settings(spec, step)`: horizon, window and band from `dro.yaml`'s `spec.prediction`
  (2h and 7d unless set); the grid step is `spec.prediction.step`, but never finer than the
  trace's step (one pass, one sample per step: a finer grid would only interpolate).
- `forecast(history, now=…, settings=…)`: one call of `predict.forecast`, as a pass makes it.
- `point(forecast, resource)`: the background a `ClusterForecast` expects at the horizon
  (`at_horizon`), for the forecast error.
- `unit_prices(clusters, resources)`: price per base unit-hour of each resource, from
  `schedule.pricing.table` (the product's prices: cpu per core-hour, byte resources per
  GiB-hour); 0 for an unpriced cluster, whose cost, as in `dro plan`, is left out.

Called by `simulate`, `simulate.metrics` and `simulate.replay`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from reconciler import predict
from reconciler.domain import Cluster, ClusterForecast, Forecasts, History, Spec
from reconciler.schedule import pricing
from reconciler.simulate.trace import FloatArray


class Settings(NamedTuple):
    """What the replay forecasts with, in seconds."""

    horizon: float
    window: float
    step: float
    band: float


def prediction_settings(spec: Spec, step: float) -> Settings:
    """`spec.prediction`'s horizon, window and band, and its grid step but at least `step`
    (the trace's)."""
    settings = spec.config.prediction
    return Settings(settings.horizon, settings.window, max(settings.step, step), settings.band)


def forecast(history: History, *, now: float, settings: Settings) -> Forecasts:
    """One call of the prediction stage (`predict.forecast`)."""
    return predict.forecast(
        history,
        now=now,
        horizon=settings.horizon,
        step=settings.step,
        window=settings.window,
        band=settings.band,
    )


def point(found: ClusterForecast, resource: str) -> float | None:
    """The background `found` expects at the horizon (None when it has none for `resource`)."""
    value = found.at_horizon.get(resource)
    return None if value is None else float(value)


def unit_prices(clusters: Sequence[Cluster], resources: Sequence[str]) -> FloatArray:
    """(clusters, resources) price per base unit-hour (`schedule.pricing.table`), 0 where a
    cluster is unpriced."""
    return np.nan_to_num(pricing.table(clusters, resources), nan=0.0).T
