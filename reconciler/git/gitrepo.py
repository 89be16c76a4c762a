"""Git through libgit2 (pygit2): bare caches, fetch, reading trees, writing commits, push.

The only module that imports pygit2. Nothing here checks out a work tree or runs the git
command (`worktree_changes` only reads a work tree's status, for `dro plan`): blobs are read
from trees and trees are written from memory by a `TreeWriter` (`git.trees`), which updates
the tree it holds (the one it wrote last, or the parent commit's), so a commit that changes one
file hashes only that file and rebuilds only the folders above it.

Called by 13 modules, among them `audit`, `commit`, `git.blobids`, `load`.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pygit2

from reconciler import redact as redaction
from reconciler.domain.credentials import Credentials
from reconciler.errors import GitError, UsageError
from reconciler.git import repack, trees

Repository = pygit2.Repository
TreeWriter = trees.TreeWriter
Commit = pygit2.Commit
FETCH_REFSPECS = ["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"]

# libgit2 hashes every object again each time it reads one, to check its name; git itself
# never does outside `git fsck`. A push walks the remote's whole last tree (libgit2 marks
# every object of it as already there), so on an output branch of 300,000 files that check
# was a third of the push.
pygit2.option(pygit2.enums.Option.ENABLE_STRICT_HASH_VERIFICATION, False)


def redact(url: str) -> str:
    """The URL without any user information, safe to log and to put in errors."""
    return redaction.urls(url)


def url_credentials(url: str, given: Credentials | None) -> Credentials | None:
    """The credentials to use for `url`: those `given` (flag, file or environment), else the
    user information written in the URL itself (`https://user:token@host/repo`), which dro
    never stores in its cache's configuration."""
    if given is not None:
        return given
    _, username, password = redaction.userinfo(url)
    if username is None and password is None:
        return None
    return Credentials(username=username, password=password)


class _Callbacks(pygit2.RemoteCallbacks):
    """Credentials for https, and a record of refs the remote refused on push."""

    def __init__(self, credentials: Credentials | None) -> None:
        user_pass = None
        if credentials is not None and credentials.token:
            user_pass = pygit2.UserPass(credentials.username or "x-access-token", credentials.token)
        elif credentials is not None:
            user_pass = pygit2.UserPass(credentials.username or "", credentials.password or "")
        super().__init__(credentials=user_pass)
        self.rejected: list[str] = []

    def push_update_reference(self, refname: str, message: str | None) -> None:
        """Remember a refused ref update (libgit2 reports it here, not as an error)."""
        if message:
            self.rejected.append(f"{refname}: {message}")


def _callbacks(credentials: Credentials | None) -> _Callbacks:
    return _Callbacks(credentials)


def cache_path(state_dir: Path, url: str) -> Path:
    """Where the bare cache of `url` lives under the state directory."""
    digest = hashlib.sha256(redact(url).encode()).hexdigest()[:16]
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", redact(url).rstrip("/").rsplit("/", 1)[-1])[:40]
    return state_dir / "repos" / f"{tail}-{digest}.git"


