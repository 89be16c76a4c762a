"""Apply: bring one cluster to its rendered manifests, Flux's way.

`sync` takes one cluster's rendered objects and a `kube.Connection`:

1. It reads the cluster's inventory (what dro applied there before). A cluster whose
   inventory cannot be read is unreachable: nothing is applied and nothing pruned there.
2. It applies in stages (`inventory.apply_order`): CRDs, which it waits for until they are
   Established, then Namespaces, prerequisites and workloads. Each object is first applied
   as a server-side dry run and compared with the live object, so an object already as
   rendered costs no write: a steady pass writes nothing.
3. A difference is an update when the manifest changed since dro last applied it (its digest
   in the inventory), and drift when it did not: someone changed a field dro manages in the
   live object. Both are applied (server-side apply, field manager `dro`, conflicts forced);
   drift is reported per object, with the fields that drifted.
4. Only when the caller allows it (every part of the pass succeeded, every cluster could be
   listed) and this cluster applied without a failure, it prunes what the inventory holds
   and is no longer rendered, in reverse order, sparing objects annotated
   `multicluster.io/deletion-protected: Always`.
5. It writes the inventory back, only when it changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler import inventory
from reconciler.errors import ClusterError
from reconciler.inventory import Ref
from reconciler.kube import Connection

ESTABLISH_TIMEOUT_S = 60.0
_VOLATILE = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")


@dataclass(slots=True)
class ClusterSync:
    """What one cluster's pass did: counts per outcome, and a line per drift or failure."""

    cluster: str
    reachable: bool = True
    applied: int = 0
    unchanged: int = 0
    pruned: int = 0
    drifted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    writes: int = 0
    written: list[str] = field(default_factory=list)
    """Objects written this pass (applied or pruned), for the audit log."""
    held: dict[Ref, str] = field(default_factory=dict, repr=False)
    """The inventory as read: object → digest of the manifest last applied."""
    stale: tuple[Ref, ...] = field(default=(), repr=False)
    """Inventory objects no longer rendered: what a prune would delete, in reverse order."""
    done: dict[Ref, str] = field(default_factory=dict, repr=False)
    """Objects applied (or already as rendered) this pass → their manifest digest."""

    @property
    def ok(self) -> bool:
        """Reached, and nothing failed."""
        return self.reachable and not self.failed


