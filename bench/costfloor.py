"""The cheapest any placement of a trace could be: a linear-programming lower bound on cost.

At every step, every workload's desired replicas go to the clusters its policy selects
(`Fleet.affinity_mask` of its placement's affinity, or any of its affinity terms; draining and
cordoned clusters out) without any cluster's cpu passing `limit` × capacity over its background.
Everything that makes a real placement dearer is relaxed away, so the figure is a floor:

- replicas are divisible, and nothing holds a replica where it ran the step before;
- memory is left unconstrained (it never binds on the bench trace);
- workloads that select the same clusters are pooled into `BINS` groups by memory per core,
  each priced at its smallest memory per core (a workload's price per core on a cluster is
  cpu price + memory per core × memory price, rising with memory per core).

Each step is one `scipy.optimize.linprog` (HiGHS) over groups × clusters. A step whose demand
does not fit under the limit is solved under capacity (1.0) instead and counted.

Called by `bench/rebalance.py`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from scipy.optimize import linprog  # type: ignore[import-untyped]

from reconciler import schedule
from reconciler.schedule.fleet import Fleet
from reconciler.simulate import seams
from reconciler.simulate import trace as traces
from reconciler.simulate.timeline import StepInput, Timeline

BINS = 40
"""Groups per set of selected clusters, by memory per core (quantiles)."""


def floor(trace: Path, limit: float = 0.85) -> tuple[float, int]:
    """(the cost floor, steps that did not fit under `limit`) of the trace at `trace`."""
    timeline = Timeline(traces.read(trace))
    cpu = timeline.resources.index("cpu")
    memory = timeline.resources.index("memory")
    hours = timeline.trace.step / 3600.0
    per_core = np.divide(
        timeline.demand[:, memory],
        timeline.demand[:, cpu],
        out=np.zeros(len(timeline.workloads)),
        where=timeline.demand[:, cpu] > 0,
    )
    masks: dict[tuple[str, ...], np.ndarray] = {}
    total, overfull = 0.0, 0
    for inp in timeline.steps():
        fleet = Fleet(clusters=inp.clusters)
        names = tuple(c.name for c in inp.clusters)
        if names not in masks:
            masks[names] = _selected(timeline, fleet)
        allowed = masks[names] & ~(fleet.draining | fleet.cordoned)[np.newaxis, :]
        cores = np.maximum(inp.desired, 0) * timeline.demand[:, cpu]
        prices = seams.unit_prices(inp.clusters, timeline.resources)  # (present, resources)
        room = inp.capacity[inp.present, cpu] - np.nan_to_num(inp.background[inp.present, cpu])
        groups = _groups(allowed, per_core, cores)
        cost, fits = _step(groups, prices[:, cpu], prices[:, memory], room, inp, cpu, limit)
        overfull += 0 if fits else 1
        total += cost * hours
    return total, overfull


def _selected(timeline: Timeline, fleet: Fleet) -> np.ndarray:
    """(workloads, clusters of `fleet`) the clusters each workload's policy selects."""
    spec = dataclasses.replace(timeline.trace.spec, clusters=fleet.clusters)
    mask = np.zeros((len(timeline.workloads), fleet.size), dtype=bool)
    for claimed in schedule.claimed_workloads(spec):
        placement = claimed.placement
        if placement.affinity_terms:
            selected = fleet.any_affinity([term.affinity for term in placement.affinity_terms])
        else:
            selected = fleet.any_affinity(placement.targets)
        mask[timeline.row[claimed.workload.key]] = selected
    return mask


def _groups(
    allowed: np.ndarray, per_core: np.ndarray, cores: np.ndarray
) -> list[tuple[np.ndarray, float, float]]:
    """(clusters selected, cores desired, smallest memory per core) per group: workloads
    selecting the same clusters, split into `BINS` by memory per core."""
    out = []
    sets, which = np.unique(allowed, axis=0, return_inverse=True)
    for k, selected in enumerate(sets):
        members = np.flatnonzero((which.ravel() == k) & (cores > 0))
        if not len(members):
            continue
        order = members[np.argsort(per_core[members], kind="stable")]
        for part in np.array_split(order, min(BINS, len(order))):
            out.append((selected, float(cores[part].sum()), float(per_core[part].min())))
    return out


def _step(
    groups: list[tuple[np.ndarray, float, float]],
    cpu_price: np.ndarray,
    memory_price: np.ndarray,
    room: np.ndarray,
    inp: StepInput,
    cpu: int,
    limit: float,
) -> tuple[float, bool]:
    """The cheapest cost per hour of one step, and whether it fit under `limit`."""
    n, g = len(room), len(groups)
    if not g:
        return 0.0, True
    capacity = inp.capacity[inp.present, cpu]
    price = np.concatenate([cpu_price + ratio * memory_price for _, _, ratio in groups])
    bounds = [(0.0, None if ok else 0.0) for selected, _, _ in groups for ok in selected]
    demand = np.zeros((g, g * n))
    for i in range(g):
        demand[i, i * n : (i + 1) * n] = 1.0
    wanted = np.array([need for _, need, _ in groups])
    shared = np.tile(np.eye(n), g)  # Σ over groups per cluster
    for share, fits in ((limit, True), (1.0, False)):
        headroom = np.maximum(0.0, room - (1.0 - share) * capacity)
        found = linprog(
            price,
            A_ub=shared,
            b_ub=headroom,
            A_eq=demand,
            b_eq=wanted,
            bounds=bounds,
            method="highs",
        )
        if found.status == 0:
            return float(found.fun), fits
    raise SystemExit("costfloor: a step's demand exceeds the fleet's capacity")
