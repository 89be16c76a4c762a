"""The last pass's state on the output branch, as one value read once per pass.

`pipeline` reads it at the start of a pass (`pipeline.last_pass`) and passes it on to every
stage that needs it; `review` (dro plan) builds it once for both sides of a change. Nothing
else parses the output branch's `decisions/` and `status/` files during a pass.

Called by 9 modules, among them `cli`, `foresee`, `pipeline`, `review`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler import load, render, validate
from reconciler.branch import lastpass, outputtree, paths, readback, status
from reconciler.domain import Decision, Manifest, ResourceKey, Source
from reconciler.domain.forecast import History
from reconciler.load import cachefile
from reconciler.settings import Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class LastPass:
    """The last pass's state: its `decisions/` and `status/` files, and what they say. Empty
    before the first pass."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    """The `decisions/` and `status/` files (`load.previous_state`)."""
    decisions: tuple[Decision, ...] = ()
    phases: Mapping[str, str] = field(default_factory=dict)
    """Cluster → its phase after the last pass (`lastpass.phases`)."""
    statuses: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Cluster → the `status` of its file (`status.previous_statuses`)."""
    kept: render.Kept | None = None
    """Reads single rendered files back, for what a suspended dispatch keeps."""
    history: Callable[[float, float], History] | None = None
    """Reads the status history on the output branch, (now, window) → History, for
    prediction (`load.history`); called only when prediction is on."""
    templates: render.Templates | None = None
    """Reads a workload's manifest at an earlier source commit: the template a rollout keeps
    in force where it has not arrived yet (`templates`)."""

    def held_status(
        self, tree: Mapping[str, bytes], now: float, interval: float
    ) -> dict[str, bytes] | None:
        """The last committed `status/` files when a change to status alone must wait for
        `--status-interval` (health and reachability unchanged); None when it may be
        committed. The interval is consulted first, even when the status did not change: a
        later pass observes at another time, and the instant the interval ends is one at
        which it would commit (`domain.clock`)."""
        due = status.due(self.statuses.values(), now, interval)
        after = {p: tree[p] for p in outputtree.under(tree, paths.STATUS)}
        differ = [p for p, d in after.items() if not readback.holds(self.files, p, d)]
        differ += [p for p in self.files if p.startswith(paths.STATUS) and p not in after]
        if due or not differ:
            return None
        # only the files that differ are read back: the others are `after`'s bytes already
        before = {p: self.files[p] for p in differ if p in self.files}
        if status.urgent(before, {p: after[p] for p in differ if p in after}):
            return None
        return {**after, **before}


FIRST_PASS = LastPass()
"""No last pass: nothing decided before, no phases, no status."""


def of(
    files: Mapping[str, bytes],
    *,
    kept: render.Kept | None = None,
    history: Callable[[float, float], History] | None = None,
    templates: render.Templates | None = None,
    memo: readback.ReadBack | None = None,
) -> LastPass:
    """What the output branch's state `files` say, each file read once (an unreadable one is
    warned about once, by `lastpass`); with a `memo`, files read by blob id
    (`load.previous_blobs`) that an earlier pass read are not parsed again."""
    return LastPass(
        files=files,
        decisions=tuple(lastpass.decisions(files, memo).values()),
        phases=lastpass.phases(files, memo),
        statuses=lastpass.statuses(files, memo),
        kept=kept,
        history=history,
        templates=templates,
    )


Workloads = Mapping[ResourceKey, Manifest] | None
"""A source commit's workload manifests by key; None when the commit no longer validates."""


class TemplateMemo:
    """What earlier source commits gave `templates`, kept across the passes of one process
    (`dro run`), so that a rollout's old commit is read and validated once, not on every pass.
    Keyed by the repository and the commit's sha: a commit's content never changes, and it is
    validated with the built-in settings alone. Bounded: the `size` commits used last are kept.
    A commit the cache does not hold is not remembered (it may be fetched later)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._found: OrderedDict[tuple[str, str], Workloads] = OrderedDict()
        self._lock = threading.Lock()  # a pass and a REST request may read at once

    def get(self, repo: str, commit: str) -> tuple[bool, Workloads]:
        """(known, its workloads) for `commit` of `repo`, marking it used last."""
        key = (repo, commit)
        with self._lock:
            if key not in self._found:
                return False, None
            self._found.move_to_end(key)
            return True, self._found[key]

    def put(self, repo: str, commit: str, workloads: Workloads) -> None:
        """Remember what `commit` gave, dropping the commit used longest ago past `size`."""
        with self._lock:
            self._found[(repo, commit)] = workloads
            self._found.move_to_end((repo, commit))
            while len(self._found) > self.size:
                self._found.popitem(last=False)

    def clear(self) -> None:
        """Forget every commit."""
        with self._lock:
            self._found.clear()


MEMO = TemplateMemo()
"""The process's memo of old template commits, shared by every `online` pass."""


def templates(
    read: Callable[[str], Source | None],
    *,
    memo: TemplateMemo | None = None,
    repo: str = "",
) -> render.Templates:
    """A reader of workload manifests at earlier source commits (`read(sha)` gives the source,
    e.g. `load.source_at`); each commit is read and validated once per reader, and once per
    process with a `memo` (keyed by `repo` and the sha). A commit that is gone, or that no
    longer validates, gives None: the clusters that keep it keep the objects last rendered
    (`render.rolloutgone`), never the source's own template."""
    specs: dict[str, Workloads] = {}

    def manifest(commit: str, key: ResourceKey) -> Manifest | None:
        if commit not in specs:
            known, found = memo.get(repo, commit) if memo is not None else (False, None)
            if not known:
                source = read(commit) if commit else None
                spec = validate.check(source).spec if source is not None else None
                found = None if spec is None else {w.key: w.manifest for w in spec.workloads}
                if memo is not None and source is not None:
                    memo.put(repo, commit, found)
            specs[commit] = found
        workloads = specs[commit]
        return None if workloads is None else workloads.get(key)

    return manifest


def online(settings: Settings, memo: readback.ReadBack | None = None) -> LastPass:
    """The last pass's state, from the output branch of the fetched cache of `settings.repo`
    (a pass of `dro reconcile` or `dro run`). A `memo` (`pipeline.Warm`) keeps what each
    state file parsed to, so that only files new since the last pass are parsed."""
    assert settings.repo is not None
    url = settings.repo
    where = (url, settings.output_branch, settings.state_dir)
    if memo is not None:
        memo.begin()
    return of(
        load.previous_blobs(*where) if memo is not None else load.previous_state(*where),
        kept=load.previous_rendered(*where),
        history=load.history.reader(*where),
        templates=templates(
            lambda sha: load.source_at(url, settings.state_dir, sha), memo=MEMO, repo=url
        ),
        memo=memo,
    )


READBACK = "readback"
"""The kind of the read-back cache's file (`load.cachefile`)."""


def offline(settings: Settings) -> LastPass:
    """The last pass's decisions and status history for the offline commands (`dro
    validate`, `dro explain`): read from the output branch of the fetched cache of
    `settings.repo`, through the read-back cache file a reconcile left (`online`); nothing
    for a plain directory."""
    if settings.repo is None:
        return FIRST_PASS
    where = (settings.repo, settings.output_branch, settings.state_dir)
    memo = readback.ReadBack()
    cachefile.restore(memo, settings.state_dir, settings.repo, READBACK)
    memo.begin()
    decisions = tuple(lastpass.decisions(load.previous_blobs(*where), memo).values())
    return LastPass(decisions=decisions, history=load.history.reader(*where))
