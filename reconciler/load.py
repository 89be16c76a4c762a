"""Load: read the source files from a plain directory or from git, and dro's own state.

Only the folders dro understands are read: `dro.yaml`, `topology.yaml`, `clusters/`,
`datasets/`, `workloads/` and `policies/`, YAML files only. From the output branch dro reads
only its state (`decisions/`, `status/`); only `dro plan` reads the rendered manifests, and
only when the base side of a review is invalid (`Revisions`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import structlog

from reconciler import gitrepo, summary, yamlio
from reconciler.domain import Decision, ResourceKey, Source, SourceFile
from reconciler.errors import GitError, UsageError

log = structlog.get_logger("dro")

SOURCE_FILES = ("dro.yaml", "topology.yaml")
SOURCE_FOLDERS = ("clusters/", "datasets/", "workloads/", "policies/")
STATE_FOLDERS = ("decisions/", "status/")
Credentials = gitrepo.Credentials


def is_source_path(path: str) -> bool:
    """True for the repo-relative paths that make up a source."""
    if path in SOURCE_FILES:
        return True
    if not path.startswith(SOURCE_FOLDERS) or not path.endswith((".yaml", ".yml")):
        return False
    return not any(part.startswith(".") for part in path.split("/"))


def from_directory(root: Path) -> Source:
    """The source files of a plain directory. Symlinks are not followed out of it."""
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    base = root.resolve()
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            relative = full.relative_to(base).as_posix()
            if not is_source_path(relative):
                continue
            if full.is_symlink() and not full.resolve().is_relative_to(base):
                raise UsageError(f"{relative}: symlink points outside {root}")
            files.append(SourceFile(path=relative, data=full.read_bytes()))
    return Source(files=tuple(sorted(files, key=lambda f: f.path)))


def credentials_from(path: Path | None) -> Credentials | None:
    """https credentials from a file (`user:password` or a token) or DRO_GIT_* variables."""
    if path is not None:
        text = path.read_text(encoding="utf-8").strip()
        name, sep, secret = text.partition(":")
        return Credentials(username=name, password=secret) if sep else Credentials(token=text)
    token = os.environ.get("DRO_GIT_TOKEN")
    user, password = os.environ.get("DRO_GIT_USERNAME"), os.environ.get("DRO_GIT_PASSWORD")
    if token:
        return Credentials(username=user, token=token)
    if user or password:
        return Credentials(username=user, password=password)
    return None


def from_git(
    url: str, ref: str, state_dir: Path, *, credentials: Credentials | None = None
) -> Source:
    """The source files at `ref` of the repository at `url`, via a fetched bare cache."""
    repo = gitrepo.open_cache(url, state_dir)
    gitrepo.fetch(repo, credentials)
    return _source(repo, gitrepo.resolve(repo, ref))


def _source(repo: gitrepo.Repository, commit: gitrepo.Commit) -> Source:
    sha, when, _ = gitrepo.commit_info(commit)
    author = gitrepo.author_of(commit)
    files = gitrepo.read_files(repo, commit, SOURCE_FOLDERS + SOURCE_FILES)
    return Source(
        files=tuple(
            SourceFile(path=p, data=d) for p, d in sorted(files.items()) if is_source_path(p)
        ),
        commit=sha,
        commit_time=when,
        author=author,
    )


class Revisions:
    """Any revision of one repository, for `dro plan`. A local path is opened in place, so
    `HEAD`, `origin/main` or a sha of a pull request's checkout resolve as git resolves them;
    a URL is read through the fetched cache."""

    def __init__(
        self, location: str, state_dir: Path, *, credentials: Credentials | None = None
    ) -> None:
        self.local = "://" not in location and Path(location).exists()
        if self.local:
            self._repo = gitrepo.open_local(Path(location))
        else:
            self._repo = gitrepo.open_cache(location, state_dir)
            gitrepo.fetch(self._repo, credentials)

    def source(self, ref: str) -> Source:
        """The source files at `ref`."""
        return _source(self._repo, gitrepo.resolve(self._repo, ref, local=self.local))

    def tip(self, branch: str) -> str | None:
        """The sha of the output branch's tip, or None when it does not exist."""
        tip = gitrepo.branch_tip(self._repo, branch)
        return None if tip is None else gitrepo.commit_info(tip)[0]

    def state(self, branch: str, *, manifests: bool = False) -> dict[str, bytes]:
        """The tip of the output branch: its state, or every file with `manifests`; empty
        when the branch does not exist (locally, or as `origin/<branch>`)."""
        tip = gitrepo.branch_tip(self._repo, branch)
        if tip is None:
            return {}
        return gitrepo.read_files(self._repo, tip, () if manifests else STATE_FOLDERS)


def previous_state(url: str, branch: str, state_dir: Path) -> dict[str, bytes]:
    """`decisions/` and `status/` from the output branch of an already fetched cache: the
    remote's branch as fetched, never a commit of the cache that the remote does not have (a
    lost push, a `--no-push` trial), so every replica reads the same state."""
    repo = gitrepo.open_cache(url, state_dir)
    tip = gitrepo.remote_tip(repo, branch)
    if tip is None:
        return {}
    try:
        return gitrepo.read_files(repo, tip, STATE_FOLDERS)
    except KeyError as error:
        raise GitError(f"output branch {branch} is unreadable: {error}") from error


def previous_decisions(files: Mapping[str, bytes]) -> dict[ResourceKey, Decision]:
    """The decisions of the last pass, from the output branch's `decisions/` files.

    A file dro cannot read back (edited by hand, or from an older format) is skipped with a
    warning: its workload is then placed as if for the first time.
    """
    result: dict[ResourceKey, Decision] = {}
    for path, data in sorted(files.items()):
        if not path.startswith("decisions/") or not path.endswith(".yaml"):
            continue
        try:
            decision = _decision(path, data)
        except (yamlio.YamlError, KeyError, TypeError, ValueError) as error:
            log.warning("previous_decision_unreadable", path=path, error=str(error))
            continue
        result[decision.key] = decision
    return result


def _decision(path: str, data: bytes) -> Decision:
    """One decision file, its diagnosis (most of its bytes: a score per cluster) cut out
    unparsed and kept verbatim, so that re-writing it unchanged costs no parsing."""
    text = data.decode("utf-8")
    rest, diagnosis = yamlio.cut_block(text, "diagnosis", 2)
    decision = summary.decision_from_document(yamlio.load_own(path, rest.encode()))
    return decision if diagnosis is None else replace(decision, recorded=diagnosis)


def previous_phases(files: Mapping[str, bytes]) -> dict[str, str]:
    """Cluster name → its `status.phase` in the last pass's `status/clusters/` files ("" when
    it has none). Empty when the last pass wrote no status (or there was no last pass)."""
    phases: dict[str, str] = {}
    for path, data in sorted(files.items()):
        if not path.startswith("status/clusters/") or not path.endswith(".yaml"):
            continue
        name = path.rsplit("/", 1)[-1].removesuffix(".yaml")
        try:
            body = yamlio.load_own(path, data)
            status = body.get("status") if isinstance(body, Mapping) else None
            phase = status.get("phase", "") if isinstance(status, Mapping) else ""
        except yamlio.YamlError as error:
            log.warning("previous_status_unreadable", path=path, error=str(error))
            phase = ""
        phases[name] = phase if isinstance(phase, str) else ""
    return phases
