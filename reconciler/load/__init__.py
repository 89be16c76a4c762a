"""Load: read the source files from a plain directory or from git, and dro's own state.

Only the folders dro understands are read: `dro.yaml`, `topology.yaml`, `clusters/`,
`datasets/`, `workloads/` and `policies/`, YAML files only. From the output branch dro reads
only its state (`decisions/`, `status/`); only `dro plan` reads the rendered manifests, and
only when the base side of a review is invalid (`Revisions`).

A folder under `workloads/` holding a kustomization or a Helm chart is read whole (its
templates, patches and helpers whatever their names) and built by the tool (`builds`): the
`Source` holds the tool's output in its place.

Called by 11 modules, among them `cli.audit`, `laststate`, `pipeline`, `review`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import structlog

from reconciler import redact
from reconciler.branch import paths, readback, statefiles
from reconciler.domain import Source, SourceFile
from reconciler.domain.credentials import Credentials
from reconciler.domain.forecast import History
from reconciler.errors import GitError, UsageError
from reconciler.git import blobids, gitrepo
from reconciler.load import buildargs, builds, sourcecheck
from reconciler.load import history as history

log = structlog.get_logger("dro")

SOURCE_FILES = ("dro.yaml", "topology.yaml")
SOURCE_FOLDERS = ("clusters/", "datasets/", "workloads/", "policies/")


def is_source_path(path: str) -> bool:
    """True for the repo-relative paths that make up a source."""
    if path in SOURCE_FILES:
        return True
    if not path.startswith(SOURCE_FOLDERS) or not path.endswith((".yaml", ".yml")):
        return False
    return not any(part.startswith(".") for part in path.split("/"))


def in_source(path: str) -> bool:
    """True for `dro.yaml`, `topology.yaml`, the source folders and anything not hidden in
    them: where a symbolic link or a submodule is reported instead of silently skipped."""
    if path in SOURCE_FILES or f"{path}/" in SOURCE_FOLDERS:
        return True
    if not path.startswith(SOURCE_FOLDERS):
        return False
    return not any(part.startswith(".") for part in path.split("/"))


def from_directory(root: Path) -> Source:
    """The source files of a plain directory. Symbolic links and nested git repositories
    (submodules) are not read but listed in `Source.links`, as when reading git. A directory
    that is no dro repository (`sourcecheck`) is a UsageError naming what is missing."""
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    source = _directory_source(root)
    where = f"the current directory ({Path.cwd()})" if str(root) == "." else str(root)
    sourcecheck.require_dro_files(source, where, nested=sourcecheck.nested_repos(root))
    return source


def _directory_source(root: Path) -> Source:
    base = root.resolve()
    files: dict[str, bytes] = {}
    links: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        for name in sorted([*dirnames, *filenames]):
            full = here / name
            relative = full.relative_to(base).as_posix()
            if not in_source(relative):
                continue
            if full.is_symlink():
                links[relative] = gitrepo.SYMLINK
            elif name in dirnames and (full / ".git").exists():
                links[relative] = gitrepo.SUBMODULE
            elif name in filenames and (is_source_path(relative) or _may_be_built(relative)):
                files[relative] = full.read_bytes()
        dirnames[:] = sorted(  # only the source folders: a home directory is not walked
            d
            for d in dirnames
            if in_source(relative := (here / d).relative_to(base).as_posix())
            and relative not in links
        )
    return builds.expand(
        Source(files=_files(files), links=tuple(sorted(links.items()))),
    )


def _may_be_built(path: str) -> bool:
    """Any file under `workloads/`: a kustomize or Helm folder's templates and patches."""
    return path.startswith(buildargs.WORKLOADS)


def _files(found: dict[str, bytes]) -> tuple[SourceFile, ...]:
    """The source files among `found`: the YAML files dro reads, and every file of a
    kustomize or Helm folder (`builds.keep`)."""
    kept = builds.keep(found, is_source_path)
    return tuple(SourceFile(path=p, data=d) for p, d in sorted(kept.items()))


