"""Cluster history and forecasts: the values prediction reads and the scheduler is given.

A `ClusterSample` is what one pass recorded of one cluster (its status file on the output
branch, or one step of a `dro simulate` trace): capacity, usage and `placed`, the requests of
dro's own replicas there. Prediction forecasts the *background*, used − placed, and returns
one `ClusterForecast` per cluster; the scheduler adds its own placement on top.

Amounts are floats in base units (cores, bytes, counts); times are seconds since the epoch.

Called by 16 modules, among them `branch.status`, `cli.render`, `domain`, `foresee`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from reconciler.domain.base import empty

Model = Literal["holt-winters", "holt", "last-value"]
"""The model a forecast came from: additive Holt-Winters with a daily season (two days of
history or more), Holt's linear trend (three samples or more), else the last value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSample:
    """One cluster as one pass saw it."""

    at: float
    capacity: Mapping[str, float] = field(default_factory=empty)
    used: Mapping[str, float] = field(default_factory=empty)
    placed: Mapping[str, float] = field(default_factory=empty)
    """The requests of dro's own replicas on the cluster (empty when not recorded)."""

    @property
    def background(self) -> dict[str, float]:
        """used − placed per resource, never below 0: the load dro does not place."""
        return {r: max(0.0, v - self.placed.get(r, 0.0)) for r, v in self.used.items()}


History = Mapping[str, tuple[ClusterSample, ...]]
"""Cluster name → its samples, oldest first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterForecast:
    """What prediction expects of one cluster's background load over the horizon."""

    cluster: str
    model: Model
    level: Mapping[str, float] = field(default_factory=empty)
    """The forecast level per resource: the peak of the background forecast over the horizon
    plus an error band (`spec.prediction.band` × the recent errors at the horizon; none by
    default), in base units."""
    next_step: Mapping[str, float] = field(default_factory=empty)
    """The background forecast one step ahead (base units): a cluster above its limit now and
    below it here has a passing burst."""
    at_horizon: Mapping[str, float] = field(default_factory=empty)
    """The background forecast at the horizon (base units, no error band): the step
    `ceil(horizon / step)` grid steps ahead, what `dro simulate`'s forecast error measures."""
    peak_at: float | None = None
    """When, within the horizon, the forecast peaks."""
    error: Mapping[str, float] = field(default_factory=empty)
    """The mean absolute percentage error of the forecasts at the horizon over the last day, per
    resource (0.05 = 5 %)."""
    samples: int = 0
    """How many grid samples the model was fitted on."""


Forecasts = Mapping[str, ClusterForecast]
"""Cluster name → its forecast; a cluster without one is scheduled on its current usage."""
