"""The idle pass: nothing changed since a pass that changed nothing, so nothing is redone.

A pass is a function of its source commit, the output branch's state, the settings, the
clusters' observations and the time. When a pass of this process found the output branch
already at the tree it computed (it made no commit), the output branch is at that function's
fixed point for those inputs. The next pass with the same source commit, the same
output-branch tip, the same settings and the same observations computes the same tree again,
until the time reaches an instant at which one of its comparisons with the clock would answer
otherwise.

Those instants are the ones the pass consulted (`domain.clock`): each comparison of the
pass's `now` with an instant still ahead of it notes that instant while the pass records (a
move's cooldown, a wave's soak or health timeout, failover, pods pending, a taint's
tolerationSeconds, the status interval, prediction's forecasts at any instant). The fixed
point holds until the earliest one, and for ever when there is none. Behind that rule stands
the list of states that wait on a clock or on the clusters by their nature (`waits_on_time`):
a fixed point has none of them either, because a pass that keeps a standing decision need
not compare its instants again (the scheduler reuses what still stands).

An offline idle pass loads the source (a fetch, and the output branch's tip), finds the same
inputs, and stops there with the plan of the fixed point. An online one also observes the
clusters (their usage and health are inputs) and surveys their drift against the fixed
point's tree; when both equal the fixed point's, it skips validate → schedule → render →
commit and applies the fixed point's tree as a full pass would (self-heal: reads only when
nothing drifted). Otherwise the pass runs whole, on the observations already made.

A sharded leader's pass (`pipeline.sharded`) stands on its fixed point the same way, the
other members' published observations and drift among what it compares; a member's pass on
the same inputs as its last one reuses that pass's spec and tree.

What the schedule stage consumes of an observation is all of it but `observed_at`, which only
the status files carry: a change to them alone waits for `--status-interval`, whose end is
one of the consulted instants.

tests/test_incremental.py proves idle passes equal full ones on random change sequences, and
tests/test_idle_online.py on emulated clusters.

Called by `pipeline`, `pipeline.clusters`, `pipeline.sharded` and `pipeline.warm`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from reconciler import live
from reconciler.domain import Decision, Observation, Source, Spec, clock
from reconciler.domain.drift import Drifted
from reconciler.settings import Settings

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a pass reads besides the time and the clusters: the source commit, the output
    branch's tip, and the settings (their repr: every field, none of them logged)."""

    source: str | None
    tip: str | None
    settings: str

    @classmethod
    def of(cls, source: Source, tip: str | None, settings: Settings) -> Inputs:
        """The inputs of a pass on `source` with the output branch at `tip`."""
        return cls(source.commit, tip, repr(settings))


@dataclass(frozen=True, slots=True)
class Seen:
    """What an online pass found on the clusters: each cluster's observation as the schedule
    stage consumes it (without `observed_at`), the unreachable and suspended clusters, and the
    drift surveyed against the tree."""

    observations: Mapping[str, Observation]
    unreachable: Mapping[str, str]
    suspended: tuple[str, ...]
    drifted: Mapping[str, list[Drifted]]

    @classmethod
    def of(cls, observed: live.Observed, drifted: Mapping[str, list[Drifted]]) -> Seen:
        """The comparable part of an observation and a drift survey."""
        return cls(
            observations={
                name: dataclasses.replace(found, observed_at=None)
                for name, found in observed.observations.items()
            },
            unreachable=dict(observed.unreachable),
            suspended=tuple(observed.suspended),
            drifted=dict(drifted),
        )


@dataclass(frozen=True, slots=True)
class FixedPoint(Generic[P]):
    """A pass that made no commit: its inputs, its plan (which an idle pass returns), the
    instant until which its decisions stand (`domain.clock`), and, online, what it saw of
    the clusters and the clusters' last committed status it observed them against."""

    inputs: Inputs
    planned: P
    until: float = clock.NEVER
    seen: Seen | None = None
    statuses: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def fixed_point(
    commit: str | None,
    on_remote: bool,
    spec: Spec,
    decisions: tuple[Decision, ...],
    filling: frozenset[str],
) -> bool:
    """Whether a pass found the fixed point an idle pass may stand on: it made no commit, the
    remote holds the tree, and nothing in its plan waits on a clock by its nature."""
    if commit is not None or not on_remote:
        return False
    return not waits_on_time(spec, decisions, filling)


def waits_on_time(spec: Spec, decisions: tuple[Decision, ...], filling: frozenset[str]) -> bool:
    """Whether something in the decisions or the fleet waits by its nature: the backing of
    the consulted instants (`domain.clock`), which catch every comparison with the clock."""
    if spec.config.prediction.enabled or filling:
        return True
    return any(decision.waits for decision in decisions)


def idle(found: FixedPoint[P] | None, inputs: Inputs, now: float) -> FixedPoint[P] | None:
    """The fixed point a pass at `now` on `inputs` may stand on, or None when the pass must
    run (online, the clusters must still be seen as the fixed point saw them: `standing`)."""
    if found is None or found.inputs != inputs or now >= found.until:
        return None
    return found


def standing(
    found: FixedPoint[P], observed: live.Observed, drifted: Mapping[str, list[Drifted]]
) -> bool:
    """Whether the clusters, observed and surveyed this pass, are as the online fixed point
    saw them."""
    return found.seen is not None and found.seen == Seen.of(observed, drifted)