def source_of(
    files: dict[str, bytes],
    links: dict[str, str],
    *,
    commit: str | None = None,
    commit_time: int | None = None,
    author: str | None = None,
) -> Source:
    """A `Source` from the files and links read from a tree at a commit, its kustomize and
    Helm folders built (`builds.expand`)."""
    return builds.expand(
        Source(
            files=_files(files),
            links=tuple((p, what) for p, what in sorted(links.items()) if in_source(p)),
            commit=commit,
            commit_time=commit_time,
            author=author,
        )
    )


def credentials_from(
    path: Path | None, *, otherwise: Credentials | None = None
) -> Credentials | None:
    """https credentials from a file (`user:password` or a token), else `otherwise` (those of
    the environment, which `settings` reads). A file that cannot be read is a UsageError
    naming it (never quoting it)."""
    if path is None:
        return otherwise
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UsageError(f"--git-credentials-file {path}: {reason}") from None
    name, sep, secret = text.partition(":")
    return Credentials(username=name, password=secret) if sep else Credentials(token=text)


BlobCache = gitrepo.BlobCache
"""The source files of the last read, by blob id, for the next one (`dro run`)."""


def from_git(
    url: str,
    ref: str,
    state_dir: Path,
    *,
    credentials: Credentials | None = None,
    blobs: gitrepo.BlobCache | None = None,
) -> Source:
    """The source files at `ref` of the repository at `url`, via a fetched bare cache.
    A local path that does not exist, a repository without commits and a ref without dro's
    files are UsageErrors; a cache this call created is removed again when its first fetch
    fails, so a typo leaves nothing behind in the state directory. `blobs` keeps the files
    of the last call for the next one (`dro run`), which reads only the blobs that changed."""
    sourcecheck.require_local_repo(url)
    with sourcecheck.removed_on_failure(gitrepo.cache_path(state_dir, url), state_dir):
        repo = gitrepo.open_cache(url, state_dir)
        gitrepo.fetch(repo, gitrepo.url_credentials(url, credentials))
        sourcecheck.require_commits(repo, url)
    source = _source(repo, gitrepo.resolve(repo, ref), blobs)
    sourcecheck.require_dro_files(source, f"{redact.urls(url)} at {ref}")
    return source


def _source(
    repo: gitrepo.Repository, commit: gitrepo.Commit, blobs: gitrepo.BlobCache | None = None
) -> Source:
    sha, when, _ = gitrepo.commit_info(commit)
    author = gitrepo.author_of(commit)
    # the folders without their slash, so that a link in place of a whole folder is seen too
    wanted = SOURCE_FILES + tuple(folder.rstrip("/") for folder in SOURCE_FOLDERS)
    files, links = gitrepo.read_tree(repo, commit, wanted, blobs)
    return source_of(files, links, commit=sha, commit_time=when, author=author)


