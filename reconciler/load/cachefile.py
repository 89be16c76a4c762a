"""Cache files in the state directory: what a stage parsed, kept from one process to the next.

One file per repository and kind (`parsed`: the source files; `readback`: the output branch's
state files), beside the repository's bare cache (`gitrepo.cache_path`). The state directory
may be shared, so a cache file is data, never code: JSON, whose loading runs nothing. Its first
line is a header naming the format, its version, the kind, the repository (a sha256 of its
address without credentials: the address itself is not written) and the sha256 of the rest of
the file. A file whose header or digest does not match (corrupt, truncated, written by another
version or for another repository) is ignored with a warning and rebuilt by the pass; a cache
is an optimisation only, so nothing it holds is ever the sole source of a result.

Called by `laststate` and `pipeline.warm`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Protocol

import structlog

from reconciler import redact
from reconciler.git import gitrepo

log = structlog.get_logger("dro")

FORMAT = "dro cache"
VERSION = 1
"""Raised whenever what an entry holds changes shape: older files are then rebuilt."""


class Portable(Protocol):
    """A cache that can be written to a file and read back (`validate.parsecache`,
    `branch.readback`)."""

    def exported(self) -> dict[str, Any]:
        """The entries this pass used, as JSON values."""
        ...

    def adopt(self, entries: dict[str, Any]) -> None:
        """Take the entries a file held (only those not already in memory)."""
        ...

    def prune(self) -> None:
        """Drop the entries this pass did not use."""
        ...

    @property
    def changed(self) -> bool:
        """True when the cache holds entries its file does not, or holds unused ones."""
        ...


def path_of(state_dir: Path, url: str, kind: str) -> Path:
    """Where the `kind` cache of the repository at `url` lives."""
    repo = gitrepo.cache_path(state_dir, url)
    return repo.with_name(f"{repo.name.removesuffix('.git')}.{kind}.json")


def repo_id(url: str) -> str:
    """The repository a cache file belongs to: a digest of its address without credentials."""
    return hashlib.sha256(redact.urls(url).encode()).hexdigest()


def read(state_dir: Path, url: str, kind: str) -> dict[str, Any] | None:
    """The entries of the `kind` cache file of `url`; None when there is none, or when it is
    not one this dro wrote for this repository (warned about: the pass rebuilds it)."""
    where = path_of(state_dir, url, kind)
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        log.warning("cache_unreadable", path=str(where), error=error.strerror)
        return None
    why = _refused(data, url, kind)
    if why is not None:
        log.warning("cache_ignored", path=str(where), error=why)
        return None
    try:
        entries = json.loads(data.partition(b"\n")[2])
    except ValueError:
        entries = None
    if not isinstance(entries, dict):
        log.warning("cache_ignored", path=str(where), error="corrupt (not a JSON object)")
        return None
    return entries


def _refused(data: bytes, url: str, kind: str) -> str | None:
    """Why a cache file's content is not trusted, or None when it is."""
    line, newline, body = data.partition(b"\n")
    try:
        header = json.loads(line)
    except ValueError:
        return "not a dro cache file (its first line is no JSON header)"
    if not newline or not isinstance(header, dict) or header.get("format") != FORMAT:
        return "not a dro cache file"
    if header.get("version") != VERSION:
        found = header.get("version")
        return f"written by another version of dro (cache format {found!r}, not {VERSION})"
    if header.get("kind") != kind:
        return f"not a {kind} cache file"
    if header.get("repo") != repo_id(url):
        return "written for another repository"
    if header.get("sha256") != hashlib.sha256(body).hexdigest():
        return "corrupt (its digest does not match its content)"
    return None


def write(state_dir: Path, url: str, kind: str, entries: dict[str, Any]) -> None:
    """Replace the `kind` cache file of `url` with `entries`, atomically (a reader sees the
    old file or the new one). A file that cannot be written is warned about; the pass goes on."""
    where = path_of(state_dir, url, kind)
    body = json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()
    header = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "repo": repo_id(url),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    staged = where.with_name(f"{where.name}.{os.getpid()}.tmp")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        staged.write_bytes(json.dumps(header, sort_keys=True).encode() + b"\n" + body)
        os.replace(staged, where)
    except OSError as error:
        log.warning("cache_unwritable", path=str(where), error=error.strerror)
        staged.unlink(missing_ok=True)


def restore(cache: Portable, state_dir: Path | None, url: str | None, kind: str) -> None:
    """Seed `cache` from its file (nothing without a state directory or a repository)."""
    if state_dir is None or url is None:
        return
    entries = read(state_dir, url, kind)
    if entries is not None:
        cache.adopt(entries)


def keep(cache: Portable, state_dir: Path | None, url: str | None, kind: str) -> None:
    """Write `cache` to its file when it changed; without a state directory, only drop the
    entries this pass did not use, so that memory holds one pass's files."""
    if state_dir is None or url is None:
        cache.prune()
        return
    if not cache.changed:
        cache.prune()
        return
    write(state_dir, url, kind, cache.exported())