def open_cache(url: str, state_dir: Path) -> pygit2.Repository:
    """The bare cache for `url`, created on first use with `origin` pointing at it."""
    path = cache_path(state_dir, url)
    # The cache's config on disk names the remote without user information: a token in
    # the URL is passed to libgit2 per request (`url_credentials`), never written down.
    stored = redact(url)
    try:
        if path.exists():
            repo = pygit2.Repository(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            repo = pygit2.init_repository(str(path), bare=True)
            repo.remotes.create("origin", stored, FETCH_REFSPECS[0])
        if repo.remotes["origin"].url != stored:
            repo.remotes.set_url("origin", stored)
    except pygit2.GitError as error:
        raise GitError(
            f"cannot open the cache of {stored} at {path}: {redact(str(error))}"
        ) from error
    return repo


def open_local(path: Path) -> pygit2.Repository:
    """The repository holding `path` (a work tree or a bare repository), opened in place."""
    found = pygit2.discover_repository(str(path))
    if found is None:
        raise UsageError(f"{path} is not inside a git repository")
    try:
        return pygit2.Repository(found)
    except pygit2.GitError as error:
        raise GitError(f"cannot open the git repository at {path}: {redact(str(error))}") from error


def proxy_for(url: str) -> str | None:
    """The proxy that a fetch or push of `url` goes through, chosen from the environment as
    git and curl choose it: `https_proxy` for an https remote (either case), none for a host
    that `no_proxy` names, nor for git://, ssh or local remotes. libgit2 left to itself uses
    no proxy at all. (libgit2 tunnels https through a proxy with CONNECT; it connects to an
    http remote directly whatever it is told, so `http_proxy` is passed but has no effect.)"""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    found = urllib.request.getproxies_environment().get(parts.scheme)
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if not found or urllib.request.proxy_bypass(host):
        return None
    return found


def fetch(repo: pygit2.Repository, credentials: Credentials | None = None) -> None:
    """Fetch every branch and tag of `origin` into the cache, pruning the ones the remote no
    longer has (`git fetch --prune`): a deleted branch must not live on in the cache. Then,
    as git does after a fetch, merge the cache's packs when they have grown many
    (`repack.auto`)."""
    remote = repo.remotes["origin"]
    try:
        remote.fetch(
            FETCH_REFSPECS,
            callbacks=_callbacks(credentials),
            prune=pygit2.enums.FetchPrune.PRUNE,
            proxy=proxy_for(remote.url or ""),
        )
    except (pygit2.GitError, OSError) as error:
        raise GitError(
            f"fetch from {redact(remote.url or '')} failed: {redact(str(error))}"
        ) from error
    repack.auto(repo)


def resolve(repo: pygit2.Repository, ref: str, *, local: bool = False) -> pygit2.Commit:
    """A fetched branch, a tag or a commit sha; raises UsageError naming the ref.

    In a cache, the fetched `origin/<ref>` comes first. In a repository opened in place
    (`local`), any revision git itself accepts comes first: `HEAD`, `origin/main`, a sha."""
    names = [f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref]
    if local:
        names.insert(0, ref)
    for name in names:
        try:
            found = repo.revparse_single(name)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        commit = found.peel(pygit2.Commit)
        if isinstance(commit, pygit2.Commit):
            return commit
    raise UsageError(
        f"ref {ref!r} not found in {_where(repo, local)}: no such branch, tag or commit"
    )


def _where(repo: pygit2.Repository, local: bool) -> str:
    """How an error names a repository: the remote's URL for a cache, else its path."""
    if not local and "origin" in [remote.name for remote in repo.remotes]:
        return redact(repo.remotes["origin"].url or "the source repository")
    return str(Path(repo.workdir or repo.path))


def branch_tip(repo: pygit2.Repository, branch: str) -> pygit2.Commit | None:
    """The commit a local or fetched branch points at, or None when it does not exist."""
    for name in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}"):
        reference = repo.references.get(name)
        if reference is not None:
            commit = repo[reference.target]
            assert isinstance(commit, pygit2.Commit)
            return commit
    return None


SYMLINK = "a symbolic link"
SUBMODULE = "a submodule (gitlink)"


def walk(
    repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "", wanted: tuple[str, ...] = ()
) -> Iterator[tuple[str, pygit2.Object | str]]:
    """(path, blob) for every file under `tree`, depth first, in git's (sorted) order, and
    (path, `SYMLINK` or `SUBMODULE`) for a symbolic link or a gitlink, which have no file.
    With `wanted`, a folder no wanted path can start in is not entered (the output branch's
    `clusters/**` when only its state is read)."""
    for path, found in _files(repo, tree, prefix, wanted):
        yield path, found if isinstance(found, str) else repo[found]


def _files(
    repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, wanted: tuple[str, ...]
) -> Iterator[tuple[str, pygit2.Oid | str]]:
    """`walk`, with each blob's id in place of the blob."""
    for entry in entries_under(repo, tree, prefix, wanted):
        path = f"{prefix}{entry.name}"
        if entry.type_str == "tree":
            subtree = repo[entry.id]
            assert isinstance(subtree, pygit2.Tree)
            yield from _files(repo, subtree, f"{path}/", wanted)
        elif entry.type_str == "commit":
            yield path, SUBMODULE
        elif entry.filemode == pygit2.enums.FileMode.LINK:
            yield path, SYMLINK
        elif entry.type_str == "blob":
            yield path, entry.id


class BlobCache:
    """Blob id → bytes of the blobs the last `read_tree` read, so that reading the next
    commit's tree reads only the blobs that changed (a blob id is the digest of its bytes).
    It holds the blobs of one tree: each read drops the ones it no longer uses."""

    def __init__(self) -> None:
        self._last: dict[pygit2.Oid, bytes] = {}
        self._used: dict[pygit2.Oid, bytes] = {}
        self.read = 0
        """How many blobs the last tree read took from the repository."""

    def begin(self) -> None:
        """A tree read starts: what the last one used is what this one may take."""
        if self._used:
            self._last, self._used = self._used, {}
        self.read = 0

    def data(self, repo: pygit2.Repository, oid: pygit2.Oid) -> bytes:
        """The bytes of blob `oid` of `repo`."""
        found = self._last.get(oid)
        if found is None:
            blob = repo[oid]
            assert isinstance(blob, pygit2.Blob)
            found = blob.data
            self.read += 1
        self._used[oid] = found
        return found


