"""The placement disruption budget: voluntary moves never take more of a workload's clusters
out of service at once than `placement.disruption.maxUnavailableClusters` allows.

The budget (`budget_of`) is the placement's, else dro.yaml's `spec.disruption`, else none (no
limit, as before budgets existed). A count, or a percentage of the workload's clusters (its
division this pass, before re-balancing), rounded down but at least one, as a
PodDisruptionBudget's maxUnavailable.

Out of service, for one workload (`Disruption.out_of_service`):

- a cluster it is *leaving*: one that holds retiring copies (make-before-break keeps them until
  the new copies are Healthy), or that a move of this pass leaves;
- a cluster it is *entering*: one that a move of this pass enters, or whose copies are not
  observed Healthy: Progressing, Degraded or Missing in a fresh observation, or on a cluster
  that cannot be reached. A cluster not observed (no kubeconfig, an offline pass) or suspended
  proves nothing either way and is not counted.

A move has two ends, one of each, and takes one cluster's worth out of service: the count is
the larger of the clusters left and the clusters entered. So with a budget of 1 one move runs
at a time, one cluster to one cluster; a second destination, or a second source, waits. Under a
budget no move enters a cluster where the workload's copies are already not Healthy.

Workloads that re-balancing does not move (StaticWeight, Duplicated, Karmada's kinds) leave
draining clusters one step at a time instead (`stepwise`): the clusters kept wait in
`status.disruption.waiting` as moves do.

Re-balancing (drains, clusters above their limit, filling, Fresh requests) asks a `Guard` before
each move; a move the budget refuses waits for a later pass, recorded in the decision's
`status.disruption.waiting` with its reason (`disruption budget: 1 cluster in flight of 1
allowed (leaving a; entering b)`). Failover off an unreachable cluster, and replicas whose pods
pend, are not voluntary and are not limited, as a PodDisruptionBudget does not limit node
failures; but the clusters they leave unhealthy count, and hold voluntary moves back. A stateful
workload that runs whole moves one cluster to one cluster, within any budget.

`room` is the one question a rollout engine asks: how many more of a workload's clusters may
start a change now; `in_flight` gives what a decision already has in flight, and
`rollout_room` asks both for each decision of a pass (`render.rollout` starts a wave's
clusters in batches of that size, so a drain and a rollout share one budget).

Called by `schedule`, `schedule.engine`, `schedule.rebalance` and `schedule.stepwise`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from reconciler.domain import (
    Decision,
    Disruption,
    DisruptionBudget,
    Observation,
    Placement,
    ResourceKey,
    SchedulerConfig,
    Spec,
    Waiting,
)
from reconciler.domain.disruption import in_flight_text
from reconciler.kube import health
from reconciler.schedule import facts

if TYPE_CHECKING:
    from reconciler.schedule import stepwise


def budget_of(placement: Placement, config: SchedulerConfig) -> DisruptionBudget | None:
    """The budget that applies under `placement`: its own, else dro.yaml's, else None."""
    return placement.disruption if placement.disruption is not None else config.disruption


def room(budget: DisruptionBudget | None, clusters: int, in_flight: int) -> int:
    """How many more of a workload's `clusters` may start a change now, given `in_flight` of
    them already out of service (`Disruption.out_of_service`). A rollout engine sizes a wave
    with it: `min(wave, room(...))` clusters start, the rest wait for a later pass. Without a
    budget, every cluster not in flight may start; never below 0."""
    allowed = clusters if budget is None else budget.of(clusters)
    return max(0, min(allowed, clusters) - in_flight) if clusters else 0


def in_flight(
    decision: Decision, observations: Mapping[str, Observation]
) -> tuple[frozenset[str], frozenset[str]]:
    """(leaving, entering): the clusters a workload's decision is moving off (retiring copies)
    and those where its copies are not observed Healthy (`unhealthy`), as the budget counts
    them. A rollout engine adds the clusters its wave is changing to `entering` and passes
    `max(len(leaving), len(entering))` to `room`."""
    clusters = [p.cluster for p in decision.clusters]
    leaving = frozenset(p.cluster for p in decision.retiring)
    return leaving, frozenset(unhealthy(observations, decision.key, clusters))


def rollout_room(
    spec: Spec, observations: Mapping[str, Observation] | None
) -> Callable[[Decision], int | None]:
    """For each decision of a pass: how many more of its clusters may start a template change
    now under its budget (`room` of what it has `in_flight`), or None without a budget."""
    placements = {p.ref: p.placement for p in spec.placement_policies}
    seen = observations or {}

    def ask(decision: Decision) -> int | None:
        placement = placements.get(decision.policy) if decision.policy is not None else None
        budget = budget_of(placement or spec.config.default_placement, spec.config)
        if budget is None:
            return None
        leaving, entering = in_flight(decision, seen)
        return room(budget, len(decision.clusters), max(len(leaving), len(entering)))

    return ask


