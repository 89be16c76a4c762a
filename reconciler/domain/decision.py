"""Decisions: where each workload goes, and why.

Called by 7 modules, among them `branch.statefiles`, `cli.report`, `domain`, `kube.movehooks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from reconciler.domain.base import Manifest, ResourceKey, empty
from reconciler.domain.disruption import Disruption
from reconciler.domain.policy import PolicyRef, Strategy
from reconciler.domain.reasons import MoveReason, Trigger
from reconciler.domain.rollout import RolloutStatus
from reconciler.domain.verdicts import NONE, Verdicts


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """The why of a decision: each cluster's verdict, the plugin weights and the strategy."""

    verdicts: Verdicts = field(default_factory=lambda: NONE)
    """Built when first read (`domain.verdicts`); none when the pass does not explain itself."""
    weights: Mapping[str, float] = field(default_factory=empty)
    strategy: Strategy = Strategy.DUPLICATED
    fleet_water_level: float = 0.0
    """The fleet's water level the weights were adjusted for."""
    trigger: Trigger = field(default_factory=Trigger)
    """Why the replicas were divided this pass, or why the previous division stands."""


PROVISIONING = "Provisioning"
SYNCING = "Syncing"
CUT_OVER = "CutOver"
DONE = "Done"
MOVE_PHASES = (PROVISIONING, SYNCING, CUT_OVER, DONE)
"""The phases of a stateful workload's move, in order (`reconciler.schedule.moving`)."""


class Placed(NamedTuple):
    """Replicas of one workload on one cluster; `replicas` is None for kinds without replicas.

    A named tuple: a large pass makes a million of them."""

    cluster: str
    replicas: int | None
    phase: str | None = None
    """On the retiring entry of a stateful move: where the move stands (`MOVE_PHASES`)."""
    since: str | None = None
    """When that phase began (RFC 3339)."""

    @property
    def running(self) -> int | None:
        """The replicas rendered for a retiring entry: all of them until the cut-over, none
        from the cut-over on (the old copy is kept scaled to zero, its volumes intact), and
        None once the move is Done (nothing is rendered: the old copy is removed)."""
        if self.phase == DONE:
            return None
        if self.phase == CUT_OVER:
            return 0
        return self.replicas or 0


class Move(NamedTuple):
    """Replicas that re-balancing, a drain or a failover moved, and why."""

    source: str
    target: str
    replicas: int
    reason: MoveReason
    at: str
    """When the move was decided (RFC 3339); the cooldown counts from here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """Where one workload goes. An unschedulable workload has a message; it keeps its previous
    clusters when capacity is short (all-or-nothing), and has none after a fit error."""

    key: ResourceKey
    api_version: str
    policy: PolicyRef | None
    clusters: tuple[Placed, ...]
    """Sorted by cluster name."""
    unschedulable: str | None = None
    diagnosis: Diagnosis = Diagnosis()
    placement_digest: str = ""
    """The digest of the placement this decision was made under."""
    affinity_term: str | None = None
    """The `clusterAffinities` term in use (Karmada's schedulerObservedAffinityName)."""
    recorded: Manifest | str | None = None
    """The diagnosis as written by the pass that made this placement: a mapping, or the YAML
    block itself as read back from the output branch (`yamlio.Verbatim`, never parsed). While
    the placement stands it is written again unchanged, so a steady pass changes no file."""
    retiring: tuple[Placed, ...] = ()
    """Replicas still running on clusters they are moving off (make-before-break): rendered
    beside `clusters` until the new copies are up. Sorted by cluster name."""
    moves: tuple[Move, ...] = ()
    """Moves made by this pass, or by an earlier one still within the cooldown."""
    rebalance_served: str | None = None
    """The policy's `rebalance.requestedAt` that this decision has served."""
    distrusted: str | None = None
    """Set only on a decision read back from the output branch that is not as dro wrote it
    (`statefiles`): why. It then holds no clusters, and its workload is divided again."""
    effective: Mapping[str, int] = field(default_factory=empty)
    """Cluster → the `spec.replicas` its rendered manifest holds, where an override of
    `spec.replicas` makes that differ from the count rendered there (`rendered`): the
    replicas that run, and that the water level is charged for (`reconciler.render.overridden`).
    The counts in `clusters` stay the division's."""
    over_limit: tuple[Placed, ...] = ()
    """Replicas of `clusters` that overflowed past a water-level limit (up to the ceiling),
    per cluster, sorted by name: re-balancing moves them back under a limit first."""
    pending: int = 0
    """Desired replicas that fit nowhere (a partial placement of dro's policies); the
    `unschedulable` message says why, and a later pass places them when room appears."""
    cost_per_hour: float | None = None
    """What the replicas that run (retiring copies included) cost per hour on the clusters
    that declare a price (`schedule.pricing`); None for kinds without replicas, and when
    every replica runs where no price is declared."""
    unpriced: int = 0
    """Replicas that run on clusters without a price, left out of `cost_per_hour`."""
    disruption: Disruption | None = None
    """Where a workload with a disruption budget stands against it (`schedule.disruption`);
    None without a budget."""
    rollout: RolloutStatus | None = None
    """Where the workload's rollout stands (`status.rollout`); None without `rollout`."""

    def rendered(self) -> tuple[Placed, ...]:
        """The replicas to render per cluster: the target plus what is still retiring."""
        if not self.retiring:
            return self.clusters
        merged = {p.cluster: p.replicas for p in self.clusters}
        for placed in self.retiring:
            count = placed.running
            if count is not None:
                merged[placed.cluster] = (merged.get(placed.cluster) or 0) + count
        return tuple(Placed(c, merged[c]) for c in sorted(merged))

    @property
    def moving(self) -> Placed | None:
        """The retiring entry of a stateful move in flight (it has a phase), or None."""
        return next((p for p in self.retiring if p.phase is not None), None)

    @property
    def waits(self) -> bool:
        """Whether it waits by its nature, on a clock or on the clusters: moves within their
        cooldown, copies retiring, replicas over a limit or pending, a disruption budget's
        steps or a rollout in flight. A pass decides such a workload again every time."""
        budget, rollout = self.disruption, self.rollout
        return bool(
            self.moves
            or self.retiring
            or self.over_limit
            or self.pending
            or (budget is not None and (budget.leaving or budget.entering or budget.waiting))
            or (rollout is not None and rollout.in_progress)
        )
