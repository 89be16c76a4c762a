"""What the web view shows, read from the output branch at one tip and kept until it moves.

A `Snapshot` is the fleet at one output-branch commit: each cluster's last status file (phase,
reachability, water level, forecast), its water level over the last `HISTORY_PASSES` passes
(the status files of the branch's first-parent history), the water-level limit of the source
commit the tip was rendered from (`dro.yaml`'s `spec.waterLevelLimit`), and each workload's
decision with the labels of its rendered manifest. It is immutable: request threads share it.

`Reader` builds one per tip and keeps the last: a request on an unchanged tip costs a reference
lookup. When the tip moves, the new one is read in a background thread while the last snapshot
is served (only the very first read is waited for). Between tips it keeps what each blob parsed
to (decisions and statuses through `branch.readback`, a status file's sample, a manifest's
labels), so a new tip parses only the files that pass changed. Nothing here asks a cluster: the
branch is the only source.

Called by `cli.run`, `web.pages` and `web.views`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import structlog

from reconciler.branch import lastpass, paths, readback, status
from reconciler.domain import Decision, ResourceKey
from reconciler.errors import GitError
from reconciler.git import blobids, gitrepo
from reconciler.web import branchfiles

log = structlog.get_logger("dro")

HISTORY_PASSES = 48
"""Output-branch commits whose status files the water-level charts show (newest first)."""
CHANGES_SEARCHED = 10_000
"""Commits back from the tip that a change's page may show."""
CHANGES_KEPT = 8
"""Commits whose list of changed files is kept (a commit never changes: paging is cheap)."""
DIAGNOSES_KEPT = 64
"""Parsed diagnosis blocks (the workload page) kept by blob id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterView:
    """One cluster as its last status file and its history show it."""

    name: str
    phase: str
    """`Filling`, `Draining`, `Unreachable`, `Suspended`, `Cordoned`, or "" in service."""
    reachable: bool
    source: str
    """`observed` (from its API) or `declared` (from its Cluster file)."""
    observed_at: str | None
    levels: Mapping[str, float]
    """Resource → the water level (used / capacity) of the last pass."""
    forecast: Mapping[str, float]
    """Resource → the forecast water level, where prediction is on."""
    history: tuple[tuple[float, Mapping[str, float]], ...]
    """(time, resource → water level), oldest first."""
    workloads: int = 0
    """Workloads placed on it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadView:
    """One workload: its decision (diagnosis block unparsed) and its manifest's labels."""

    decision: Decision
    path: str
    """Its decision file on the output branch."""
    labels: Mapping[str, str]

    @property
    def key(self) -> ResourceKey:
        """The workload's resource key."""
        return self.decision.key

    @property
    def policy(self) -> str:
        """The policy's name, or "" for the default placement."""
        return self.decision.policy.name if self.decision.policy else ""


