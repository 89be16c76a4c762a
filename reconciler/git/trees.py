"""Git trees written from a path → bytes mapping, rebuilding only the folders that changed.

A `TreeWriter` holds one tree in memory: the one it wrote last, or, when it has written
nothing yet, the tree it is told to start from (`base`: the parent commit's). The next tree is
that one updated: each file is compared with the one held at its path (the same bytes object,
equal bytes, or the same blob id), only changed files are hashed and stored, and only the
folders above a change or a removal are rebuilt; every other folder keeps its tree id. The
result is the same tree, to the byte, as one written from nothing. A writer told `since`
(where the files differ from those it wrote last: `branch.outputtree.difference`) compares
only those paths, and a large folder keeps its serialised entries, so one changed file of a
10,000-file folder re-serialises one entry.

New blobs and trees go into one packfile per write (`packfile`); an object the repository
already has is not written again. A path that `git fsck` would reject (`domain.paths`) is
refused before anything is written or changed.

Called by `git.gitrepo`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import pygit2

from reconciler.domain import paths
from reconciler.git import packfile

BIG_FOLDER = 512
"""Folders with this many entries keep their serialised entries between writes."""
SAFE_NAMES_KEPT = 500_000
"""Path components a `TreeWriter` remembers as checked, so a steady pass checks none again."""
_UNMATCHED = b""
"""The blob id held for an entry dro never writes (a link, an executable, a submodule): no
file's id equals it, so a file at that path replaces it, and without one it is removed."""


