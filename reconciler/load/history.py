"""The status history: what the output branch's `status/clusters/` files recorded, pass by pass.

Prediction (`predict`) fits each cluster's background load to it. `read` walks the output
branch's first-parent history back from its tip and reads each cluster's status file at each
commit (`status.sample`), until a commit holds nothing newer than `now − window`; a commit
with the same status files at the same time as the one after it is skipped unread. (An output
commit carries its source commit's time, which stays old while only observations change, so
the walk goes by the times of the samples, not of the commits.) A status file changes
far less often than the branch does, so each version (blob) is parsed once. Samples of one
cluster are returned oldest first, one per distinct time (an observed cluster's `observedAt`,
a declared one's commit time); stale and unreachable figures are left out.

Called by `load`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from reconciler.branch import paths, status
from reconciler.domain.forecast import ClusterSample, History
from reconciler.git import gitrepo

Reader = Callable[[float, float], History]
"""(now, window) → the history within the window (`reader`)."""


def read(
    repo: gitrepo.Repository, tip: gitrepo.Commit | None, *, now: float, window: float
) -> History:
    """The status history of the branch ending at `tip` within `window` seconds before `now`."""
    if tip is None:
        return {}
    parsed: dict[str, tuple[str, ClusterSample] | None] = {}
    found: dict[str, dict[float, ClusterSample]] = {}
    since = now - window
    seen: tuple[str | None, float] | None = None
    for commit in gitrepo.first_parents(tip):
        committed_at = float(gitrepo.commit_info(commit)[1])
        folder = (gitrepo.folder_id(commit, paths.STATUS_CLUSTERS), committed_at)
        if folder == seen:
            continue  # the same status files at the same time: nothing new
        seen = folder
        newest = committed_at
        for path, blob in gitrepo.blobs_under(repo, commit, paths.STATUS_CLUSTERS).items():
            if blob not in parsed:
                # Parsed at time 0: an observed file carries its own time, a declared one
                # takes the time of each commit that holds it.
                parsed[blob] = status.sample(path, gitrepo.blob_data(repo, blob), 0.0)
            entry = parsed[blob]
            if entry is None:
                continue
            cluster, recorded = entry
            if recorded.at == 0.0:
                recorded = replace(recorded, at=committed_at)
            newest = max(newest, recorded.at)
            if since <= recorded.at <= now:
                # Newest commit first: the first one seen for a time wins.
                found.setdefault(cluster, {}).setdefault(recorded.at, recorded)
        if newest < since:
            break  # this commit and every older one hold only figures before the window
    return {
        cluster: tuple(samples[at] for at in sorted(samples))
        for cluster, samples in sorted(found.items())
    }


def reader(url: str, branch: str, state_dir: Path) -> Reader:
    """A reader of the status history on the output branch of the fetched cache of `url`
    (the remote's branch as fetched, else the local one), opened only when called."""

    def history(now: float, window: float) -> History:
        repo = gitrepo.open_cache(url, state_dir)
        tip = gitrepo.remote_tip(repo, branch) or gitrepo.branch_tip(repo, branch)
        return read(repo, tip, now=now, window=window)

    return history
