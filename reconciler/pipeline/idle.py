"""The idle pass: nothing changed since a pass that changed nothing, so nothing is redone.

A pass is a function of its source commit, the output branch's state, the observations, the
settings and the time. When a pass of this process found the output branch already at the
tree it computed (it made no commit), the output branch is at that function's fixed point
for those inputs. The next pass with the same source commit, the same output-branch tip and
the same settings would compute the same tree again, as long as time plays no part in it.

Time plays no part when nothing in the decisions waits on a clock: no rollout in progress,
no move in its cooldown, no copy retiring or entering, nothing held by a disruption budget, no
replica pending or over its limit, no cluster filling, and prediction off (forecasts follow
the clock). Then the pass is idle: it loads the source (a fetch, and the output branch's tip),
finds the same inputs, and stops there, with the plan of the pass that found the fixed point.
Online passes always run whole: the clusters' usage and health are inputs that only observing
them tells.

tests/test_incremental.py proves idle passes equal full ones on random change sequences.

Called by `pipeline` and `pipeline.warm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from reconciler.domain import Decision, Source, Spec
from reconciler.domain.disruption import Disruption
from reconciler.settings import Settings

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a pass reads besides the time: the source commit, the output branch's tip, and
    the settings (their repr: every field, none of them logged)."""

    source: str | None
    tip: str | None
    settings: str

    @classmethod
    def of(cls, source: Source, tip: str | None, settings: Settings) -> Inputs:
        """The inputs of a pass on `source` with the output branch at `tip`."""
        return cls(source.commit, tip, repr(settings))


@dataclass(frozen=True, slots=True)
class FixedPoint(Generic[P]):
    """A pass that made no commit: its inputs, and its plan, which an idle pass returns."""

    inputs: Inputs
    planned: P


def fixed_point(
    commit: str | None,
    on_remote: bool,
    online: bool,
    spec: Spec,
    decisions: tuple[Decision, ...],
    filling: frozenset[str],
) -> bool:
    """Whether a pass found the fixed point an idle pass may stand on: it made no commit, the
    remote holds the tree, it ran offline, and nothing in its plan waits on a clock."""
    if commit is not None or not on_remote or online:
        return False
    return not waits_on_time(spec, decisions, filling)


def waits_on_time(spec: Spec, decisions: tuple[Decision, ...], filling: frozenset[str]) -> bool:
    """Whether a pass on the same inputs could decide differently later: something in the
    decisions or the fleet waits on a clock."""
    if spec.config.prediction.enabled or filling:
        return True
    return any(_waiting(decision) for decision in decisions)


def _waiting(decision: Decision) -> bool:
    rollout = decision.rollout
    return bool(
        decision.moves
        or decision.retiring
        or decision.over_limit
        or decision.pending
        or (decision.disruption is not None and _in_flight(decision.disruption))
        or (rollout is not None and rollout.in_progress)
    )


def _in_flight(disruption: Disruption) -> bool:
    return bool(disruption.leaving or disruption.entering or disruption.waiting)


def idle(found: FixedPoint[P] | None, inputs: Inputs, online: bool) -> P | None:
    """The plan to return without redoing the pass, or None when the pass must run."""
    if online or found is None or found.inputs != inputs:
        return None
    return found.planned
