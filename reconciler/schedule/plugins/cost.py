"""Scorer: what one replica costs per hour on each cluster (the draft's multi-cloud cost model).

Score = 100 × (costliest − cost) / (costliest − cheapest) over the feasible clusters that
declare a price, where cost is one replica's cost per hour (`schedule.pricing`): its requests at
the cluster's `spec.cost` prices, plus its share of the egress price of the data it uses
(STCI). The cheapest feasible cluster scores 100, the costliest 0; when they all cost the same,
all score 100. A cluster without a price scores 0, as the costliest would: an unknown cost is
never taken for a free one. Its weight follows the fleet's load (`facts.effective_weights`):
it counts most when the fleet is cool and not at all when it is hot.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework, pricing
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray


@framework.register_scorer("Cost")
def cost(fleet: Fleet, subject: framework.Subject, feasible: BoolArray) -> FloatArray:
    """Prefer the clusters where a replica costs least per hour."""
    data = subject.data
    each = pricing.per_replica_hour(
        fleet,
        subject.demand,
        egress_per_day=data.egress_per_day if data is not None else None,
        replicas=subject.replicas,
    )
    return relative(each, feasible)


def relative(each: FloatArray, feasible: BoolArray) -> FloatArray:
    """100 for the cheapest feasible priced cluster down to 0 for the costliest; 0 where the
    cost is unknown (NaN), 100 for every priced cluster when they all cost the same."""
    known = ~np.isnan(each)
    considered = known & feasible
    if not considered.any():
        return np.zeros(each.shape[0])
    low = float(each[considered].min())
    high = float(each[considered].max())
    scores: FloatArray = np.zeros(each.shape[0])
    if high <= low:
        scores[known] = framework.SCORE_MAX
        return scores
    spread = (high - np.where(known, each, high)) / (high - low)
    scores = framework.SCORE_MAX * np.clip(spread, 0.0, 1.0)
    return scores
