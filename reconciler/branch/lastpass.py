"""The last pass, read back from the output branch: its decisions and each cluster's phase.

The branch is state, never authority (`statefiles`): what is not as dro wrote it is warned
about and distrusted, never believed. Called by `pipeline` (every pass) and `review` (both
sides of a pull request), with the files `load.previous_state` read.

Called by `laststate` and `web.branchdata`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from reconciler import yamlio
from reconciler.branch import outputtree, paths, readback, statefiles
from reconciler.domain import Decision, ResourceKey

log = structlog.get_logger("dro")


def decisions(
    files: Mapping[str, bytes], memo: readback.ReadBack | None = None
) -> dict[ResourceKey, Decision]:
    """The decisions of the last pass, from the output branch's `decisions/` files.

    The branch is state, never authority (`statefiles`): a file that is not as dro wrote it
    (edited by hand, a wrong type, a bad time) is reported with a warning naming it. Its
    workload then comes back as a stand-in with `distrusted` set, so that it is divided again
    by its policy and says why; when even its resource cannot be read, it is skipped and the
    workload is placed as if for the first time. With a `memo` and `files` read by blob id
    (`readback.Blobs`), a file seen before is not parsed again.
    """
    if memo is not None and isinstance(files, readback.Blobs):
        found = memo.decisions(files, lambda path: _read(files, path, memo))
    else:
        found = [_read(files, p, memo) for p in sorted(files) if paths.is_decision(p)]
    return {decision.key: decision for decision in found if decision is not None}


def _read(files: Mapping[str, bytes], path: str, memo: readback.ReadBack | None) -> Decision | None:
    """The decision file at `path`, warned about when it is not as dro wrote it (None when
    even its resource cannot be read)."""
    try:
        decision = _decision(files, path, memo)
    except (yamlio.YamlError, statefiles.StateError, KeyError, TypeError, ValueError) as error:
        log.warning("previous_decision_unreadable", path=path, error=_said(error))
        return None
    if decision.distrusted is not None:
        log.warning("previous_decision_distrusted", path=path, error=decision.distrusted)
    return decision


def _decision(files: Mapping[str, bytes], path: str, memo: readback.ReadBack | None) -> Decision:
    if memo is None or not isinstance(files, readback.Blobs):
        return statefiles.decision(path, files[path])
    return memo.decision(path, files.blob_id(path), lambda: files[path])


def status_of(
    files: Mapping[str, bytes], path: str, memo: readback.ReadBack | None = None
) -> Mapping[str, Any]:
    """The checked `status` of the `status/` file at `path` (`statefiles.status_of`), from
    the `memo` when `files` are read by blob id and the file was seen before."""
    if memo is None or not isinstance(files, readback.Blobs):
        return statefiles.status_of(path, files[path])
    return memo.status(path, files.blob_id(path), lambda: files[path])


def statuses(
    files: Mapping[str, bytes], memo: readback.ReadBack | None = None
) -> dict[str, dict[str, Any]]:
    """Cluster name → the `status` of its file (`status.previous_statuses`; unreadable ones
    skipped, `phases` warns about them), with a `memo` as `status_of`."""
    found: dict[str, dict[str, Any]] = {}
    for path in _status_clusters(files):
        cluster = paths.status_cluster(path)
        if cluster is None:
            continue
        try:
            found[cluster] = dict(status_of(files, path, memo))
        except (yamlio.YamlError, statefiles.StateError):
            continue
    return found


def _status_clusters(files: Mapping[str, bytes]) -> Sequence[str]:
    """The paths under `status/clusters/`, sorted; the other files are not sorted."""
    return outputtree.under(files, paths.STATUS_CLUSTERS)


def _said(error: Exception) -> str:
    return error.problem.message if isinstance(error, yamlio.YamlError) else str(error)


def phases(files: Mapping[str, bytes], memo: readback.ReadBack | None = None) -> dict[str, str]:
    """Cluster name → its `status.phase` in the last pass's `status/clusters/` files ("" when
    it has none, or its file is not as dro wrote it). Empty when the last pass wrote no status
    (or there was no last pass)."""
    phases: dict[str, str] = {}
    for path in _status_clusters(files):
        name = paths.status_cluster(path)
        if name is None:
            continue
        try:
            phase = status_of(files, path, memo).get("phase") or ""
        except (yamlio.YamlError, statefiles.StateError) as error:
            log.warning("previous_status_unreadable", path=path, error=_said(error))
            phase = ""
        phases[name] = phase
    return phases
