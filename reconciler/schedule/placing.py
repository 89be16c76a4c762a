"""Where a workload's data and state pull its replicas (STCI and follow-up scheduling).

- `near_data`: a divided workload that uses data keeps to the candidates nearest its data
  that can take all its replicas, filling each only to the fleet's level plus `SPILL`.
- `one_home`: a stateful workload of a dro policy runs whole on one cluster: where it runs,
  else beside the primary of its data.
- `balanced_room`: the replicas each cluster takes before its level passes a given level
  (here and in `economy`).

The engine calls them on the candidates its filters and spread selection left, before the
division. Pure numpy over clusters.

Called by `schedule.economy` and `schedule.selecting`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet, FloatArray, IntArray


@dataclass(frozen=True, slots=True)
class NoHome:
    """No single cluster can take every replica of a stateful workload: returned in place of
    the home."""

    replicas: int

    @property
    def message(self) -> str:
        """The refusal, with what would let the workload split."""
        return (
            f"no cluster can run all {self.replicas} replicas of a stateful workload on its own "
            "(set placement.allowSplit to let it split)"
        )


def one_home(
    subject: framework.Subject,
    selected: IntArray,
    total: FloatArray | None,
    *,
    fresh: bool = False,
) -> IntArray | NoHome:
    """Follow-up scheduling: a stateful workload (a StatefulSet, or one with a PVC) runs whole
    on one cluster that can take all its replicas: the one it runs on (unless a Fresh request
    asks to choose again), else the one holding the primary of the data it writes (fewest
    cross-domain bytes), else the best scored, then the roomiest. `NoHome` when no single
    cluster can take them all."""
    replicas = subject.replicas or 0
    room = subject.available[selected]
    fits = selected[room >= replicas]
    if fits.size == 0:
        return NoHome(replicas)
    moved = subject.data.bytes_per_day[fits] if subject.data is not None else np.zeros(fits.size)
    scores = total[fits] if total is not None else np.zeros(fits.size)
    running = np.zeros(fits.size) if fresh else subject.previous[fits]
    order = np.lexsort((fits, -subject.available[fits], -scores, moved, -running))
    home: IntArray = fits[order[:1]]
    return home


SPILL = 0.4
"""STCI: a cluster near a workload's data takes its replicas up to the fleet's water level (at
the start of the pass) plus this much, within the limit; beyond that they spill to the next
nearest clusters, so the clusters holding popular data do not all fill to the limit while
others idle. 0.4 meets both targets of `bench/stci.py` (≥ 50% fewer cross-domain bytes, RWL
spread no more than 10% worse) on its seeds; with no margin at all the spread grows by 60%."""


def near_data(
    fleet: Fleet, subject: framework.Subject, selected: IntArray, load: float
) -> IntArray:
    """STCI for a divided workload that uses data: the candidates nearest its data (fewest
    cross-domain bytes, then the cheapest egress, then the most room) that can take all its
    replicas while staying within the fleet's water level + `SPILL`, and every candidate as
    near as the farthest of them; all of `selected` when even they all cannot."""
    data = subject.data
    if data is None or selected.size < 2:
        return selected
    moved, price = data.bytes_per_day[selected], data.egress_per_day[selected]
    room = balanced_room(fleet, subject, load + SPILL)[selected]
    order = np.lexsort((selected, -room, price, moved))
    covered = np.cumsum(room[order]) >= (subject.replicas or 0)
    if not covered.any():
        return selected
    last = order[int(np.argmax(covered))]
    near = (moved < moved[last]) | ((moved == moved[last]) & (price <= price[last]))
    nearest: IntArray = np.sort(selected[near])
    return nearest


def balanced_room(fleet: Fleet, subject: framework.Subject, up_to: float) -> IntArray:
    """Replicas each cluster can take before its level passes min(limit, `up_to`), its own
    replicas included, and never more than `available`."""
    requested = subject.requested
    if requested.size == 0:
        return subject.available
    level = np.minimum(subject.limit[requested], up_to)
    capacity = fleet.capacity_by_resource[requested]
    room = capacity * level[:, None] - subject.usage[requested]
    with np.errstate(divide="ignore", invalid="ignore"):
        fits = np.floor(np.min(room / subject.demand[requested][:, None], axis=0))
    fits = np.nan_to_num(fits, nan=0.0, posinf=float(subject.replicas or 0), neginf=0.0)
    balanced: IntArray = np.minimum(
        np.maximum(fits, 0).astype(np.int64) + subject.previous, subject.available
    )
    return balanced
