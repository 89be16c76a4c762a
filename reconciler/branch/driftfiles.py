"""Drift files: `status/drift/<cluster>.yaml`, the objects drifted on one cluster.

A cluster with a drifted object has one file; a cluster without has none, so the file goes
away in the commit of the pass that no longer finds drift there. Each object is listed by its
placement name (`apps/Deployment/shop/web`), with the drift rule in force (Correct: this
pass's apply writes it again; Report: it is left as it is), `firstSeen` (the first pass that
found it drifted, carried from the previous file while the drift lasts) and either
`deleted: true` or its fields: JSON pointer, live and rendered values (a Secret's values are
masked by `live.drift`, never written here). Objects are sorted by name and fields by
pointer; `firstSeen` is the only time in the file, so a drift that lasts changes no byte.
An object that exists but that dro did not create, and that its takeover rule does not adopt,
is listed too, with `notAdopted: true` and its `takeover` rule in place of `rule`: its fields
are what the manifest would change, which dro never does.

A cluster that could not be surveyed this pass (unreachable) keeps its last file as it was.

Called by `branch.status` and `pipeline.clusters`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reconciler import yamlio
from reconciler.branch import outputtree, paths, statefiles
from reconciler.domain import DRO_API_VERSION
from reconciler.domain.drift import Drifted
from reconciler.kube import inventory

KIND = "ClusterDrift"


def merged(
    tree: Mapping[str, bytes],
    surveyed: Mapping[str, Sequence[Drifted]],
    previous: Mapping[str, bytes],
    at: str,
    clusters: Iterable[str],
) -> dict[str, bytes]:
    """`tree` with the drift files of `clusters`: from `surveyed` for the clusters surveyed
    this pass (found at `at`, or earlier as the `previous` files say), else each cluster's
    `previous` file as it was."""
    result: dict[str, bytes] = {}
    for cluster in sorted(clusters):
        path = paths.drift_status_path(cluster)
        if cluster not in surveyed:
            if path in previous:
                result[path] = previous[path]
            continue
        if surveyed[cluster]:
            seen = first_seen(previous.get(path))
            result[path] = statefiles.seal(
                yamlio.dump(document(cluster, surveyed[cluster], seen, at)).encode()
            )
    stale = [p for p in outputtree.under(tree, paths.STATUS_DRIFT) if paths.drift_cluster(p)]
    if isinstance(tree, outputtree.Tree):  # patched: only the drift files change
        changes = {p: d for p, d in result.items() if tree.get(p) != d}
        return outputtree.Tree.patched(tree, changes, [p for p in stale if p not in result])
    kept = {p: d for p, d in tree.items() if paths.drift_cluster(p) is None}
    return dict(sorted({**kept, **result}.items()))


def document(
    cluster: str, drifted: Sequence[Drifted], seen: Mapping[str, str], at: str
) -> dict[str, Any]:
    """The drift file of `cluster`: each drifted object with its `firstSeen` from `seen`
    (placement name → time), else `at`."""
    objects = []
    for item in sorted(drifted, key=lambda d: inventory.placement_name(d.key)):
        name = inventory.placement_name(item.key)
        entry: dict[str, Any] = {"resource": name, "firstSeen": seen.get(name, at)}
        if item.foreign:
            entry |= {"notAdopted": True, "takeover": item.rule}
        else:
            entry["rule"] = item.rule
        if item.deleted:
            entry["deleted"] = True
        else:
            entry["fields"] = [change.document() for change in item.changes]
        objects.append(entry)
    return {
        "apiVersion": DRO_API_VERSION,
        "kind": KIND,
        "metadata": {"name": cluster},
        "status": {"objects": objects},
    }


def first_seen(data: bytes | None) -> dict[str, str]:
    """Placement name → `firstSeen` in a drift file (empty when there is none, or it is not
    as dro wrote it: the drift then counts as first seen now)."""
    if data is None:
        return {}
    try:
        status = statefiles.status_of(paths.STATUS_DRIFT + "x.yaml", data)
    except (yamlio.YamlError, statefiles.StateError):
        return {}
    return {
        str(entry["resource"]): str(entry["firstSeen"])
        for entry in status.get("objects") or ()
        if isinstance(entry, Mapping)
    }


def vital(status: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What of a drift file is committed at once: which objects and fields drifted (not
    their values, which a fight over a field may change every pass)."""
    return [
        (
            entry.get("resource"),
            bool(entry.get("deleted")),
            tuple(f.get("pointer") for f in entry.get("fields") or () if isinstance(f, Mapping)),
        )
        for entry in status.get("objects") or ()
        if isinstance(entry, Mapping)
    ]