def unhealthy(
    observations: Mapping[str, Observation], key: ResourceKey, clusters: Iterable[str]
) -> set[str]:
    """The `clusters` where the workload's copies are observed not Healthy, or that cannot be
    reached: out of service whatever dro does next."""
    found = set()
    for name in clusters:
        seen = observations.get(name)
        if seen is None:
            continue
        fresh = not seen.stale
        if seen.unreachable_since is not None or (
            fresh and seen.health.get(key, ("",))[0] != health.HEALTHY
        ):
            found.add(name)
    return found


@dataclass(slots=True)
class Guard:
    """One workload's budget as re-balancing spends it during a pass."""

    budget: DisruptionBudget
    allowed: int
    leaving: set[str] = field(default_factory=set)
    entering: set[str] = field(default_factory=set)
    waiting: dict[str, Waiting] = field(default_factory=dict)
    sick: frozenset[str] = frozenset()
    """Where its copies were already not Healthy: no move enters them (nor would turn
    Healthy there)."""
    left: frozenset[str] = frozenset()
    """Clusters a drain step left (`stepwise`), out of service until observed empty."""

    def admits(self, source: str, target: str, replicas: int) -> bool:
        """Whether a move of `replicas` from `source` to `target` fits the budget; if so it
        is counted, else what waits on `source` is recorded."""
        leaving, entering = self.leaving | {source}, self.entering | {target}
        if target not in self.sick and max(len(leaving), len(entering)) <= self.allowed:
            self.leaving, self.entering = leaving, entering
            return True
        before = self.waiting.get(source)
        replicas = max(replicas, before.replicas if before is not None else 0)
        self.waiting[source] = Waiting(source, replicas, self.reason())
        return False

    def settle(self, source: str, replicas: int) -> None:
        """What still waits on `source` after re-balancing moved what the budget allowed."""
        if source in self.waiting:
            if replicas > 0:
                self.waiting[source] = self.waiting[source]._replace(replicas=replicas)
            else:
                del self.waiting[source]

    def reason(self) -> str:
        """Why a move waits: the clusters in flight against the budget."""
        count = max(len(self.leaving), len(self.entering))
        return (
            f"disruption budget: {count} cluster{'s' if count != 1 else ''} in flight of "
            f"{self.allowed} allowed ({in_flight_text(self.leaving, self.entering)})"
        )


class Tracker:
    """The budgets of one pass: a `Guard` per workload for re-balancing, then each decision's
    `status.disruption`."""

    def __init__(
        self,
        config: SchedulerConfig,
        order: Sequence[facts.Claimed],
        decided: Sequence[Decision],
        previous: Mapping[ResourceKey, Decision],
        observations: Mapping[str, Observation],
        steps: Mapping[ResourceKey, stepwise.Step] | None = None,
    ) -> None:
        self.guards: dict[int, Guard] = {}
        """Scheduling position → its workload's guard (workloads with a budget only)."""
        for position, (claimed, decision) in enumerate(zip(order, decided, strict=True)):
            budget = budget_of(claimed.placement, config)
            if budget is None or claimed.workload.replicas is None:
                continue
            clusters = sum(1 for p in decision.clusters if p.replicas)
            before = previous.get(claimed.workload.key)
            held = [p.cluster for p in before.clusters] if before is not None else []
            sick = unhealthy(observations, claimed.workload.key, held)
            step = (steps or {}).get(claimed.workload.key)
            if step is not None:  # a drain step of a workload re-balancing does not move
                self.guards[position] = Guard(
                    budget=budget,
                    allowed=step.allowed,
                    leaving=set(step.leaving),
                    entering=set(step.entering),
                    waiting={w.cluster: w for w in step.waiting},
                    left=step.leaving,
                )
                continue
            self.guards[position] = Guard(
                budget=budget,
                allowed=budget.of(clusters),
                leaving={p.cluster for p in decision.retiring},
                entering=set(sick),
                sick=frozenset(sick),
            )

    def guard(self, position: int) -> Guard | None:
        """The guard of the workload at this scheduling position; None without a budget."""
        return self.guards.get(position)

    def annotate(self, decisions: list[Decision], at: str) -> list[Decision]:
        """Each decision of a workload with a budget with its `disruption` (moves made `at`
        this pass count at both ends); the others with none."""
        for position, decision in enumerate(decisions):
            guard = self.guards.get(position)
            if guard is None:
                if decision.disruption is not None:
                    decisions[position] = replace(decision, disruption=None)
                continue
            now = [m for m in decision.moves if m.at == at]
            leaving = {p.cluster for p in decision.retiring} | {m.source for m in now} | guard.left
            decisions[position] = replace(
                decision,
                disruption=Disruption(
                    budget=guard.budget,
                    allowed=guard.allowed,
                    leaving=tuple(sorted(leaving)),
                    entering=tuple(sorted(guard.entering | {m.target for m in now})),
                    waiting=tuple(guard.waiting[c] for c in sorted(guard.waiting)),
                ),
            )
        return decisions
