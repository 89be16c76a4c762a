"""The manifests of an output tree by cluster folder, for the live stages: the tree walked
once for every cluster, each manifest parsed once however often it is asked for (a pass
surveys drift and applies the same tree, and an idle pass applies the tree of the pass it
stands on), and each manifest's kind known without copying it (`live.steady`).

Called by `live`.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Mapping
from typing import Any

from reconciler import yamlio
from reconciler.branch import paths
from reconciler.kube import sealed
from reconciler.live import takeover


def kept(tree: Mapping[str, bytes]) -> Folders:
    """`tree`'s manifests by cluster: the ones last asked for while `tree` has the same
    `clusters/` files (the survey's tree and the applied one differ in `status/` files only;
    an idle pass applies the tree of the pass it stands on), else new ones."""
    last = _KEPT[0] if _KEPT else None
    if last is None or not last.holds(tree):
        last = Folders(tree)
        _KEPT[:] = [last]
    return last


class Folders:
    """The manifests of a tree by cluster folder, the tree walked once for every cluster
    (not once per cluster), each manifest parsed once however often it is asked for (a pass
    surveys drift and applies the same tree); each caller gets its own copy. It keeps its own
    copy of the tree's `clusters/` files, so that a tree changed later is never mistaken for
    it (`holds`)."""

    def __init__(self, tree: Mapping[str, bytes]) -> None:
        self.files = _cluster_files(tree)
        self.paths: dict[str, list[str]] = {}
        for path in sorted(self.files):
            found = paths.cluster_file(path)
            if found is not None and not found.is_kustomization:
                self.paths.setdefault(found.cluster, []).append(path)
        self._parsed: dict[str, bytes | None] = {}
        self._shapes: dict[str, tuple[str, str, bool] | None] = {}
        """Each manifest's apiVersion, kind, and whether it carries dro's label and is not
        SOPS-encrypted."""
        self._lock = threading.Lock()
        self._seen: list[tuple[Mapping[str, bytes], int]] = [(tree, len(tree))]

    def holds(self, tree: Mapping[str, bytes]) -> bool:
        """Whether `tree` has the same `clusters/` files (the bytes compared by identity
        first: the trees of one pass, and of an idle pass and the one it stands on, share
        them). A tree found to hold them is remembered, and known again at once: trees are
        never changed once rendered."""
        if any(seen is tree and size == len(tree) for seen, size in self._seen):
            return True
        if _cluster_files(tree) != self.files:
            return False
        self._seen = [*self._seen[-1:], (tree, len(tree))]
        return True

    def objects(self, cluster: str) -> list[dict[str, Any]]:
        """The manifests rendered for `cluster`, without the kustomization, in path order."""
        objects = []
        for path in self.paths.get(cluster.lower(), ()):
            kept = self._parse(path)
            if kept is not None:
                objects.append(pickle.loads(kept))  # each caller's own copy, made in C
        return objects

    def kinds(self, cluster: str) -> list[tuple[str, str]] | None:
        """The (apiVersion, kind) of the manifests rendered for `cluster`, sorted; None when
        one of them lacks dro's label or is SOPS-encrypted (`live.steady`: such an object's
        outcome depends on more than the cluster's listed objects)."""
        found = set()
        for path in self.paths.get(cluster.lower(), ()):
            self._parse(path)
            shape = self._shapes.get(path)
            if shape is None:
                continue
            if not shape[2]:
                return None
            found.add(shape[:2])
        return sorted(found)

    def _parse(self, path: str) -> bytes | None:
        """The manifest at `path`, pickled (None when it is not a mapping), parsed once."""
        with self._lock:
            if path in self._parsed:
                return self._parsed[path]
        body = yamlio.load_own(path, self.files[path])
        kept, shape = None, None
        if isinstance(body, dict):
            kept = pickle.dumps(body, pickle.HIGHEST_PROTOCOL)
            plain = takeover.labelled(body) and not sealed.is_sealed(body)
            shape = (str(body.get("apiVersion")), str(body.get("kind")), plain)
        with self._lock:
            self._parsed[path] = kept
            self._shapes[path] = shape
        return kept


def _cluster_files(tree: Mapping[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in tree.items() if path.startswith(paths.CLUSTERS)}


_KEPT: list[Folders] = []
"""The manifests by cluster last asked for, and their parses (`Members._folders`)."""
