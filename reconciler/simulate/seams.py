"""Where `dro simulate` meets the prediction and pricing stages, each behind one function.

- `prediction_settings(spec, step)`: `dro.yaml`'s `spec.prediction` (horizon, window, band;
  2h, 7d and 0 unless set), its grid step `spec.prediction.step` but never finer than the
  trace's step (one pass, one sample per step: a finer grid would only interpolate).
- `forecast(history, now=…, settings=…)`: one call of `predict.forecast_for`, as a pass makes it.
- `point(forecast, resource)`: the background a `ClusterForecast` expects at the horizon
  (`at_horizon`), for the forecast error.
- `unit_prices(clusters, resources)`: price per base unit-hour of each resource, from
  `schedule.pricing.table` (the product's prices: cpu per core-hour, byte resources per
  GiB-hour); 0 for an unpriced cluster, whose cost, as in `dro plan`, is left out.

Called by `simulate`, `simulate.metrics` and `simulate.replay`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from reconciler import predict
from reconciler.domain import Cluster, ClusterForecast, Forecasts, History, Spec
from reconciler.domain.spec import Prediction
from reconciler.schedule import pricing
from reconciler.simulate.trace import FloatArray


def prediction_settings(spec: Spec, step: float) -> Prediction:
    """`spec.prediction`, its grid step at least `step` (the trace's)."""
    settings = spec.config.prediction
    return dataclasses.replace(settings, step=max(settings.step, step))


def forecast(history: History, *, now: float, settings: Prediction) -> Forecasts:
    """One call of the prediction stage, as a pass makes it (`predict.forecast_for`)."""
    return predict.forecast_for(history, now=now, settings=settings)


def point(found: ClusterForecast, resource: str) -> float | None:
    """The background `found` expects at the horizon (None when it has none for `resource`)."""
    value = found.at_horizon.get(resource)
    return None if value is None else float(value)


def unit_prices(clusters: Sequence[Cluster], resources: Sequence[str]) -> FloatArray:
    """(clusters, resources) price per base unit-hour (`schedule.pricing.table`), 0 where a
    cluster is unpriced."""
    return np.nan_to_num(pricing.table(clusters, resources), nan=0.0).T
