"""Difference: rendered against live on one cluster, object by object, for `dro diff`.

Every rendered object is applied in a server-side dry run (field manager `dro`) over the live
one and the result compared with it (`drift.changes`), as `kubectl diff` does: a field the API
server defaults is not a difference, a field dro would change is. Nothing is written.

Three kinds of difference, as a pass would act on them:

- `modified`: the object exists and the pass would change it (each field's JSON pointer, live
  and rendered values);
- `missing`: rendered but not on the cluster: the pass would create it;
- `extra`: the cluster's inventory holds it and it is no longer rendered: the pass would prune
  it (or release it, when dro adopted it);
- `unowned`: it exists, differs, and dro neither created nor adopted it: the pass changes it
  only if its takeover rule adopts it (`takeover`), and otherwise reports it.

An object the API server rejects in the dry run is an error, not a difference. A Secret's
values are masked on both sides (`drift.masked`).

Called by `cli.diff` and `live`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler import yamlio
from reconciler.domain import ObjectRef
from reconciler.domain.drift import Change
from reconciler.kube import inventory
from reconciler.kube.client import Connection, Rejected
from reconciler.live import drift, takeover
from reconciler.live import unseal as unsealing

MODIFIED, MISSING, EXTRA, UNOWNED = "modified", "missing", "extra", "unowned"


@dataclass(frozen=True, slots=True)
class ObjectDifference:
    """One object that differs: how, the changed fields, and both sides as YAML (masked)."""

    ref: ObjectRef
    state: str
    changes: tuple[Change, ...]
    live: str
    """The live object as YAML, without status and server bookkeeping; "" when missing."""
    rendered: str
    """What the pass would make of it (the dry run's result) as YAML; "" when extra."""

    @property
    def name(self) -> str:
        """kubectl diff's file name: `apps.v1.Deployment.shop.web`, `v1.Namespace.shop`."""
        key = self.ref.key
        parts = [self.ref.api_version.replace("/", "."), key.kind, key.namespace, key.name]
        return ".".join(part for part in parts if part)

    def unified(self, cluster: str) -> list[str]:
        """A unified diff with `--- live/…` and `+++ rendered/…` headers, lines ending in
        newlines."""
        where = f"{cluster}/{self.name}"
        lines = difflib.unified_diff(
            self.live.splitlines(keepends=True),
            self.rendered.splitlines(keepends=True),
            fromfile=f"live/{where}",
            tofile=f"rendered/{where}",
        )
        return [f"diff -u -N live/{where} rendered/{where}\n", *lines]

    def document(self) -> dict[str, Any]:
        """The object's entry in `dro diff -o json`."""
        key = self.ref.key
        return {
            "apiVersion": self.ref.api_version,
            "kind": key.kind,
            **({"namespace": key.namespace} if key.namespace else {}),
            "name": key.name,
            "state": self.state,
            "changes": [change.document() for change in self.changes],
        }


@dataclass(slots=True)
class ClusterDifference:
    """What differs on one cluster, and what could not be compared there."""

    cluster: str
    objects: list[ObjectDifference] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def compare(
    connection: Connection,
    rendered: Sequence[Mapping[str, Any]],
    unseal: Callable[[Mapping[str, Any], str], Mapping[str, Any]] | None = None,
) -> ClusterDifference:
    """Every rendered object against the live one, then the inventory's objects no longer
    rendered, in apply order. A failure of the cluster itself (unreachable, 5xx) is raised.
    `unseal` gives an object as the API server gets it (a decrypted SOPS-encrypted Secret,
    whose values the difference masks as any Secret's); one it cannot open is an error."""
    result = ClusterDifference(connection.cluster)
    held = inventory.decode(
        connection.get("v1", "ConfigMap", inventory.INVENTORY_NAME, inventory.INVENTORY_NAMESPACE)
    )
    planned = inventory.plan(rendered, held)
    for obj in planned.apply:
        ref = ObjectRef.of(obj)
        record = held.get(ref)
        try:
            server = (unseal or unsealing.Unsealer(None))(obj, connection.cluster)
            found = _one(connection, ref, server, owned=record is not None and record.owned)
        except Rejected as error:
            result.errors.append(str(error))
            continue
        if found is not None:
            result.objects.append(found)
    for ref in reversed(planned.prune):
        try:
            live = drift.read(connection, ref)
        except Rejected as error:
            result.errors.append(str(error))
            continue
        if live is not None:
            shown, _ = drift.masked(takeover.comparable(live), {})
            change = Change("", live=shown)
            result.objects.append(ObjectDifference(ref, EXTRA, (change,), _yaml(shown), ""))
    return result


def _one(
    connection: Connection, ref: ObjectRef, obj: Mapping[str, Any], *, owned: bool
) -> ObjectDifference | None:
    live = drift.read(connection, ref)
    if live is None:
        _, shown = drift.masked({}, takeover.comparable(obj))
        change = Change("", rendered=shown)
        return ObjectDifference(ref, MISSING, (change,), "", _yaml(shown))
    preview = connection.apply(obj, dry_run=True)
    changes = drift.changes(live, preview)
    if not changes:
        return None
    before, after = drift.masked(takeover.comparable(live), takeover.comparable(preview))
    state = MODIFIED if owned or takeover.applied_by_dro(live) else UNOWNED
    return ObjectDifference(ref, state, changes, _yaml(before), _yaml(after))


def _yaml(obj: Mapping[str, Any]) -> str:
    return yamlio.dump(dict(obj))
