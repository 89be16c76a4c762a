"""Why a workload was divided again (its trigger) and why replicas moved (a move's reason).

Each is a code plus detail, a frozen value; its prose is rendered here and only here (`text`),
byte for byte the text the output branch has always held in a decision's `diagnosis.trigger`
and a move's `reason`. The scheduler makes these values (`schedule.triggers`, `record`,
`rebalance`, `standing`, `moving`, `bundle`); `branch.summary` writes their text and reads a
move's reason back once (`MoveReason.read`), so that nothing after it matches prose: the
commit message (`commit.describe`), `dro plan` (`review`) and re-balancing read codes.

Called by `domain`, `domain.decision`, `schedule.foresight` and `schedule.rebalance`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace


class TriggerCode(enum.StrEnum):
    """Why a workload's replicas were divided this pass, or why its division stands."""

    NONE = "none"
    """No trigger: a decision read back from the output branch (its diagnosis is kept
    verbatim), or one nothing has explained yet."""
    FIRST = "first"
    AGAIN = "again"
    STEADY = "steady"
    REQUESTED = "requested"
    FOLLOWS = "follows"
    PLACEMENT_CHANGED = "placement-changed"
    SCALED = "scaled"
    CLUSTER_GONE = "cluster-gone"
    FAILOVER = "failover"
    NOT_CANDIDATE = "not-candidate"
    PENDING = "pending"
    PARTIAL = "partial"
    AFFINITY_FAILED = "affinity-failed"
    LOCATION_FAILED = "location-failed"
    """A location of `placement.locations` could not take the workload: the next was tried."""
    UNSCHEDULABLE = "unschedulable"
    SET_ASIDE = "set-aside"
    REBALANCED = "rebalanced"
    BUNDLED = "bundled"
    DATA_SYNC = "data-sync"


_TRIGGER_PROSE: Mapping[TriggerCode, str] = {
    TriggerCode.NONE: "",
    TriggerCode.FIRST: "first placement",
    TriggerCode.AGAIN: "placed again after unschedulable",
    TriggerCode.STEADY: "steady: the previous division stands",
    TriggerCode.REQUESTED: "rebalance requested",
    TriggerCode.FOLLOWS: "follows its candidates on every pass",
    TriggerCode.PLACEMENT_CHANGED: "the placement changed",
    TriggerCode.SCALED: "replicas changed from {}",
    TriggerCode.CLUSTER_GONE: "cluster {} is gone",
    TriggerCode.FAILOVER: "failover after {}",
    TriggerCode.NOT_CANDIDATE: "cluster {} is no longer a candidate",
    TriggerCode.PENDING: "pods pending over {}",
    TriggerCode.PARTIAL: "{} replicas pending: placed again when room appears",
    TriggerCode.AFFINITY_FAILED: "an affinity term failed",
    TriggerCode.LOCATION_FAILED: "a location could not take it",
    TriggerCode.UNSCHEDULABLE: "unschedulable",
    TriggerCode.SET_ASIDE: "previous decision set aside ({}): divided again by its policy",
    TriggerCode.REBALANCED: "re-balanced: {}",
    TriggerCode.BUNDLED: "follows {}",
    TriggerCode.DATA_SYNC: "data-sync hook of {}",
}
"""Each code's prose; `{}` takes the detail."""


@dataclass(frozen=True, slots=True)
class Trigger:
    """Why a workload was divided this pass: `Trigger(TriggerCode.SCALED, "4 to 6")` reads
    `replicas changed from 4 to 6`."""

    code: TriggerCode = TriggerCode.NONE
    detail: str = ""
    """What the code's prose leaves open: a cluster, a duration, `4 to 6`, a reason."""
    notes: tuple[str, ...] = ()
    """Clauses the division adds: `runs whole on a (stateful)`, `kept near its data: a, b`."""
    then: Trigger | None = None
    """After a previous decision was set aside: the trigger of the division made instead."""

    @property
    def text(self) -> str:
        """The prose written to a decision's `diagnosis.trigger`."""
        clauses = [_TRIGGER_PROSE[self.code].format(self.detail), *self.notes]
        if self.then is not None:
            clauses.append(self.then.text)
        return "; ".join(clauses)

    def noting(self, clause: str) -> Trigger:
        """This trigger with one more clause."""
        return replace(self, notes=(*self.notes, clause))


class MoveCode(enum.StrEnum):
    """Why replicas moved from one cluster to another."""

    DRAINED = "drained"
    WATER_LEVEL = "water-level"
    FORECAST = "forecast"
    """Pre-allocation: the cluster's forecast passes its limit within the horizon."""
    FILLING = "filling"
    FAILOVER = "failover"
    PENDING = "pending"
    OVER_LIMIT = "over-limit"
    REQUESTED = "requested"
    OTHER = "other"
    """A reason read back that no code renders (its detail is the whole text)."""


_MOVE_PROSE: Mapping[MoveCode, str] = {
    MoveCode.DRAINED: "cluster drained",
    MoveCode.WATER_LEVEL: "water level {}",
    MoveCode.FORECAST: "forecast water level {}",
    MoveCode.FILLING: "filling {}",
    MoveCode.FAILOVER: "failover after {}",
    MoveCode.PENDING: "pods pending over {}",
    MoveCode.OVER_LIMIT: "over limit: {}",
    MoveCode.REQUESTED: "rebalance requested",
    MoveCode.OTHER: "{}",
}
"""Each code's prose; `{}` takes the detail, which is everything after the code's words."""

_FORCED = {TriggerCode.FAILOVER: MoveCode.FAILOVER, TriggerCode.PENDING: MoveCode.PENDING}


@dataclass(frozen=True, slots=True)
class MoveReason:
    """Why replicas moved: `MoveReason(MoveCode.WATER_LEVEL, "0.90 > 0.85 (cpu)")` reads
    `water level 0.90 > 0.85 (cpu)`."""

    code: MoveCode
    detail: str = ""

    @property
    def text(self) -> str:
        """The prose written to a move's `reason`."""
        return _MOVE_PROSE[self.code].format(self.detail)

    @classmethod
    def forced(cls, trigger: Trigger) -> MoveReason | None:
        """The reason of the moves a failover or pods pending too long force, worded as the
        trigger that forced them; None for any other trigger."""
        code = _FORCED.get(trigger.code)
        if code is None:
            return None
        return cls(code, "; ".join((trigger.detail, *trigger.notes)))

    @classmethod
    def read(cls, text: str) -> MoveReason:
        """A reason read back from the output branch: the code whose words it starts with,
        the rest as detail, so that `read(r.text) == r`; `OTHER` when none fits."""
        for code, prose in _MOVE_PROSE.items():
            words, slot, _ = prose.partition("{}")
            if code is MoveCode.OTHER:
                continue
            if not slot and text == words:
                return cls(code)
            if slot and text.startswith(words) and len(text) > len(words):
                return cls(code, text[len(words) :])
        return cls(MoveCode.OTHER, text)
