"""The clock of a pass: the instants at which what it decided by the clock would change.

A pass reads the time once (its `now`) and compares it with instants: a move's cooldown ends,
a rollout's wave has soaked, a wave's health timeout runs out, a cluster has been unreachable
for `failoverAfter`, pods have pended for `unschedulableAfter`, a NoExecute taint's
`tolerationSeconds` run out, the last committed observation is `--status-interval` old. Each
comparison that would answer otherwise at a later instant notes that instant here, while a
pass records (`recording`). The earliest one is when a pass on the same inputs could first
decide differently: until then, a pass that changed nothing stays the fixed point
(`pipeline.idle`); with none noted, it stays one as long as the inputs do.

Every instant is noted a millisecond early (`MARGIN`), so that a comparison made in another
arithmetic order (`now - since >= span` against `now >= since + span`) cannot turn before the
noted instant. Noting too early costs one full pass; noting too late would be wrong.

Outside `recording` nothing is noted: the helpers only compare.

Called by 10 modules, among them `branch.status`, `foresee`, `pipeline`, `render.rollout`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

NEVER = math.inf
"""The deadline of a pass that compared no instant still ahead of its `now`."""
MARGIN = 1e-3
"""Seconds by which each instant is noted early."""


@dataclass(slots=True)
class Deadlines:
    """The instants noted while a pass records: `earliest` is the first (NEVER for none).
    A recording inside another one (one workload's turn inside its pass) passes each
    instant on to the `outer` one too."""

    earliest: float = NEVER
    outer: Deadlines | None = None

    def note(self, at: float) -> None:
        """A decision of the pass would change at `at`."""
        self.carry(at - MARGIN)

    def carry(self, earliest: float) -> None:
        """Take in the `earliest` of another recording (already noted early by `MARGIN`)."""
        found: Deadlines | None = self
        while found is not None:
            found.earliest = min(found.earliest, earliest)
            found = found.outer


_RECORDING: ContextVar[Deadlines | None] = ContextVar("dro_clock_deadlines", default=None)


@contextmanager
def recording() -> Iterator[Deadlines]:
    """Note, until the block ends, the instants the code inside compares its `now` with."""
    deadlines = Deadlines(outer=_RECORDING.get())
    token = _RECORDING.set(deadlines)
    try:
        yield deadlines
    finally:
        _RECORDING.reset(token)


def note(at: float) -> None:
    """A decision would change at the instant `at` (nothing when not recording)."""
    found = _RECORDING.get()
    if found is not None:
        found.note(at)


def carry(earliest: float) -> None:
    """Note the `earliest` of an earlier recording, as if its comparisons were made again
    (a decision reused from the last pass, `schedule.reuse`)."""
    found = _RECORDING.get()
    if found is not None:
        found.carry(earliest)


def ahead(now: float, at: float) -> bool:
    """Whether `at` is still ahead of `now` (`now < at`); when it is, a comparison with it
    answers otherwise from `at` on, which is noted."""
    if now < at:
        note(at)
        return True
    return False


def elapsed(now: float, since: float, span: float) -> bool:
    """Whether `span` seconds have passed from `since` to `now` (`now - since >= span`, as
    written); when not yet, the instant they will have is noted."""
    done = now - since >= span
    if not done:
        note(since + span)
    return done


def within(now: float, since: float, span: float) -> bool:
    """Whether no more than `span` seconds have passed from `since` to `now` (`now - since
    <= span`, as written); while so, the instant it ends is noted."""
    inside = now - since <= span
    if inside:
        note(since + span)
    return inside


def every_instant(now: float) -> None:
    """What was decided follows the clock itself (a forecast of the time ahead): a pass at
    any later instant may decide otherwise."""
    note(now)
