"""Scorer: the placement's soft preference terms (`placement.preferred`).

Score = 100 × (sum of the weights of the terms a cluster matches) / (sum of all weights);
0 everywhere when the placement states no preference.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import BoolArray, Fleet, FloatArray
from reconciler.schedule.memo import Ref, Slot, ref

_SCORES: Slot[Ref, FloatArray] = Slot("the preference scores, per placement")


@framework.register_scorer("Preference", static=True)
def preference(fleet: Fleet, subject: framework.Subject, _feasible: BoolArray) -> FloatArray:
    """Prefer the clusters the policy prefers, by the weights of the matching terms."""
    key = ref(subject.placement)
    memo = _SCORES.of(subject.memos)
    if key not in memo:
        terms = subject.placement.preferred
        total = float(sum(weight for _, weight in terms))
        scores = np.zeros(fleet.size, dtype=np.float64)
        for affinity, weight in terms:
            scores += weight * fleet.affinity_mask(affinity)
        memo[key] = scores * (framework.SCORE_MAX / total) if total else scores
    return memo[key]