class Changed(NamedTuple):
    """A file a commit changed: its path and blob ids before and after (None: absent)."""

    path: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The fleet at one output-branch tip (see the module)."""

    tip: str
    at: float
    clusters: tuple[ClusterView, ...]
    workloads: tuple[WorkloadView, ...]
    limit: Mapping[str, float]
    by_key: Mapping[str, WorkloadView] = field(default_factory=dict)
    """`str(ResourceKey)` (`ns/Kind[.group]/name`) → the workload."""
    by_cluster: Mapping[str, tuple[WorkloadView, ...]] = field(default_factory=dict)

    def cluster(self, name: str) -> ClusterView | None:
        """The cluster of that name, or None."""
        return next((c for c in self.clusters if c.name == name), None)


EMPTY = Snapshot(
    tip="", at=0.0, clusters=(), workloads=(), limit=MappingProxyType(branchfiles.DEFAULT_LIMIT)
)


class Reader:
    """The output branch `branch` of the repository `open_repo()` gives, as `Snapshot`s."""

    def __init__(
        self,
        open_repo: Callable[[], gitrepo.Repository | None],
        branch: str,
        *,
        background: bool = True,
    ) -> None:
        self._open = open_repo
        self.branch = branch
        self.background = background
        self._lock = threading.Lock()
        """Guards the tip lookups and the request-side caches."""
        self._build_lock = threading.Lock()
        self._refreshing: threading.Thread | None = None
        self._snapshot = EMPTY
        self._memo = readback.ReadBack()
        self._samples: dict[str, tuple[float, dict[str, float]] | None] = {}
        self._labels: dict[str, Mapping[str, str]] = {}
        self._diagnoses: OrderedDict[str, Any] = OrderedDict()
        self._changes: OrderedDict[str, list[Changed]] = OrderedDict()

    def _tip(self) -> tuple[gitrepo.Repository, gitrepo.Commit] | None:
        repo = self._open()
        if repo is None:
            return None
        tip = gitrepo.remote_tip(repo, self.branch) or gitrepo.branch_tip(repo, self.branch)
        return None if tip is None else (repo, tip)

    def snapshot(self) -> Snapshot:
        """The fleet at the branch's tip (EMPTY before the first pass committed). The first
        call reads the branch; after that, a tip that moved is read again in the background
        (with `background`) while the snapshot of the previous tip is served: a page never
        waits for a re-read, and says which tip it shows."""
        with self._lock:
            found = self._tip()
        if found is None:
            return EMPTY
        repo, tip = found
        current = self._snapshot
        if str(tip.id) == current.tip:
            return current
        if current is EMPTY or not self.background:
            return self._build(repo, tip)
        self._refresh_later()
        return current

    def settled(self) -> Snapshot:
        """The snapshot of the tip as it is now, waiting for a re-read (tests, benchmarks)."""
        with self._lock:
            found = self._tip()
        return EMPTY if found is None else self._build(*found)

    def _build(self, repo: gitrepo.Repository, tip: gitrepo.Commit) -> Snapshot:
        with self._build_lock:  # one reader of the branch at a time: the blob caches are its
            if self._snapshot.tip != str(tip.id):
                self._snapshot = self._read(repo, tip)
            return self._snapshot

    def _refresh_later(self) -> None:
        with self._lock:
            if self._refreshing is not None and self._refreshing.is_alive():
                return
            self._refreshing = threading.Thread(
                target=self._refresh, name="web-branch-read", daemon=True
            )
            self._refreshing.start()

    def _refresh(self) -> None:
        try:
            self.settled()
        except (GitError, OSError, ValueError) as error:
            log.warning("web_branch_unreadable", branch=self.branch, error=str(error))

    def commits(self, skip: int, count: int) -> tuple[list[branchfiles.CommitView], bool]:
        """`count` commits of the branch's first-parent history after the newest `skip`, and
        whether older ones remain."""
        with self._lock:
            found = self._tip()
            if found is None:
                return [], False
            shown: list[branchfiles.CommitView] = []
            for index, commit in enumerate(gitrepo.first_parents(found[1])):
                if index < skip:
                    continue
                if len(shown) == count:
                    return shown, True
                shown.append(branchfiles.commit_view(commit))
            return shown, False

    def change(self, sha: str) -> tuple[branchfiles.CommitView, list[Changed]] | None:
        """A commit of the branch (by full sha) and the files it changed against its first
        parent, by path (blob ids only: `blobs` reads the ones a page shows); None when the
        branch's last `CHANGES_SEARCHED` commits do not hold it."""
        with self._lock:
            found = self._tip()
            if found is None:
                return None
            repo, tip = found
            for index, commit in enumerate(gitrepo.first_parents(tip)):
                if str(commit.id) == sha:
                    break
                if index >= CHANGES_SEARCHED:
                    return None
            else:
                return None
            changed = self._changes.get(sha)
            if changed is None:
                parent = commit.parents[0] if commit.parent_ids else None
                found_changes = gitrepo.changed_files(repo, parent, commit)
                changed = self._changes[sha] = [Changed(*entry) for entry in found_changes]
                while len(self._changes) > CHANGES_KEPT:
                    self._changes.popitem(last=False)
            self._changes.move_to_end(sha)
            return branchfiles.commit_view(commit), changed

    def blobs(self, changed: list[Changed]) -> list[tuple[str, bytes, bytes]]:
        """(path, before, after) of changed files (b"" for a side without the file)."""
        with self._lock:
            found = self._tip()
            if found is None:
                return []
            repo = found[0]
            return [
                (
                    c.path,
                    gitrepo.blob_data(repo, c.before) if c.before else b"",
                    gitrepo.blob_data(repo, c.after) if c.after else b"",
                )
                for c in changed
            ]

    def file(self, path: str) -> bytes | None:
        """The bytes of a file of the branch's tip, or None."""
        with self._lock:
            found = self._tip()
            if found is None:
                return None
            blob = gitrepo.blob_at(found[1], path)
            return None if blob is None else gitrepo.blob_data(found[0], blob)

    def diagnosis(self, path: str) -> Mapping[str, Any]:
        """The `status.diagnosis` of the decision file at `path` on the tip, parsed (kept by
        blob id); empty when the file has none or is not as dro wrote it."""
        with self._lock:
            found = self._tip()
            blob = None if found is None else gitrepo.blob_at(found[1], path)
            if found is None or blob is None:
                return {}
            kept = self._diagnoses.get(blob)
            if kept is None:
                kept = branchfiles.diagnosis(path, gitrepo.blob_data(found[0], blob))
                self._diagnoses[blob] = kept
                while len(self._diagnoses) > DIAGNOSES_KEPT:
                    self._diagnoses.popitem(last=False)
            self._diagnoses.move_to_end(blob)
            return dict(kept)

    def _read(self, repo: gitrepo.Repository, tip: gitrepo.Commit) -> Snapshot:
        ids = blobids.blob_ids(repo, tip, paths.STATE_FOLDERS)
        files = readback.Blobs(ids, lambda blob: gitrepo.blob_data(repo, blob))
        self._memo.begin()
        decisions = lastpass.decisions(files, self._memo)
        statuses = lastpass.statuses(files, self._memo)
        self._memo.prune()
        forecasts = status.forecast_levels(
            {p: files[p] for p in files if paths.status_cluster(p) and b"forecast:" in files[p]}
        )
        history = self._history(repo, tip)
        workloads = tuple(
            WorkloadView(
                decision=d,
                path=paths.decision_path(d.key),
                labels=self._labels_of(repo, tip, d),
            )
            for d in sorted(decisions.values(), key=lambda d: d.key.sort_key)
        )
        by_cluster: dict[str, list[WorkloadView]] = {}
        for workload in workloads:
            for placed in workload.decision.clusters:
                by_cluster.setdefault(placed.cluster, []).append(workload)
        clusters = tuple(
            _cluster_view(name, statuses[name], forecasts, history, len(by_cluster.get(name, ())))
            for name in sorted(statuses)
        )
        return Snapshot(
            tip=str(tip.id),
            at=float(tip.commit_time),
            clusters=clusters,
            workloads=workloads,
            limit=MappingProxyType(branchfiles.limit(repo, tip)),
            by_key=MappingProxyType({str(w.key): w for w in workloads}),
            by_cluster=MappingProxyType({k: tuple(v) for k, v in by_cluster.items()}),
        )

    def _history(
        self, repo: gitrepo.Repository, tip: gitrepo.Commit
    ) -> dict[str, list[tuple[float, dict[str, float]]]]:
        """Cluster → (time, water levels) of the status files of the last passes, oldest
        first, one per time; blobs parsed once across tips."""
        found: dict[str, dict[float, dict[str, float]]] = {}
        seen_folder: str | None = None
        used: set[str] = set()
        for index, commit in enumerate(gitrepo.first_parents(tip)):
            if index >= HISTORY_PASSES:
                break
            folder = gitrepo.folder_id(commit, paths.STATUS_CLUSTERS)
            if folder is None or folder == seen_folder:
                continue
            seen_folder = folder
            for path, blob in gitrepo.blobs_under(repo, commit, paths.STATUS_CLUSTERS).items():
                used.add(blob)
                if blob not in self._samples:
                    self._samples[blob] = branchfiles.sample(path, gitrepo.blob_data(repo, blob))
                entry = self._samples[blob]
                cluster = paths.status_cluster(path)
                if entry is None or cluster is None:
                    continue
                at, levels = entry
                at = at or float(commit.commit_time)
                found.setdefault(cluster, {}).setdefault(at, levels)
        self._samples = {b: s for b, s in self._samples.items() if b in used}
        return {c: sorted(points.items()) for c, points in found.items()}

    def _labels_of(
        self, repo: gitrepo.Repository, tip: gitrepo.Commit, decision: Decision
    ) -> Mapping[str, str]:
        """The labels of the workload's manifest as rendered on its first cluster."""
        if not decision.clusters:
            return MappingProxyType({})
        blob = gitrepo.blob_at(tip, paths.object_path(decision.clusters[0].cluster, decision.key))
        if blob is None:
            return MappingProxyType({})
        labels = self._labels.get(blob)
        if labels is None:
            labels = self._labels[blob] = branchfiles.labels(gitrepo.blob_data(repo, blob))
        return labels