def entries_under(
    repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, wanted: tuple[str, ...]
) -> Iterator[pygit2.Object]:
    """The entries of `tree` (at `prefix`) that may hold a wanted path: all without `wanted`."""
    for entry in tree:
        if not wanted or _may_hold(f"{prefix}{entry.name}", entry.type_str == "tree", wanted):
            yield entry


def _may_hold(path: str, folder: bool, wanted: tuple[str, ...]) -> bool:
    """True when `path` starts with a wanted prefix, or is a folder a wanted prefix is in."""
    if path.startswith(wanted):
        return True
    return folder and any(prefix.startswith(f"{path}/") for prefix in wanted)


def read_tree(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    wanted: tuple[str, ...] = (),
    blobs: BlobCache | None = None,
) -> tuple[dict[str, bytes], dict[str, str]]:
    """Files of a commit whose path starts with one of `wanted` (all files when empty), and
    the symbolic links and gitlinks among them (path → `SYMLINK` or `SUBMODULE`). Folders
    that cannot hold a wanted path are not read; with `blobs`, neither are the blobs the
    last read through it read."""
    cache = blobs if blobs is not None else BlobCache()
    cache.begin()
    files, links = {}, {}
    for path, found in _files(repo, commit.tree, "", wanted):
        if wanted and not path.startswith(wanted):
            continue
        if isinstance(found, str):
            links[path] = found
        else:
            files[path] = cache.data(repo, found)
    return files, links


def read_files(
    repo: pygit2.Repository, commit: pygit2.Commit, wanted: tuple[str, ...] = ()
) -> dict[str, bytes]:
    """Files of a commit whose path starts with one of `wanted` (all files when empty)."""
    return read_tree(repo, commit, wanted)[0]


def commit(
    repo: pygit2.Repository,
    *,
    branch: str | None,
    tree: pygit2.Oid,
    parent: pygit2.Commit | None,
    message: str,
    author: tuple[str, str],
    time: int,
    committer: tuple[str, str] | None = None,
) -> pygit2.Oid:
    """Create a commit with one parent (or none) and point `refs/heads/<branch>` at it (no
    ref when `branch` is None: `set_branch` names it later). The committer is the author
    unless given."""
    signature = pygit2.Signature(author[0], author[1], time, 0)
    by = signature if committer is None else pygit2.Signature(committer[0], committer[1], time, 0)
    parents = [parent.id] if parent is not None else []
    oid = repo.create_commit(None, signature, by, message, tree, parents)
    if branch is not None:
        set_branch(repo, branch, oid)
    return oid


def set_branch(repo: pygit2.Repository, branch: str, oid: pygit2.Oid) -> None:
    """Point the cache's own `refs/heads/<branch>` at `oid` (what `push` sends)."""
    repo.references.create(f"refs/heads/{branch}", oid, force=True)


def delete_branch(repo: pygit2.Repository, branch: str) -> None:
    """Remove the cache's own `refs/heads/<branch>`, if it exists."""
    reference = repo.references.get(f"refs/heads/{branch}")
    if reference is not None:
        reference.delete()


class NonFastForward(GitError):
    """The remote refused the ref update because the branch moved (or is being moved)."""


PUSH_THREADS = 2
"""Threads libgit2 looks for deltas with while it packs a push (a tenth less time at two)."""


def push(repo: pygit2.Repository, branch: str, credentials: Credentials | None = None) -> None:
    """Push `refs/heads/<branch>` to origin; raises NonFastForward when the remote moved."""
    remote = repo.remotes["origin"]
    spec = f"refs/heads/{branch}:refs/heads/{branch}"
    callbacks = _callbacks(credentials)
    where = redact(remote.url or "")
    try:
        remote.push(
            [spec], callbacks=callbacks, threads=PUSH_THREADS, proxy=proxy_for(remote.url or "")
        )
    except pygit2.GitError as error:
        text = redact(str(error))
        if any(
            sign in text
            for sign in ("fastforward", "fast-forward", "fetch first", "not present locally")
        ):
            raise NonFastForward(f"push to {where} rejected: {text}") from error
        raise GitError(f"push to {where} failed: {text}") from error
    if callbacks.rejected:
        # The remote refused the update: not a fast-forward, or another pusher holds the
        # ref's lock. Either way the branch moved under us: fetch and rebuild.
        raise NonFastForward(f"push to {where} rejected: {'; '.join(callbacks.rejected)}")


