"""The git operations of the REST API's policy store and of its audit trail.

A write edits the tip's tree in place (`edit_tree`): only the changed files get new blobs and
only the trees above them are rewritten, so every other entry (executable bits, symbolic links,
submodules) stays exactly as the tip has it. The trail reads history (`history`) and the review
branches the API pushed (`branches`).

Called by `service.api.store` and `service.api.trail`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pygit2

from reconciler.git import gitrepo


def edit_tree(
    repo: pygit2.Repository, base: pygit2.Oid | None, changes: Mapping[str, bytes | None]
) -> pygit2.Oid:
    """The tree `base` (none: empty) with each path of `changes` written (bytes) or removed
    (None); a folder left empty is removed. A replaced file keeps its mode."""
    tree = repo[base] if base is not None else None
    assert tree is None or isinstance(tree, pygit2.Tree)
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    files: dict[str, bytes | None] = {}
    folders: dict[str, dict[str, bytes | None]] = {}
    for path, data in changes.items():
        head, slash, rest = path.partition("/")
        if slash:
            folders.setdefault(head, {})[rest] = data
        else:
            files[head] = data
    for name, data in sorted(files.items()):
        entry = builder.get(name)
        if data is None:
            if entry is not None:
                builder.remove(name)
            continue
        mode = pygit2.enums.FileMode.BLOB
        if entry is not None and entry.filemode == pygit2.enums.FileMode.BLOB_EXECUTABLE:
            mode = pygit2.enums.FileMode.BLOB_EXECUTABLE
        builder.insert(name, repo.create_blob(data), mode)
    for name, inner in sorted(folders.items()):
        entry = builder.get(name)
        below = entry.id if entry is not None and entry.type_str == "tree" else None
        oid = edit_tree(repo, below, inner)
        written = repo[oid]
        assert isinstance(written, pygit2.Tree)
        if len(written) == 0:
            if entry is not None:
                builder.remove(name)
        else:
            builder.insert(name, oid, pygit2.enums.FileMode.TREE)
    return builder.write()


def ids_under(repo: pygit2.Repository, commit: pygit2.Commit, folder: str) -> dict[str, str]:
    """Path → blob id (hex) of every regular file under `folder` (`policies/`), at any
    depth; empty when the commit has no such folder. Links and gitlinks are left out."""
    found = gitrepo.folder_id(commit, folder)
    tree = repo[found] if found is not None else None
    if not isinstance(tree, pygit2.Tree):
        return {}
    return {
        path: str(blob.id)
        for path, blob in gitrepo.walk(repo, tree, folder.rstrip("/") + "/")
        if isinstance(blob, pygit2.Blob)
    }


def history(repo: pygit2.Repository, tip: pygit2.Commit) -> Iterator[pygit2.Commit]:
    """Every commit reachable from `tip`, newest first, children before their parents."""
    yield from repo.walk(tip.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)


def branches(repo: pygit2.Repository, prefix: str) -> dict[str, pygit2.Commit]:
    """Branch name → tip of every local or fetched branch whose name starts with `prefix`
    (`dro-api/`); a fetched `origin/<name>` wins over a local branch of the same name."""
    found: dict[str, pygit2.Commit] = {}
    for kind in ("refs/heads/", "refs/remotes/origin/"):
        for name in repo.references:
            if name.startswith(kind + prefix):
                target = repo.references[name].peel(pygit2.Commit)
                assert isinstance(target, pygit2.Commit)
                found[name.removeprefix(kind)] = target
    return dict(sorted(found.items()))


def message_of(commit: pygit2.Commit) -> tuple[str, int, str, str]:
    """(sha, committer time, message, `Name <email>` of the author) of a commit."""
    sha, when, message = gitrepo.commit_info(commit)
    return sha, when, message, gitrepo.author_of(commit)