def _cluster_view(
    name: str,
    status_: Mapping[str, Any],
    forecasts: Mapping[str, Mapping[str, float]],
    history: Mapping[str, list[tuple[float, dict[str, float]]]],
    workloads: int,
) -> ClusterView:
    levels = status_.get("waterLevel")
    return ClusterView(
        name=name,
        phase=str(status_.get("phase") or ""),
        reachable=bool(status_.get("reachable", not status_.get("unreachableSince"))),
        source=str(status_.get("source") or "declared"),
        observed_at=str(status_["observedAt"]) if status_.get("observedAt") else None,
        levels=MappingProxyType(
            {str(r): float(v) for r, v in sorted((levels or {}).items())}
            if isinstance(levels, Mapping)
            else {}
        ),
        forecast=MappingProxyType(dict(forecasts.get(name, {}))),
        history=tuple((at, MappingProxyType(v)) for at, v in history.get(name, [])),
        workloads=workloads,
    )


def cache_opener(url: str, state_dir: Path) -> Callable[[], gitrepo.Repository | None]:
    """A way to open the fetched cache of `url` that `dro run`'s passes keep up to date (None
    until the first pass made it)."""

    def opened() -> gitrepo.Repository | None:
        if not gitrepo.cache_path(state_dir, url).exists():
            return None
        return gitrepo.open_cache(url, state_dir)

    return opened
