"""Is this a dro source at all? The checks `load` makes before anything is validated.

A source is a dro repository when it holds `dro.yaml` or at least one file under `clusters/`:
without either there is nothing to place on, and a wrong folder or ref would otherwise pass
`validate` as "0 files" and give an empty placement; that is a `UsageError`, as a bad commit
is. A `--repo` that is a local path must exist, and a repository must have a commit: those are
`GitError`s, which a service retries (the path may be mounted, the first commit pushed,
later). Each one exits 1 and names what is missing. A cache that `load` created for a fetch
that then failed is removed again, so a typo in `--repo` leaves nothing in the state directory.

Called by `load` and `service.api.trail`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reconciler import redact
from reconciler.domain import Source
from reconciler.errors import GitError, UsageError
from reconciler.git import gitrepo

_SCP_LIKE = re.compile(r"[^/]+:")
"""git's `host:path` form: a colon before the first slash (as `git clone` tells them apart)."""
_READ = "dro reads dro.yaml, clusters/, workloads/, policies/, datasets/ and topology.yaml"


def is_local_path(location: str) -> bool:
    """True when `--repo` names a path on this machine rather than a URL."""
    return "://" not in location and not _SCP_LIKE.match(location)


def require_local_repo(location: str) -> None:
    """A local `--repo` path (plain or `file://`) must exist."""
    path = location.removeprefix("file://") if location.startswith("file://") else location
    if (is_local_path(location) or location.startswith("file://")) and not Path(path).exists():
        raise GitError(f"--repo {redact.urls(location)}: no such directory")


def is_dro_source(source: Source) -> bool:
    """True when the source holds `dro.yaml` or a file under `clusters/`."""
    return any(f.path == "dro.yaml" or f.path.startswith("clusters/") for f in source.files)


def require_dro_files(source: Source, where: str, *, nested: tuple[str, ...] = ()) -> None:
    """A UsageError naming what `where` lacks, when `source` is no dro repository. `nested`
    are sub-folders that are dro repositories, offered as what the user may have meant."""
    if is_dro_source(source):
        return
    message = f"{where} is not a dro repository: it has no dro.yaml and no clusters/ folder"
    found = sorted({f.path.split("/", 1)[0] + ("/" if "/" in f.path else "") for f in source.files})
    if found:
        message += f" (only {', '.join(found)})"
    if nested:
        message += "; did you mean " + " or ".join(nested) + "?"
    else:
        message += f"; {_READ}"
    raise UsageError(message)


def nested_repos(root: Path) -> tuple[str, ...]:
    """Direct sub-folders of `root` that hold a `dro.yaml` (`dro validate .` one level up)."""
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return ()
    return tuple(str(child) for child in children if (child / "dro.yaml").is_file())[:3]


def require_commits(repo: gitrepo.Repository, location: str) -> None:
    """A repository without any commit (just `git init`) has no source to read. (libgit2's
    `is_empty` misses one whose HEAD names another branch than its default.)"""
    if repo.head_is_unborn and not any(True for _ in repo.references):
        raise GitError(f"--repo {redact.urls(location)}: the repository has no commits yet")


@contextmanager
def removed_on_failure(cache: Path, state_dir: Path) -> Iterator[None]:
    """Remove what the block created under `state_dir` (the cache, and the folders made for
    it) when the block raises; leave everything that existed before."""
    created = [p for p in (state_dir, state_dir / "repos", cache) if not p.exists()]
    try:
        yield
    except BaseException:
        if created:
            shutil.rmtree(created[0], ignore_errors=True)
        raise
