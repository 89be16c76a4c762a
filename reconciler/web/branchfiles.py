"""One file of the output branch, read for the web view: a status file's sample, a manifest's
labels, a decision's diagnosis, the water-level limit of the source commit, a commit's trigger.

Each reads bytes (or one commit) and returns plain values; `branchdata` calls them once per
blob and keeps the answers. A file that is not as dro wrote it reads as nothing.

Called by `web.branchdata`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reconciler import yamlio
from reconciler.branch import statefiles, status
from reconciler.git import gitrepo

DEFAULT_LIMIT = {"cpu": 0.85, "memory": 0.85}
"""The limit when the source's dro.yaml sets none (as `domain.spec.SchedulerConfig`)."""
SOURCE_TRAILER = "Dro-Source-Commit:"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitView:
    """One output-branch commit: its subject is the pass's trigger."""

    sha: str
    at: float
    subject: str
    body: str
    source: str
    """The source commit it was rendered from (its trailer), or ""."""


def commit_view(commit: gitrepo.Commit) -> CommitView:
    """What a page says of one output-branch commit."""
    sha, at, message = gitrepo.commit_info(commit)
    subject, _, body = message.partition("\n")
    source = ""
    for line in body.splitlines():
        if line.startswith(SOURCE_TRAILER):
            source = line[len(SOURCE_TRAILER) :].strip()
    return CommitView(sha=sha, at=float(at), subject=subject, body=body.strip(), source=source)


def sample(path: str, data: bytes) -> tuple[float, dict[str, float]] | None:
    """(time, water levels) a status file records; time 0 for a declared cluster (its
    commit's time is used); None for a file that is not as dro wrote it."""
    found = status.sample(path, data, 0.0)
    if found is None:
        return None
    sample = found[1]
    return sample.at, status.water_level(sample.capacity, sample.used)


def labels(data: bytes) -> Mapping[str, str]:
    """`metadata.labels` of a rendered manifest. dro writes manifests with `yamlio.dump`
    (`metadata` a top-level block, its fields two spaces in), so only that block is parsed;
    a file in another shape is parsed whole."""
    text = data.decode("utf-8", "replace")
    start = text.find("\nmetadata:\n")
    if start >= 0 and text.startswith(("apiVersion:", "kind:")):
        end = start + len("\nmetadata:\n")
        while end < len(text) and text.startswith("  ", end):
            newline = text.find("\n", end)
            end = len(text) if newline < 0 else newline + 1
        data = text[start + 1 : end].encode("utf-8")
    try:
        document = yamlio.load_own("manifest", data)
    except yamlio.YamlError:
        return MappingProxyType({})
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    if not isinstance(labels, Mapping):
        return MappingProxyType({})
    return MappingProxyType({str(k): str(v) for k, v in sorted(labels.items())})


def limit(repo: gitrepo.Repository, tip: gitrepo.Commit) -> dict[str, float]:
    """`spec.waterLevelLimit` of dro.yaml at the source commit the tip names (the default
    when the source is not in this repository or sets none)."""
    source = commit_view(tip).source
    limit = dict(DEFAULT_LIMIT)
    try:
        commit = repo[source] if source else None
    except (KeyError, ValueError):
        return limit
    if not isinstance(commit, gitrepo.Commit):
        return limit
    blob = gitrepo.blob_at(commit, "dro.yaml")
    if blob is None:
        return limit
    try:
        document = yamlio.load_own("dro.yaml", gitrepo.blob_data(repo, blob))
    except yamlio.YamlError:
        return limit
    spec = document.get("spec") if isinstance(document, Mapping) else None
    given = spec.get("waterLevelLimit") if isinstance(spec, Mapping) else None
    if isinstance(given, Mapping):
        for resource, value in given.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                limit[str(resource)] = float(value)
    return limit


def diagnosis(path: str, data: bytes) -> Mapping[str, Any]:
    """`status.diagnosis` of a decision file, parsed; empty when it has none or the file is
    not as dro wrote it."""
    try:
        document = statefiles.status_document(path, data)
    except (yamlio.YamlError, statefiles.StateError):
        return {}
    body = document.get("status") if isinstance(document, Mapping) else None
    found = body.get("diagnosis") if isinstance(body, Mapping) else None
    return found if isinstance(found, Mapping) else {}
