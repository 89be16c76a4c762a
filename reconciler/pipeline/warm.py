"""What a process keeps between passes, so that the next pass redoes only what changed.

`dro run` holds one `Warm` for its whole life and hands it to every pass; `dro reconcile
--once` builds one per process, and the caches that have an on-disk form load it from the
state directory (`state_dir`). A cache is an optimisation only: a pass with a cold `Warm`
gives the same bytes as one with a warm one (tests/test_incremental.py proves it on random
change sequences). Each stage's cache is one field, typed by the stage's own cache class.

- `parsed`: each source file's parse, by its path and the sha256 of its bytes
  (`validate.parsecache`);
- `validated`: each source file's own checks and each object's, by path and bytes, and the
  per-workload results of the checks across files (`validate.memo`), in memory only;
- `readback`: what each state file of the output branch parsed to, by its blob id
  (`branch.readback`);
- `steady`: the last pass that made no commit, for an idle pass (`pipeline.idle`);
- `blobs`: the source files of the last pass, by blob id (`load.BlobCache`);
- `turns`: each workload's last turn in the scheduler (`schedule.reuse`);
- `render`: each workload's rendered files and their inputs (`render.memo`);
- `commit`: the output tree as last written, per cache (`commit.Writers`, `git.trees`);
- `connections`: the connections to the clusters, and their workers (`live.pool`).

The first two are kept on disk per repository when `state_dir` is set (`load.cachefile`): read once,
when a process's first pass of a repository starts (`begin`), and written after each pass that
changed them (`keep`).

Called by `pipeline` and `pipeline.sharded`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler import commit, live, load, schedule
from reconciler.branch import readback as readbacks
from reconciler.laststate import READBACK
from reconciler.load import cachefile
from reconciler.pipeline import idle
from reconciler.render import memo
from reconciler.validate import memo as validation
from reconciler.validate import parsecache

PARSED = "parsed"
"""The kind of the source parse cache's file (`load.cachefile`)."""


@dataclass(slots=True, kw_only=True)
class Warm:
    """The caches one process keeps between passes (each field is one stage's)."""

    state_dir: Path | None = None
    """Where the on-disk caches live (`--state-dir`); None keeps them in memory only."""
    parsed: parsecache.ParseCache = field(default_factory=parsecache.ParseCache)
    """Each source file's parse (`validate.parsecache`)."""
    validated: validation.Memo = field(default_factory=validation.Memo)
    """Each source file's and each object's own checks (`validate.memo`), in memory only."""
    readback: readbacks.ReadBack = field(default_factory=readbacks.ReadBack)
    """What each of the output branch's state files parsed to (`branch.readback`)."""
    repo: str | None = None
    """The repository the caches hold the files of; another one starts them afresh."""
    steady: idle.FixedPoint[Any] | None = None
    """The last pass that made no commit, which the next one may stand on (`pipeline.idle`)."""
    blobs: load.BlobCache = field(default_factory=load.BlobCache)
    """The source files of the last pass, by blob id (`load.BlobCache`)."""
    turns: schedule.reuse.Memo = field(default_factory=schedule.reuse.Memo)
    """Each workload's last turn in the scheduler (`schedule.reuse`), in memory only."""
    render: memo.Memo = field(default_factory=memo.Memo)
    """The last pass's rendered files per workload (`render.memo`), in memory only."""
    commit: commit.Writers = field(default_factory=commit.Writers)
    """The output branch's tree as last written (`git.trees`), in memory only."""
    connections: live.Pool = field(default_factory=live.Pool)
    """The clusters' connections, kept from one pass to the next (`live.pool`)."""
    keep_every: float = 0.0
    """Seconds between writes of the on-disk caches (`keep`): 0 writes after every pass
    that changed them, as `dro reconcile --once` needs; `dro run` writes them once a minute
    and when it stops (at 10,000 workloads they are 40 MB)."""
    _unwritten: set[str] = field(default_factory=set)
    _written_at: float = -math.inf

    def begin(self, repo: str | None) -> None:
        """A pass of `repo` starts: the caches are read from the state directory when this
        process has not read them for it yet."""
        if repo != self.repo:
            self.flush()  # the last repository's caches, before they are dropped
            self.parsed = parsecache.ParseCache()
            self.validated = validation.Memo()
            self.readback = readbacks.ReadBack()
            self.repo = repo
            self.steady = None
            self.blobs = load.BlobCache()
            self.turns = schedule.reuse.Memo()
            self.render = memo.Memo()
            cachefile.restore(self.parsed, self.state_dir, repo, PARSED)
            cachefile.restore(self.readback, self.state_dir, repo, READBACK)
        self.parsed.begin()

    def __enter__(self) -> Warm:
        return self

    def __exit__(self, *_exc: object) -> None:
        """The process is done with its passes: the caches are written, the connections
        closed."""
        self.flush()
        self.connections.close()

    def keep(self) -> None:
        """A pass ended: the caches that changed are marked to be written, and in memory each
        drops what the pass did not use. With `keep_every` 0 they are written now; `dro run`
        writes them after the pass has ended and been reported (`flush_due`), so that 40 MB
        of JSON is never part of a pass's time to its commit."""
        for kind, cache in self._caches():
            if cache.changed:
                self._unwritten.add(kind)
        if self.keep_every <= 0:
            self.flush()
        else:
            self.parsed.prune()
            self.readback.prune()

    def flush_due(self) -> None:
        """Between two passes of `dro run`: write the caches a pass changed when the last
        write is `keep_every` seconds old."""
        if self._unwritten and time.monotonic() - self._written_at >= self.keep_every:
            self.flush()

    def flush(self) -> None:
        """Write each on-disk cache now when a pass changed it since it was last written:
        before the process ends, and from `keep`."""
        for kind, cache in self._caches():
            if kind in self._unwritten and self.state_dir is not None and self.repo is not None:
                cachefile.write(self.state_dir, self.repo, kind, cache.exported())
                self._written_at = time.monotonic()
            else:
                cache.prune()
        self._unwritten.clear()

    def _caches(self) -> tuple[tuple[str, cachefile.Portable], ...]:
        return ((PARSED, self.parsed), (READBACK, self.readback))