class Revisions:
    """Any revision of one repository, for `dro plan`. A local path is opened in place, so
    `HEAD`, `origin/main` or a sha of a pull request's checkout resolve as git resolves them;
    a URL is read through the fetched cache."""

    def __init__(
        self, location: str, state_dir: Path, *, credentials: Credentials | None = None
    ) -> None:
        sourcecheck.require_local_repo(location)
        self.local = "://" not in location and Path(location).exists()
        self._location = redact.urls(location)
        if self.local:
            self._repo = gitrepo.open_local(Path(location))
        else:
            with sourcecheck.removed_on_failure(gitrepo.cache_path(state_dir, location), state_dir):
                self._repo = gitrepo.open_cache(location, state_dir)
                gitrepo.fetch(self._repo, gitrepo.url_credentials(location, credentials))
                sourcecheck.require_commits(self._repo, location)
        if self.local:
            sourcecheck.require_commits(self._repo, location)

    def source(self, ref: str, *, may_be_empty: bool = False) -> Source:
        """The source files at `ref`; a UsageError when they hold no dro repository, unless
        `may_be_empty` (the base of the review that adds dro to a repository)."""
        found = _source(self._repo, gitrepo.resolve(self._repo, ref, local=self.local))
        if not may_be_empty:
            sourcecheck.require_dro_files(found, f"{self._location} at {ref}")
        return found

    def commit_source(self, sha: str) -> Source | None:
        """The source files at commit `sha`, or None when it is not here (the template a
        rollout keeps in force, `laststate.templates`)."""
        try:
            return _source(self._repo, gitrepo.resolve(self._repo, sha, local=self.local))
        except UsageError:
            return None

    def tip(self, branch: str) -> str | None:
        """The sha of the output branch's tip, or None when it does not exist."""
        tip = gitrepo.branch_tip(self._repo, branch)
        return None if tip is None else gitrepo.commit_info(tip)[0]

    def history(self, branch: str) -> history.Reader:
        """A reader of the status history on the output branch (`history.read`)."""

        def read(now: float, window: float) -> History:
            tip = gitrepo.branch_tip(self._repo, branch)
            return history.read(self._repo, tip, now=now, window=window)

        return read

    def state(self, branch: str, *, manifests: bool = False) -> dict[str, bytes]:
        """The tip of the output branch: its state, or every file with `manifests`; empty
        when the branch does not exist (locally, or as `origin/<branch>`)."""
        tip = gitrepo.branch_tip(self._repo, branch)
        if tip is None:
            return {}
        files = gitrepo.read_files(self._repo, tip, () if manifests else paths.STATE_FOLDERS)
        return dict(statefiles.adopt_unsealed(files))


def previous_state(url: str, branch: str, state_dir: Path) -> dict[str, bytes]:
    """`decisions/` and `status/` from the output branch of an already fetched cache: the
    remote's branch as fetched, never a commit of the cache that the remote does not have (a
    lost push, a `--no-push` trial), so every replica reads the same state."""
    return dict(previous_blobs(url, branch, state_dir))


def output_tip(url: str, branch: str, state_dir: Path) -> str | None:
    """The sha of the output branch as last fetched (the remote's, never a local commit of
    the cache), or None before the first pass."""
    tip = gitrepo.remote_tip(gitrepo.open_cache(url, state_dir), branch)
    return None if tip is None else str(tip.id)


def previous_blobs(url: str, branch: str, state_dir: Path) -> Mapping[str, bytes]:
    """`previous_state`, read lazily: the paths and blob ids of `decisions/` and `status/`
    (only those folders are walked), each blob read when asked for (`readback.Blobs`), so
    that a reader that knows what a blob id parses to reads no bytes. A branch written before
    seals existed comes back as `previous_state` gives it (read whole, sealed as it is)."""
    repo = gitrepo.open_cache(url, state_dir)
    tip = gitrepo.remote_tip(repo, branch)
    if tip is None:
        return {}
    try:
        ids = blobids.blob_ids(repo, tip, paths.STATE_FOLDERS)
    except KeyError as error:
        raise GitError(f"output branch {branch} is unreadable: {error}") from error
    files = readback.Blobs(ids, lambda blob: gitrepo.blob_data(repo, blob))
    adopted = statefiles.adopt_unsealed(files)
    return files if adopted is files else dict(adopted)


def previous_rendered(url: str, branch: str, state_dir: Path) -> Callable[[str], bytes | None]:
    """A reader of single files the last pass rendered on the output branch, for what a
    suspended dispatch keeps (`render.tree`'s `kept`); it reads only the paths asked for,
    and None when the branch or the file does not exist. Nothing else reads the rendered
    manifests back: they are never input to scheduling."""
    repo = gitrepo.open_cache(url, state_dir)
    tip = gitrepo.remote_tip(repo, branch) or gitrepo.branch_tip(repo, branch)

    def read(path: str) -> bytes | None:
        if tip is None:
            return None
        return gitrepo.read_files(repo, tip, (path,)).get(path)

    return read


def source_at(url: str, state_dir: Path, sha: str) -> Source | None:
    """The source files at commit `sha` of an already fetched cache, without fetching; None
    when the cache does not hold it (a rollout's template in force, `laststate.templates`)."""
    repo = gitrepo.open_cache(url, state_dir)
    try:
        return _source(repo, gitrepo.resolve(repo, sha))
    except UsageError:
        return None
