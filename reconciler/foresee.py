"""Foresee: the forecasts a pass schedules with, when `spec.prediction.enabled`.

The history is the last pass's (`LastPass.history`, the status files along the output branch
within `prediction.window`), plus one sample for this pass: each cluster's usage now (its
fresh observation, else its declared figures) and `placed`, the requests of the replicas the
last pass's decisions hold there. `predict.forecast` turns it into one forecast per cluster.
Prediction off, or nothing to forecast: no forecasts, and the pass schedules on usage now.

Called by `pipeline`.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler import predict, render
from reconciler.domain import Observation, Spec, clock
from reconciler.domain.forecast import ClusterSample, Forecasts, History
from reconciler.laststate import LastPass


def forecasts(
    spec: Spec, before: LastPass, observations: Mapping[str, Observation] | None, now: float
) -> Forecasts:
    """This pass's forecasts (empty when prediction is off)."""
    settings = spec.config.prediction
    if not settings.enabled:
        return {}
    clock.every_instant(now)  # the window and the grid of the history follow the clock
    past = before.history(now, settings.window) if before.history is not None else {}
    history = with_now(spec, past, before, observations or {}, now)
    return predict.forecast_for(history, now=now, settings=settings)


def with_now(
    spec: Spec,
    history: History,
    before: LastPass,
    observations: Mapping[str, Observation],
    now: float,
) -> History:
    """`history` with this pass's sample of every cluster of `spec` appended (clusters no
    longer in the spec are dropped; a stale observation adds nothing new)."""
    placed = render.placed_requests(spec, before.decisions)
    result: dict[str, tuple[ClusterSample, ...]] = {}
    for cluster in spec.clusters:
        past = tuple(s for s in history.get(cluster.name, ()) if s.at < now)
        seen = observations.get(cluster.name)
        if seen is not None and seen.stale:
            result[cluster.name] = past
            continue
        capacity = seen.capacity if seen is not None else cluster.capacity
        used = seen.used if seen is not None else cluster.allocated
        current = ClusterSample(
            at=now,
            capacity=dict(capacity),
            used=dict(used),
            placed=placed.get(cluster.name, {}),
        )
        result[cluster.name] = (*past, current)
    return result
