"""Steady clusters: the drift survey and the apply of a cluster whose objects are as a
survey or an apply of the same tree last found them give that result again, without
comparing each object.

What `drift.survey` and `apply.apply_all` find on a cluster is a function of the rendered
objects, their rules (`takeover.provenance`), the cluster's inventory and its live objects,
and the answers of any request they make. When a call made no request of its own (every
read it needed came from the pass's shared reads: `Connection.share_reads`), its result
depended on the inventory and the listed objects alone: the same bytes of the inventory and
of the LIST of each rendered kind (their digests, `kube.client.Body`) mean the same result,
and they are compared without being parsed. A kept connection (`live.pool`) remembers, per
purpose, the last such result with the tree (its `Folders`, by identity), the rules (by
identity) and that fingerprint.
A rendered object without dro's label is read on its own, and an encrypted Secret's outcome
depends on the sops key and binary, so a cluster with either is never remembered; an apply
that wrote or refused an object, or a survey that ran a dry run, is not either.

Called by `live`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from reconciler.errors import ClusterError
from reconciler.kube import inventory
from reconciler.kube.client import Connection

R = TypeVar("R")

Kinds = Sequence[tuple[str, str]]
"""The (apiVersion, kind) of a cluster's rendered objects, sorted."""


@dataclass(frozen=True, slots=True)
class _Kept:
    folders: object
    rules: object
    fingerprint: tuple[Any, ...]
    result: Any


def remembered(
    connection: Connection,
    purpose: str,
    kinds: Kinds | None,
    same: tuple[object, object],
    compute: Callable[[], R],
    copy: Callable[[R], R],
    worth: Callable[[R], bool] = lambda _result: True,
) -> R:
    """`compute()`, or the result it gave last time on this connection for `purpose` when
    nothing it depends on changed since (the module's docstring). `kinds` are the cluster's
    rendered kinds (None: an object lacks dro's label or is encrypted, never remembered);
    `same` the tree's `Folders` and the rules, compared by identity; `copy` gives each caller
    its own result; only a result `worth` remembering is (an apply that refused nothing)."""
    if kinds is None:
        return compute()
    before = fingerprint(connection, kinds)
    kept = connection.steady.get(purpose)
    if (
        before is not None
        and isinstance(kept, _Kept)
        and kept.folders is same[0]
        and kept.rules is same[1]
        and kept.fingerprint == before
    ):
        return copy(kept.result)
    connection.steady.pop(purpose, None)
    made = connection.requests
    result = compute()
    if before is not None and connection.requests == made and worth(result):
        connection.steady[purpose] = _Kept(same[0], same[1], before, copy(result))
    return result


def fingerprint(connection: Connection, kinds: Kinds) -> tuple[Any, ...] | None:
    """The digests (`Body.digest`) of the inventory and of the LIST of every object dro
    labelled of `kinds`, from the pass's shared reads (made now when not yet); None when one
    cannot be read. Equal digests mean the same objects at the same resourceVersions."""
    try:
        found = connection.read(
            "v1",
            "ConfigMap",
            inventory.INVENTORY_NAME,
            inventory.INVENTORY_NAMESPACE,
            shared=True,
        )
        parts: list[Any] = [found.digest if found is not None else None]
        for api_version, kind in kinds:
            listed = connection.listing(
                api_version, kind, label_selector=inventory.MANAGED_BY_SELECTOR, shared=True
            )
            parts.append((api_version, kind, listed.digest))
    except ClusterError:
        return None
    return tuple(parts)
