"""The output-branch tree a warm render gives: path → bytes, read-only, that knows which paths
differ from the tree it was made from.

A pass of `dro run` changes a few of the ~300,000 files a 10,000-workload fleet renders. The
render memo (`render.memo`) makes each pass's tree as the last one's with those paths
replaced (`patched`), and the stages after it read the change instead of the whole tree: the
tree writer compares only the changed paths (`git.trees`), and the status checks list the
`status/` files from an index kept up to date the same way (`under`).

A `Tree` is a `dict` (everything that reads a tree reads it as before), but it refuses every
change: the paths a later tree names as changed are only right if the earlier one stayed as
it was made. Its iteration order is not significant: a tree made whole is in path order, a
patched one adds its new paths last (git, `dro render` and apply sort the paths they write).

Called by 8 modules, among them `branch.driftfiles`, `commit`, `laststate`, `render.memo`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NoReturn, Protocol, runtime_checkable


class Tree(dict[str, bytes]):
    """A read-only output-branch tree, and the paths where it differs from `previous`."""

    __slots__ = ("_under", "changed", "previous")

    def __init__(self, files: Mapping[str, bytes] | Iterable[tuple[str, bytes]] = ()) -> None:
        super().__init__(files)
        self.previous: Tree | None = None
        """The tree this one was patched from (None when made whole). Only two steps back
        are kept: the tree patched from this one lets go of its grandparent."""
        self.changed: frozenset[str] = frozenset()
        """The paths added, changed or removed since `previous` (empty when made whole)."""
        self._under: dict[str, tuple[str, ...]] = {}

    @classmethod
    def patched(
        cls, previous: Tree, updates: Mapping[str, bytes], removed: Collection[str]
    ) -> Tree:
        """`previous` with `updates` written over it and the `removed` paths taken out."""
        made = cls(previous)
        for path, data in updates.items():
            dict.__setitem__(made, path, data)
        for path in removed:
            if path not in updates:
                dict.pop(made, path, None)
        made.previous = previous
        if previous.previous is not None:
            previous.previous.previous = None
        made.changed = frozenset({*updates, *removed})
        for prefix, listed in previous._under.items():
            touched = [p for p in made.changed if p.startswith(prefix)]
            made._under[prefix] = (
                tuple(sorted(p for p in set(listed).union(touched) if p in made))
                if touched
                else listed
            )
        return made

    def _ancestors(self) -> dict[int, tuple[Tree, frozenset[str]]]:
        """Each tree this one was patched from, by id, with the paths changed since."""
        found: dict[int, tuple[Tree, frozenset[str]]] = {}
        node: Tree | None = self
        changed: frozenset[str] = frozenset()
        while node is not None:
            found[id(node)] = (node, changed)
            changed = changed | node.changed
            node = node.previous
        return found

    def under(self, prefix: str) -> tuple[str, ...]:
        """The paths that start with `prefix`, in order; kept for the trees patched from
        this one, so that they list them without walking every path."""
        found = self._under.get(prefix)
        if found is None:
            found = self._under[prefix] = tuple(sorted(p for p in self if p.startswith(prefix)))
        return found

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError("an output tree is read-only: patch it into a new one (Tree.patched)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse


def difference(new: Mapping[str, bytes], old: Mapping[str, bytes]) -> frozenset[str] | None:
    """The paths where `new` and `old` may differ, when both are trees patched from one
    tree (a superset: a path changed and changed back is in it); None when they are not."""
    if not isinstance(new, Tree) or not isinstance(old, Tree):
        return None
    ours = new._ancestors()
    for key, (node, theirs) in old._ancestors().items():
        found = ours.get(key)
        if found is not None and found[0] is node:
            return found[1] | theirs
    return None


@runtime_checkable
class Listed(Protocol):
    """A mapping of paths that keeps its own listing per prefix (`Tree`, `readback.Blobs`)."""

    def under(self, prefix: str) -> Sequence[str]:
        """The paths that start with `prefix`, in order."""
        ...


def under(tree: Mapping[str, bytes], prefix: str) -> Sequence[str]:
    """The paths of `tree` that start with `prefix`, in order: the listing a `Listed` keeps,
    or a walk."""
    if isinstance(tree, Listed):
        return tree.under(prefix)
    return sorted(p for p in tree if p.startswith(prefix))