def first_parents(tip: pygit2.Commit) -> Iterator[pygit2.Commit]:
    """`tip` and its first parents, newest first (the passes of an output branch); the
    caller stops when it has read far enough back."""
    commit_: pygit2.Commit | None = tip
    while commit_ is not None:
        yield commit_
        commit_ = commit_.parents[0] if commit_.parent_ids else None


def folder_id(commit_: pygit2.Commit, folder: str) -> str | None:
    """The tree id (hex) of `folder` in a commit, or None when it has none: two commits with
    the same id hold the same files there."""
    try:
        return str(commit_.tree[folder.rstrip("/")].id)
    except KeyError:
        return None


def blobs_under(repo: pygit2.Repository, commit_: pygit2.Commit, folder: str) -> dict[str, str]:
    """Path → blob id (hex) of the files directly in `folder` (`status/clusters/`) of a
    commit; empty when it has no such folder. Ids let a reader parse each version once."""
    found = folder_id(commit_, folder)
    if found is None:
        return {}
    tree = repo[found]
    if not isinstance(tree, pygit2.Tree):
        return {}
    return {f"{folder}{e.name}": str(e.id) for e in tree if e.type_str == "blob"}


def blob_data(repo: pygit2.Repository, blob_id: str) -> bytes:
    """The content of a blob by its hex id."""
    blob = repo[blob_id]
    assert isinstance(blob, pygit2.Blob)
    return blob.data


def tree_of(commit_: pygit2.Commit) -> pygit2.Oid:
    """The root tree oid of a commit."""
    return commit_.tree_id


def sha(oid: pygit2.Oid) -> str:
    """The hex sha of an oid."""
    return str(oid)


def commit_info(commit_: pygit2.Commit) -> tuple[str, int, str]:
    """(sha, committer time, message) of a commit."""
    return str(commit_.id), int(commit_.commit_time), commit_.message


def author_of(commit_: pygit2.Commit) -> str:
    """`Name <email>` of a commit's author."""
    return f"{commit_.author.name} <{commit_.author.email}>"


def remote_tip(repo: pygit2.Repository, branch: str) -> pygit2.Commit | None:
    """The fetched `origin/<branch>`, or None when the remote has no such branch."""
    reference = repo.references.get(f"refs/remotes/origin/{branch}")
    if reference is None:
        return None
    found = repo[reference.target]
    assert isinstance(found, pygit2.Commit)
    return found


def worktree_changes(path: Path) -> dict[str, str]:
    """The uncommitted changes of the work tree holding `path`, staged or not: repo-relative
    path → `new`, `modified`, `deleted`, `renamed` or `untracked` (ignored files left out).
    Empty for a bare repository, which has no work tree."""
    repo = open_local(path)
    if repo.is_bare or repo.workdir is None:
        return {}
    flags = pygit2.enums.FileStatus
    kinds = (
        (flags.WT_NEW, "untracked"),
        (flags.INDEX_NEW, "new"),
        (flags.INDEX_DELETED | flags.WT_DELETED, "deleted"),
        (flags.INDEX_RENAMED | flags.WT_RENAMED, "renamed"),
        (flags.INDEX_MODIFIED | flags.WT_MODIFIED | flags.INDEX_TYPECHANGE, "modified"),
        (flags.WT_TYPECHANGE | flags.CONFLICTED, "modified"),
    )
    changes = {}
    for name, status in repo.status(untracked_files="all", ignored=False).items():
        said = next((word for flag, word in kinds if status & flag), None)
        if said is not None:
            changes[name] = said
    return dict(sorted(changes.items()))


def blob_at(commit_: pygit2.Commit, path: str) -> str | None:
    """The blob id (hex) of the file at `path` in a commit, or None when it holds none."""
    try:
        entry = commit_.tree[path]
    except KeyError:
        return None
    return str(entry.id) if entry.type_str == "blob" else None


def changed_files(
    repo: pygit2.Repository, before: pygit2.Commit | None, after: pygit2.Commit
) -> list[tuple[str, str | None, str | None]]:
    """(path, blob id before, blob id after) of every file that differs between two commits,
    by path; None where a side has no such file (`before` None: every file of `after` is new).
    libgit2 compares the trees, entering only the folders whose tree ids differ."""
    if before is None:
        diff = after.tree.diff_to_tree(swap=True)  # the empty tree → after
    else:
        diff = before.tree.diff_to_tree(after.tree)
    found: list[tuple[str, str | None, str | None]] = []
    for delta in diff.deltas:
        old = None if delta.status_char() == "A" else str(delta.old_file.id)
        new = None if delta.status_char() == "D" else str(delta.new_file.id)
        found.append((delta.new_file.path if new else delta.old_file.path, old, new))
    return sorted(found)
