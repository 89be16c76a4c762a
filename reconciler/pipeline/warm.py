"""What a process keeps between passes, so that the next pass redoes only what changed.

`dro run` holds one `Warm` for its whole life and hands it to every pass; `dro reconcile
--once` builds one per process, and the caches that have an on-disk form load it from the
state directory (`state_dir`). A cache is an optimisation only: a pass with a cold `Warm`
gives the same bytes as one with a warm one (tests/test_incremental.py proves it on random
change sequences). Each stage's cache is one field, typed by the stage's own cache class.

Called by `pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reconciler import commit
from reconciler.render import memo


@dataclass(slots=True, kw_only=True)
class Warm:
    """The caches one process keeps between passes (each field is one stage's)."""

    state_dir: Path | None = None
    """Where the on-disk caches live (`--state-dir`); None keeps them in memory only."""
    render: memo.Memo = field(default_factory=memo.Memo)
    """The last pass's rendered files per workload (`render.memo`), in memory only."""
    commit: commit.Writers = field(default_factory=commit.Writers)
    """The output branch's tree as last written (`git.trees`), in memory only."""