class TreeWriter:
    """Writes the tree of a path → bytes mapping by updating the tree it holds.

    `folders_rebuilt` and `blobs_hashed` count, for the last write, the trees written and the
    files hashed: after one file changes they are the folders above it and that one file.
    `paths_compared` counts the paths looked at: every one, or those `since` names.
    """

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._reset()
        # Every oid a TreeWriter references was just written or checked, so libgit2's
        # existence check on object creation is redundant work.
        pygit2.option(pygit2.enums.Option.ENABLE_STRICT_OBJECT_CREATION, False)

    def _reset(self) -> None:
        """Hold no tree, and know of no stored object."""
        self._files: dict[str, tuple[bytes | None, bytes]] = {}
        """Path → (its bytes, when known, and its blob id) in the tree held."""
        self._folders: dict[str, dict[str, tuple[bytes, bool]]] = {"": {}}
        """Folder (`""` or `a/b/`) → name → (id, is a tree) of its entries."""
        self._dirty: set[str] = {""}
        self._root: bytes | None = None
        self._stored: set[bytes] = set()
        self._pending: list[tuple[str, bytes, bytes]] = []
        self._safe: set[str] = set()
        self._big: dict[str, tuple[dict[str, tuple[bytes, bool]], list[str], dict[str, bytes]]]
        self._big = {}
        """Large folder → (its entries, their order, each one's line) as last serialised."""
        self._written: Mapping[str, bytes] | None = None
        """The files last written, when they were told `since` (what it is asked of)."""
        self.folders_rebuilt = 0
        self.blobs_hashed = 0
        self.paths_compared = 0

    def write(
        self,
        files: Mapping[str, bytes],
        base: pygit2.Oid | None = None,
        *,
        since: Callable[[Mapping[str, bytes]], Collection[str] | None] | None = None,
    ) -> pygit2.Oid:
        """The oid of the root tree holding exactly `files`, written to the repository. A
        writer that holds no tree yet starts from `base` (a tree id), when given.

        `since(mapping)` gives the paths where `files` may differ from an earlier mapping,
        or None when it cannot tell (`branch.outputtree.difference`): asked of the mapping
        this writer wrote last, only those paths are compared, not the whole tree."""
        if self._root is None and base is not None:
            self._start_from(base)
        written, self._written = self._written, None
        told = since(written) if since is not None and written is not None else None
        only = told if self._root is not None else None
        self.paths_compared = len(files) if only is None else len(only)
        found, same, removed = self._compare(files, only)
        for path, data, oid in same:
            self._files[path] = (data, oid)
        for path in removed:
            del self._files[path]
            folder, name = _split(path)
            del self._folders[folder][name]
            self._touch(folder)
        for path, data, oid in found:
            self._files[path] = (data, oid)
            folder, name = _split(path)
            self._folder(folder)[name] = (oid, False)
            self._touch(folder)
            self._store("blob", oid, data)
        self.blobs_hashed = len(found) + len(same)
        root = self._rebuild()
        pending, self._pending = self._pending, []
        try:
            packfile.write_pack(Path(self.repo.path) / "objects", pending)
        except BaseException:
            self._reset()  # what it holds may not all be stored
            raise
        self._written = files
        return pygit2.Oid(raw=root)

    def _compare(
        self, files: Mapping[str, bytes], only: Collection[str] | None = None
    ) -> tuple[list[tuple[str, bytes, bytes]], list[tuple[str, bytes, bytes]], list[str]]:
        """(changed or added files, files equal to the held ones by blob id, removed paths),
        every new path checked first: nothing changes when one is refused. With `only`, the
        other paths are known to be the ones held."""
        held = self._files
        if only is not None:
            removed = [p for p in only if p in held and p not in files]
            changed, same, _ = self._differing((p, files[p]) for p in only if p in files)
            return changed, same, removed
        changed, same, present = self._differing(files.items())
        removed = [] if present == len(held) else [p for p in held if p not in files]
        return changed, same, removed

    def _differing(
        self, files: Iterable[tuple[str, bytes]]
    ) -> tuple[list[tuple[str, bytes, bytes]], list[tuple[str, bytes, bytes]], int]:
        """(changed or added files, files equal to the held ones by blob id, how many of
        `files` the tree holds a path of)."""
        held = self._files
        changed: list[tuple[str, bytes, bytes]] = []
        same: list[tuple[str, bytes, bytes]] = []
        present = 0
        for path, data in files:
            known = held.get(path)
            if known is not None:
                present += 1
                if known[0] is data:
                    continue
                if known[0] is not None and known[0] == data:
                    held[path] = (data, known[1])  # hold the newest bytes, not two copies
                    continue
            self._refuse_unsafe(path)
            oid = packfile.object_id("blob", data)
            if known is not None and known[1] == oid:
                same.append((path, data, oid))
            else:
                changed.append((path, data, oid))
        return changed, same, present

    def _folder(self, folder: str) -> dict[str, tuple[bytes, bool]]:
        """The entries of `folder`, made (with its parents) when it is new."""
        entries = self._folders.get(folder)
        if entries is None:
            entries = self._folders[folder] = {}
            parent, name = _split(folder[:-1])
            self._folder(parent)[name] = (b"", True)  # its id is set when it is rebuilt
        return entries

    def _touch(self, folder: str) -> None:
        """Mark `folder` and every folder above it for rebuilding."""
        while folder not in self._dirty:
            self._dirty.add(folder)
            if not folder:
                return
            folder = _split(folder[:-1])[0]

    def _rebuild(self) -> bytes:
        """Write the marked folders, deepest first, and return the root's id."""
        self.folders_rebuilt = len(self._dirty)
        for folder in sorted(self._dirty, key=lambda f: f.count("/"), reverse=True):
            entries = self._folders[folder]
            parent, name = _split(folder[:-1]) if folder else ("", "")
            if folder and not entries:
                del self._folders[folder]
                del self._folders[parent][name]
                continue
            content = self._content(folder, entries)
            oid = packfile.object_id("tree", content)
            self._store("tree", oid, content)
            if folder:
                self._folders[parent][name] = (oid, True)
            else:
                self._root = oid
        self._dirty.clear()
        assert self._root is not None
        return self._root

    def _content(self, folder: str, entries: dict[str, tuple[bytes, bool]]) -> bytes:
        """The tree object's body of `folder` (`packfile.tree_content`). A large folder keeps
        its entries' order and serialised lines, so that one changed entry of 10,000 (a
        decision file among every workload's) re-serialises that entry alone."""
        if len(entries) < BIG_FOLDER:
            self._big.pop(folder, None)
            return packfile.tree_content([(n, o, t) for n, (o, t) in entries.items()])
        known = self._big.get(folder)
        if known is None or known[0].keys() != entries.keys():
            order = sorted(entries, key=lambda n: n + "/" if entries[n][1] else n)
            lines = {n: _line(n, *entries[n]) for n in order}
        else:
            seen, order, lines = known
            for name, entry in entries.items():
                if seen[name] != entry:
                    lines[name] = _line(name, *entry)
        self._big[folder] = (dict(entries), order, lines)
        return b"".join([lines[n] for n in order])

    def _start_from(self, base: pygit2.Oid) -> None:
        """Hold the tree `base`: its files by blob id, and each folder by its entries. A
        folder git wrote otherwise than `packfile.tree_content` would is marked for
        rebuilding, so the result never depends on how the base was written."""
        self._files.clear()
        self._folders.clear()
        self._dirty.clear()
        self._load(base, "")
        self._root = base.raw

    def _load(self, oid: pygit2.Oid, folder: str) -> None:
        tree = self.repo[oid]
        assert isinstance(tree, pygit2.Tree)
        entries: dict[str, tuple[bytes, bool]] = {}
        for entry in tree:
            name = entry.name or ""
            if entry.type_str == "tree":
                self._load(entry.id, f"{folder}{name}/")
                entries[name] = (entry.id.raw, True)
            elif entry.type_str == "blob" and entry.filemode == pygit2.enums.FileMode.BLOB:
                self._files[f"{folder}{name}"] = (None, entry.id.raw)
                entries[name] = (entry.id.raw, False)
            else:
                self._files[f"{folder}{name}"] = (None, _UNMATCHED)
                entries[name] = (_UNMATCHED, False)
                self._touch(folder)
        self._folders[folder] = entries
        content = packfile.tree_content([(n, o, t) for n, (o, t) in entries.items()])
        if packfile.object_id("tree", content) != oid.raw:
            self._touch(folder)

    def _store(self, kind: str, oid: bytes, content: bytes) -> None:
        if oid in self._stored:
            return
        self._stored.add(oid)
        if not self.repo.odb.exists(pygit2.Oid(raw=oid)):
            self._pending.append((kind, oid, content))

    def _refuse_unsafe(self, path: str) -> None:
        """Raise ValueError for a path git would refuse (`paths.unsafe_component`): validation
        keeps such names out, so one reaching here is a bug, never committed."""
        if len(self._safe) > SAFE_NAMES_KEPT:
            self._safe.clear()
        for part in path.split("/"):
            if part not in self._safe:
                reason = paths.unsafe_component(part)
                if reason:
                    raise ValueError(f"refusing to commit the path {path!r}: {part!r} {reason}")
                self._safe.add(part)


def _line(name: str, oid: bytes, is_tree: bool) -> bytes:
    """One entry of a tree object's body, as `packfile.tree_content` writes it."""
    return b"%s %s\x00%s" % (b"40000" if is_tree else b"100644", name.encode(), oid)


def _split(path: str) -> tuple[str, str]:
    """(`a/b/`, `c`) of `a/b/c`; (``, `c`) of `c`."""
    folder, _, name = path.rpartition("/")
    return (f"{folder}/" if folder else ""), name
