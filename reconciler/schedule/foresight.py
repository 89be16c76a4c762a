"""Foresight: the forecasts as the scheduler sees them, built once per pass.

With prediction on (`schedule.place(forecasts=...)`), every cluster with a forecast is
scheduled on its *effective* usage: per resource, the larger of its usage now and its forecast
level (the forecast background peak over the horizon plus its error band) plus dro's current
placement there (the requests of the replicas the previous decisions hold on it, retiring ones
included). That one array is the base of the pass's usage ledger (`engine.Pass`), so the
filters, the balance scorer and re-balancing all read the forecast through it and nowhere
else:

- a cluster forecast to pass its limit within the horizon is above it already: it takes no new
  replicas, and re-balancing moves replicas off it within the budget (pre-allocation), with the
  reason `forecast water level …`;
- destinations are ranked by their level after a move, which is now the forecast one, so a
  replica does not land where the next peak would push it off again;
- a cluster above its limit now whose next-step forecast (plus dro's placement) is under the
  limit, and whose forecast level stays under it, has a passing burst: re-balancing moves
  nothing off it (it still takes no new replicas while above).

Without forecasts (None or empty) nothing here runs and the pass is exactly as before.

Called by `schedule`, `schedule.engine` and `schedule.rebalance`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reconciler.domain import Decision, ResourceKey, durations
from reconciler.domain.forecast import Forecasts
from reconciler.domain.reasons import MoveCode, MoveReason
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray, frozen


@dataclass(frozen=True, slots=True)
class Foresight:
    """The forecast arrays of one pass, (resources × clusters) like the ledger."""

    now: FloatArray
    """Usage now (the fleet's observed or declared usage)."""
    ahead: FloatArray
    """Forecast level + dro's placement: the usage expected at the peak of the horizon (NaN
    where a cluster or resource has no forecast)."""
    next_step: FloatArray
    """Next-step forecast + dro's placement (NaN where none)."""
    peak_at: Mapping[int, float]
    """Cluster row → when its forecast peaks."""

    @property
    def base(self) -> FloatArray:
        """The ledger's starting usage: max(now, ahead)."""
        return np.fmax(self.now, self.ahead)

    def raised(self, resource: int, cluster: int) -> bool:
        """Whether the forecast, not the usage now, sets this cell of the base."""
        ahead = float(self.ahead[resource, cluster])
        return not np.isnan(ahead) and ahead > float(self.now[resource, cluster])

    def passing(self, limit: FloatArray, capacity: FloatArray) -> BoolArray:
        """(clusters,) a passing burst under `limit` (per resource): above the limit now on
        some limited resource, and both the next step and the horizon's level under it on
        every limited resource."""
        limited = limit < 1.0
        bound = np.where(limited[:, np.newaxis], limit[:, np.newaxis] * capacity, np.inf)
        known: BoolArray = np.isnan(self.next_step).sum(axis=0) < self.next_step.shape[0]
        above_now: BoolArray = np.count_nonzero(self.now > bound, axis=0) > 0
        next_under: BoolArray = (
            np.where(np.isnan(self.next_step), self.now, self.next_step) <= bound
        )
        ahead_under: BoolArray = np.where(np.isnan(self.ahead), self.now, self.ahead) <= bound
        return known & above_now & next_under.all(axis=0) & ahead_under.all(axis=0)


def build(
    fleet: Fleet,
    forecasts: Forecasts,
    previous: Mapping[ResourceKey, Decision],
    rows: Mapping[ResourceKey, int],
    demand: FloatArray,
) -> Foresight:
    """The pass's foresight from the forecasts and dro's placement in `previous` (demand is
    the (workloads × resources) matrix, `rows` a workload's row in it)."""
    placed = placement(fleet, previous, rows, demand)
    shape = (len(fleet.resources), fleet.size)
    ahead = np.full(shape, np.nan)
    following = np.full(shape, np.nan)
    peak_at: dict[int, float] = {}
    column = {r: j for j, r in enumerate(fleet.resources)}
    for name, expected in forecasts.items():
        row = fleet.index.get(name)
        if row is None:
            continue
        for resource, level in expected.level.items():
            j = column.get(resource)
            if j is not None:
                ahead[j, row] = level + placed[j, row]
                following[j, row] = expected.next_step.get(resource, level) + placed[j, row]
        if expected.peak_at is not None:
            peak_at[row] = expected.peak_at
    return Foresight(
        now=frozen(fleet.used.T.copy(order="C")),
        ahead=frozen(ahead),
        next_step=frozen(following),
        peak_at=peak_at,
    )


def placement(
    fleet: Fleet,
    previous: Mapping[ResourceKey, Decision],
    rows: Mapping[ResourceKey, int],
    demand: FloatArray,
) -> FloatArray:
    """(resources × clusters) the requests of the replicas dro's previous decisions hold on
    each cluster, retiring copies included (they still run)."""
    workload: list[int] = []
    cluster: list[int] = []
    count: list[int] = []
    index = fleet.index
    for key, decision in previous.items():
        w = rows.get(key)
        if w is None:
            continue
        for placed in (*decision.clusters, *decision.retiring):
            c = index.get(placed.cluster)
            if c is not None and placed.replicas:
                workload.append(w)
                cluster.append(c)
                count.append(placed.replicas)
    result = np.zeros((len(fleet.resources), fleet.size))
    if workload:
        amounts = demand[np.asarray(workload)] * np.asarray(count, dtype=np.float64)[:, None]
        np.add.at(result.T, np.asarray(cluster), amounts)
    return result


def reason(foresight: Foresight | None, resource: int, cluster: int, above: str) -> MoveReason:
    """The reason of a move off a cluster above a limit: `forecast water level …` (with when
    it peaks) where the forecast set its usage, else `water level …`."""
    if foresight is None or not foresight.raised(resource, cluster):
        return MoveReason(MoveCode.WATER_LEVEL, above)
    peak = foresight.peak_at.get(cluster)
    when = f" by {durations.rfc3339(peak)}" if peak is not None else ""
    return MoveReason(MoveCode.FORECAST, f"{above}{when}")


def calm(foresight: Foresight | None, limit: FloatArray, capacity: FloatArray) -> BoolArray:
    """(clusters,) clusters with a passing burst under `limit`: none without forecasts."""
    if foresight is None:
        return np.zeros(capacity.shape[1], dtype=bool)
    return foresight.passing(limit, capacity)
