"""Commit: write the rendered tree to the output branch and push it.

One commit per pass whose tree differs from the branch tip, built straight from memory. Its
message says what changed and why (`commitmessage`), then the trailers `Dro-Source-Commit`
and `Dro-Observations`. No commit when nothing changed. When
the remote branch moved meanwhile, fetch, rebuild on the new tip and push again.

The tip compared against is always the remote's branch as fetched at the start of the pass,
never the cache's own branch: a commit whose push was lost (the push failed, the process died,
or it was a `--no-push` trial) is not on the remote, so the next pass commits it again (the
same tree, parent, message and time give the same commit) and pushes it. A fence (`fence`),
checked just before the push, stops a replica that lost its Lease from pushing.

Called by `audit`, `pipeline`, `pipeline.publishing` and `pipeline.warm`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from reconciler.branch import comparison, outputtree, paths
from reconciler.domain import fence
from reconciler.domain.credentials import Credentials
from reconciler.errors import GitError
from reconciler.git import gitrepo

MAX_PUSH_ATTEMPTS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishResult:
    """What `publish` did: the new commit (None when unchanged), push and attempts."""

    commit: str | None
    pushed: bool
    attempts: int
    on_remote: bool = True
    """Whether the remote branch now holds the tree (pushed, or unchanged there); False after
    a `--no-push` commit, whose tree must then not be applied."""


def message(source_sha: str | None, observations: str, summary: str = "") -> str:
    """The commit message: `summary` (a subject, and a body saying what changed and why, from
    `commitmessage`), then dro's trailers."""
    text = summary.rstrip("\n") or (
        f"Render {source_sha[:12]}" if source_sha else "Render a local source"
    )
    return (
        f"{text}\n\nDro-Source-Commit: {source_sha or 'none'}\nDro-Observations: {observations}\n"
    )


class Writers:
    """The tree writers of one process, one per output repository's cache: `dro run` keeps
    them for its life (`pipeline.Warm.commit`), so that each pass's tree is the last one's
    updated where the render changed (`git.trees`)."""

    def __init__(self) -> None:
        self._writers: dict[str, gitrepo.TreeWriter] = {}
        self.compared = comparison.Compared()
        """The commit message's comparison of each pair of decisions, kept for the next
        pass (`branch.comparison.Compared`)."""

    def writer(self, url: str, state_dir: Path) -> gitrepo.TreeWriter:
        """The writer of the cache of `url`, opened on first use."""
        key = str(gitrepo.cache_path(state_dir, url))
        if key not in self._writers:
            self._writers[key] = gitrepo.TreeWriter(gitrepo.open_cache(url, state_dir))
        return self._writers[key]


def _since(tree: Mapping[str, bytes]) -> Callable[[Mapping[str, bytes]], frozenset[str] | None]:
    """What a tree writer asks of `tree`: where it differs from the tree written last
    (`branch.outputtree.difference`)."""
    return partial(outputtree.difference, tree)


def _held(tree: Mapping[str, bytes], hold: Mapping[str, bytes]) -> Mapping[str, bytes]:
    """`tree` with its `status/` files replaced by `hold`'s."""
    if isinstance(tree, outputtree.Tree):
        status = outputtree.under(tree, paths.STATUS)
        other = {p: d for p, d in hold.items() if tree.get(p) is not d}
        return outputtree.Tree.patched(tree, other, [p for p in status if p not in hold])
    kept = {p: d for p, d in tree.items() if not paths.is_status(p)}
    return {**kept, **hold}


def publish(
    url: str,
    state_dir: Path,
    *,
    branch: str,
    tree: Mapping[str, bytes],
    source_sha: str | None,
    commit_time: int | None,
    push: bool = True,
    observations: str = "declared",
    hold: Mapping[str, bytes] | None = None,
    author: tuple[str, str] = ("dro", "dro@localhost"),
    credentials: Credentials | None = None,
    summary: Callable[[], str] = str,
    fenced: fence.Fence = fence.UNFENCED,
    writers: Writers | None = None,
) -> PublishResult:
    """Commit `tree` on `branch` in the cache of `url` unless the remote branch holds it
    already, then push it (`fenced.check` first).

    `hold` holds back a change to `status/` alone: when `tree` with its `status/` files
    replaced by `hold` equals the tip, nothing is committed (the status interval applies).
    `summary` is called once a commit is due, for the text that opens its message (`message`):
    a steady pass does not pay for describing changes it does not commit. `writers` are the
    process's tree writers (`Writers`); without them the tree is written from the tip's."""
    credentials = gitrepo.url_credentials(url, credentials)
    writer = (writers or Writers()).writer(url, state_dir)
    repo = writer.repo
    start = gitrepo.remote_tip(repo, branch)
    base = gitrepo.tree_of(start) if start is not None else None
    root = writer.write(tree, base, since=_since(tree))
    held = None
    if hold is not None:
        written = _held(tree, hold)
        held = writer.write(written, since=_since(written))
    text = None
    for attempt in range(1, MAX_PUSH_ATTEMPTS + 1):
        tip = gitrepo.remote_tip(repo, branch)
        if tip is not None and gitrepo.tree_of(tip) in (root, held):
            return PublishResult(commit=None, pushed=False, attempts=attempt)
        text = text or message(source_sha, observations, summary())
        when = (
            commit_time
            if commit_time is not None
            else (gitrepo.commit_info(tip)[1] if tip is not None else 0)
        )
        oid = gitrepo.commit(
            repo, branch=branch, tree=root, parent=tip, message=text, author=author, time=when
        )
        if not push:
            sha = gitrepo.sha(oid)
            return PublishResult(commit=sha, pushed=False, attempts=attempt, on_remote=False)
        fenced.check(f"push {branch}")
        try:
            gitrepo.push(repo, branch, credentials)
        except gitrepo.NonFastForward:
            gitrepo.fetch(repo, credentials)
            continue
        return PublishResult(commit=gitrepo.sha(oid), pushed=True, attempts=attempt)
    raise GitError(f"push of {branch} kept losing the race after {MAX_PUSH_ATTEMPTS} attempts")