def sync(
    connection: Connection,
    rendered: Iterable[Mapping[str, Any]],
    *,
    prune: bool,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ClusterSync:
    """Apply one cluster's rendered objects; prune only when `prune` and nothing failed."""
    return finish(
        connection, apply_all(connection, rendered, sleep=sleep, clock=clock), prune=prune
    )


def apply_all(
    connection: Connection,
    rendered: Iterable[Mapping[str, Any]],
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ClusterSync:
    """Steps 1-3: read the inventory and apply every rendered object, stage by stage. The
    caller then calls `finish`, once it knows whether the whole pass allows pruning."""
    report = ClusterSync(connection.cluster)
    try:
        held = inventory.decode(
            connection.get(
                "v1", "ConfigMap", inventory.INVENTORY_NAME, inventory.INVENTORY_NAMESPACE
            )
        )
    except ClusterError as error:
        report.reachable = False
        report.failed.append(str(error))
        return report
    planned = inventory.plan(rendered, held)
    report.held, report.stale = held, planned.prune
    for stage in inventory.in_stages(planned.apply):
        live = _listed(connection, stage)
        for obj in stage:
            ref = Ref.of(obj)
            try:
                _apply_one(connection, obj, held.get(ref), report, live)
                report.done[ref] = inventory.digest(obj)
            except ClusterError as error:
                report.failed.append(str(error))
        if inventory.stage(Ref.of(stage[0])) == inventory.CRDS and not report.failed:
            _await_established(connection, stage, report, sleep, clock)
        if report.failed:
            break  # a later stage may depend on this one
    return report


def finish(connection: Connection, report: ClusterSync, *, prune: bool) -> ClusterSync:
    """Steps 4-5: prune what the inventory holds and is no longer rendered, when `prune`
    and this cluster applied without a failure; then write the inventory back."""
    if not report.reachable:
        return report
    remaining = {ref: report.held.get(ref, "") for ref in report.stale}
    if prune and report.ok:
        for ref in report.stale:
            if _prune_one(connection, ref, report):
                del remaining[ref]
    _write_inventory(connection, report.held, {**report.done, **remaining}, report)
    return report


def _listed(
    connection: Connection, stage: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, str, str, str], dict[str, Any] | None]:
    """The live objects of a stage, by (apiVersion, kind, namespace, name), from one LIST per
    kind of what dro manages (its `managed-by` label): a steady pass reads each kind once
    instead of every object. A kind that cannot be listed is left out; its objects are then
    read one by one."""
    found: dict[tuple[str, str, str, str], dict[str, Any] | None] = {}
    kinds = sorted({(str(o["apiVersion"]), str(o["kind"])) for o in stage if _managed(o)})
    for api_version, kind in kinds:
        try:
            items = connection.list(api_version, kind, label_selector=inventory.MANAGED_BY_SELECTOR)
        except ClusterError:
            continue
        for obj in stage:
            if (obj["apiVersion"], obj["kind"]) == (api_version, kind) and _managed(obj):
                found[_identity(obj)] = None  # absent unless listed below
        for item in items:
            metadata = item.get("metadata") or {}
            key = (api_version, kind, metadata.get("namespace") or "", metadata.get("name", ""))
            if key in found:
                found[key] = {"apiVersion": api_version, "kind": kind, **item}
    return found


def _apply_one(
    connection: Connection,
    obj: Mapping[str, Any],
    recorded: str | None,
    report: ClusterSync,
    listed: Mapping[tuple[str, str, str, str], dict[str, Any] | None],
) -> None:
    """Apply one object unless the live one is already as rendered. An object listed absent
    is applied at once; one listed live that holds every rendered field unchanged, with the
    manifest dro last applied, costs no request; anything else is settled by a server-side
    dry run compared with the live object."""
    ref = Ref.of(obj)
    wanted = inventory.digest(obj)
    identity = _identity(obj)
    if identity in listed:
        live = listed[identity]
        if live is not None and recorded == wanted and _holds(live, obj):
            report.unchanged += 1
            return
    else:
        live = connection.get(ref.api_version, ref.kind, ref.name, ref.namespace or None)
    if live is not None:
        preview = connection.apply(obj, dry_run=True)
        if _comparable(live) == _comparable(preview):
            report.unchanged += 1
            return
        if recorded == wanted:
            fields = ", ".join(_differences(_comparable(live), _comparable(preview)))
            report.drifted.append(f"{ref}: {fields or 'metadata'}")
    connection.apply(obj)
    report.applied += 1
    report.writes += 1
    report.written.append(f"apply {ref}")


def _managed(obj: Mapping[str, Any]) -> bool:
    """Whether an object carries dro's `managed-by` label, so that a LIST by it finds it."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(inventory.MANAGED_BY[0]) == inventory.MANAGED_BY[1])


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    metadata = obj.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    return (str(obj["apiVersion"]), str(obj["kind"]), namespace, str(metadata.get("name", "")))


def _holds(live: Any, wanted: Any) -> bool:
    """Whether `live` has every field of `wanted` with the same value: maps may hold more
    keys (server defaults, other managers' fields), lists must match item by item."""
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(
            key in live and _holds(live[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(_holds(a, b) for a, b in zip(live, wanted, strict=True))
        )
    return bool(live == wanted) and type(live) is type(wanted)


def _await_established(
    connection: Connection,
    crds: Sequence[Mapping[str, Any]],
    report: ClusterSync,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    """Wait (bounded) until every CRD of the stage is Established."""
    deadline = clock() + ESTABLISH_TIMEOUT_S
    waiting = [Ref.of(crd) for crd in crds]
    while waiting:
        waiting = [ref for ref in waiting if not _established(connection, ref)]
        if not waiting:
            return
        if clock() >= deadline:
            names = ", ".join(ref.name for ref in waiting)
            report.failed.append(f"cluster {connection.cluster}: CRD not Established: {names}")
            return
        sleep(0.2)


def _established(connection: Connection, ref: Ref) -> bool:
    live = connection.get(ref.api_version, ref.kind, ref.name)
    conditions = ((live or {}).get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _prune_one(connection: Connection, ref: Ref, report: ClusterSync) -> bool:
    """Delete one stale object; False when it must stay in the inventory (the delete
    failed). A protected object leaves the inventory without being deleted."""
    try:
        live = connection.get(ref.api_version, ref.kind, ref.name, ref.namespace or None)
        if live is not None and inventory.protected(live):
            report.protected.append(str(ref))
            return True
        if live is not None and connection.delete(
            ref.api_version, ref.kind, ref.name, ref.namespace or None
        ):
            report.pruned += 1
            report.writes += 1
            report.written.append(f"prune {ref}")
        return True
    except ClusterError as error:
        report.failed.append(str(error))
        return False


def _write_inventory(
    connection: Connection, held: Mapping[Ref, str], now: Mapping[Ref, str], report: ClusterSync
) -> None:
    if dict(held) == dict(now):
        return
    try:
        if not held:
            namespace = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": inventory.INVENTORY_NAMESPACE},
            }
            connection.apply(namespace)
            report.writes += 1
        connection.apply(inventory.encode(now))
        report.writes += 1
    except ClusterError as error:
        report.failed.append(str(error))


def _comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without what the server changes on its own: status and bookkeeping."""
    result = {k: v for k, v in obj.items() if k != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE}
    result["metadata"] = metadata
    return result


def _differences(live: Any, wanted: Any, path: str = "") -> list[str]:
    """The paths (`.spec.replicas`) where `live` differs from `wanted`, first 5."""
    if isinstance(live, Mapping) and isinstance(wanted, Mapping):
        found: list[str] = []
        for key in sorted(set(live) | set(wanted)):
            found += _differences(live.get(key), wanted.get(key), f"{path}.{key}")
        return found[:5]
    return [] if live == wanted else [path or "."]
