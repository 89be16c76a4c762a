"""Path → blob id of the files of an output-branch commit, brought from the last commit's
answer through the differences between the two trees.

A pass reads the output branch's `decisions/` and `status/` (11,000 files at 10,000
workloads) by blob id, so that only new blobs are read and parsed; walking those folders
cost a 10,000-entry tree walk a pass. The difference between two trees, which libgit2 finds
without opening a subtree whose id is the same on both sides, names the few files a pass
changed.

Called by `load` and `web.branchdata`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pygit2

from reconciler.git import gitrepo


def blob_ids(
    repo: pygit2.Repository, commit: pygit2.Commit, wanted: tuple[str, ...]
) -> dict[str, str]:
    """Path → blob id (hex) of the files of a commit under `wanted` (symbolic links and
    gitlinks left out), without reading a blob: a reader that cached what each id parses to
    reads only the blobs it has not seen.

    The last answer for each repository and `wanted` is kept with its root tree's id: the
    next commit's answer is that one with the differences between the two trees applied
    (`_patched_ids`: libgit2 compares each wanted folder's two trees, entry by entry in C,
    and a folder whose tree id is the same is skipped), so a branch that changed a few files
    is not walked whole. A tree's id names its
    content, so the kept answer is right for that tree whatever happened in between."""
    slot = (repo.path, wanted)
    last = _LAST_IDS.get(slot)
    tree = commit.tree
    if last is not None and last[0] == tree.id:
        return dict(last[1])
    found = _patched_ids(repo, last, tree, wanted) if last is not None else None
    if found is None:
        found = dict(_ids(repo, tree, "", wanted))
    _LAST_IDS.pop(slot, None)
    _LAST_IDS[slot] = (tree.id, found)
    while len(_LAST_IDS) > _LAST_IDS_AT_MOST:
        del _LAST_IDS[next(iter(_LAST_IDS))]
    return dict(found)


_LAST_IDS: dict[tuple[str, tuple[str, ...]], tuple[pygit2.Oid, dict[str, str]]] = {}
"""(repository, wanted) → (root tree id, its `blob_ids`); never changed once kept."""
_LAST_IDS_AT_MOST = 16
_FILE_MODES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)


def _patched_ids(
    repo: pygit2.Repository,
    last: tuple[pygit2.Oid, dict[str, str]],
    tree: pygit2.Tree,
    wanted: tuple[str, ...],
) -> dict[str, str] | None:
    """`last`'s ids brought to `tree` through the differences between the two trees' wanted
    folders; None (walk instead) when the last tree is no longer in the repository, a
    wanted prefix is not a folder, or a wanted folder is in only one of the trees."""
    try:
        old = repo[last[0]]
    except KeyError:
        return None
    if not isinstance(old, pygit2.Tree):
        return None
    if not wanted or not all(prefix.endswith("/") for prefix in wanted):
        return None
    found = dict(last[1])
    added = False
    for folder in wanted:
        sides = (_subtree(old, folder), _subtree(tree, folder))
        if sides[0] is None or sides[1] is None:
            if sides[0] is sides[1]:  # in neither tree
                continue
            return None
        if sides[0].id == sides[1].id:
            continue
        for delta in sides[0].diff_to_tree(sides[1]).deltas:
            old_path, new = folder + delta.old_file.path, delta.new_file
            new_path = folder + new.path
            if old_path != new_path:
                found.pop(old_path, None)
            if new.mode in _FILE_MODES:
                added = added or new_path not in found
                found[new_path] = str(new.id)  # a file changed in place keeps its place
            else:  # deleted (its mode is 0), or now a link or a gitlink
                found.pop(new_path, None)
    # a walk gives the paths in git's order, which is the order of the paths' bytes
    return {path: found[path] for path in sorted(found)} if added else found


def _subtree(tree: pygit2.Tree, folder: str) -> pygit2.Tree | None:
    """The tree at `folder` (`a/b/`) in `tree`; None when there is none there."""
    try:
        found = tree[folder.rstrip("/")]
    except KeyError:
        return None
    return found if isinstance(found, pygit2.Tree) else None


def _ids(
    repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, wanted: tuple[str, ...]
) -> Iterator[tuple[str, str]]:
    for entry in gitrepo.entries_under(repo, tree, prefix, wanted):
        path = f"{prefix}{entry.name}"
        if entry.type_str == "tree":
            subtree = repo[entry.id]
            assert isinstance(subtree, pygit2.Tree)
            yield from _ids(repo, subtree, f"{path}/", wanted)
        elif entry.type_str == "blob" and entry.filemode != pygit2.enums.FileMode.LINK:
            yield path, str(entry.id)
