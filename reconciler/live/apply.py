"""Apply: bring one cluster to its rendered manifests, Flux's way, safely.

`sync` takes one cluster's rendered objects and a `kube.Connection`:

1. It reads the cluster's inventory (what dro holds there). A cluster whose inventory cannot
   be read is unreachable: nothing is applied and nothing pruned there.
2. Survey: every rendered object the inventory does not hold as dro's is read. One that does
   not exist, or that dro itself applied in a pass killed before it could record it, will be
   created. One that exists and is someone else's is adopted only as its takeover rule says
   (`takeover.py`); otherwise it is reported, with its source file and line, and never
   written.
3. Intent first: the inventory is written before any object it names, holding the union of
   what it held and what this pass may create (`intended`) or adopt, so a pass killed at any
   point leaves nothing a later pass cannot prune.
4. It applies in stages (`inventory.apply_order`): CRDs, which it waits for until they are
   Established, then Namespaces, prerequisites and workloads. Each object is first compared
   with the live one (a LIST by dro's label, or a server-side dry run), so an object already
   as rendered costs no write: a steady pass writes nothing. A difference is an update when
   the manifest changed since dro last applied it (its digest in the inventory), and drift
   when it did not; both are applied (server-side apply, field manager `dro`, conflicts
   forced), and drift is reported. Under the drift rule Report (`placement.apply.drift`) a
   drifted object, or one deleted behind dro's back, is only reported and left as it is; a
   changed manifest is still applied.
5. One bad object does not stop the others: an object the API server rejects (`kube.Rejected`:
   422 Invalid, 400, 403, 404 …) or that may not be taken over is reported with its source
   file and line and the server's message, and every other object, in every stage, is still
   applied. A failure of the cluster itself (unreachable, timeouts, 5xx, 401, 429, a CRD not
   Established, the inventory not writable) stops that cluster's later stages.
6. Prune, when the caller allows it, deletes what the inventory holds and is no longer
   rendered, in reverse order, and only what dro created: the live object must still carry
   dro's `managed-by` label (and, for an entry only `intended`, dro's field manager). An
   adopted object is released (dropped from the inventory, left in place), and one annotated
   `multicluster.io/deletion-protected: Always` is spared.

   **When prune is held back.** Nowhere in the fleet while any cluster could not be listed,
   failed as a cluster (step 5), or any stage before apply failed. A rejected or refused
   object holds back, on every cluster, the prune of stale objects of the same kind in the
   same namespace (the same kind, cluster-wide, for a cluster-scoped kind): those are what it
   may be replacing (a rename, a move between clusters), and removing them before their
   successor runs would cut service. Every other stale object is pruned.
7. Confirm: the inventory is written back with what this pass applied, what is still to be
   pruned, and the intended entries it could not settle; only when it changed.

Every object touched gets one result, a `ResultCode` with its `ResourceKey` and a message
(`outcome.py`); the cluster's `ClusterSync` aggregates them into its counts and report lines.

Called by `live`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from reconciler.domain import ObjectRef, ResourceKey
from reconciler.errors import ClusterError
from reconciler.kube import inventory
from reconciler.kube.client import Connection, Rejected, UnservedKind
from reconciler.kube.inventory import ADOPTED, CREATED, INTENDED, Record
from reconciler.live import drift, takeover
from reconciler.live import unseal as unsealing
from reconciler.live.outcome import ClusterSync, KindInNamespace, ObjectResult, ResultCode, scope
from reconciler.live.takeover import Provenance

ESTABLISH_TIMEOUT_S = 60.0
HELD_BACK = "an object of its kind in its namespace was rejected: not pruned yet"
ADOPTED_RELEASED = "adopted, not created by dro: released, not deleted"
UNLABELLED_LEFT = "does not carry dro's label: left in place"
NO_PROVENANCE = Provenance()
_SEALED_REFUSED = unsealing.Unsealer(None)
"""Without a key: a SOPS-encrypted Secret is refused, every other object passes unchanged."""
DELETED_LIVE = "deleted on the cluster"


def sync(
    connection: Connection,
    rendered: Iterable[Mapping[str, Any]],
    *,
    prune: bool,
    provenance: Mapping[ResourceKey, Provenance] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ClusterSync:
    """Apply one cluster's rendered objects; prune only when `prune` and nothing failed."""
    report = apply_all(connection, rendered, provenance=provenance, sleep=sleep, clock=clock)
    return finish(connection, report, prune=prune, hold=report.holds)


def apply_all(
    connection: Connection,
    rendered: Iterable[Mapping[str, Any]],
    *,
    provenance: Mapping[ResourceKey, Provenance] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    unseal: Callable[[Mapping[str, Any], str], Mapping[str, Any]] | None = None,
) -> ClusterSync:
    """Steps 1-5: read the inventory, survey, write the intent, and apply every rendered
    object, stage by stage. `provenance` names each object's source and takeover rule. The
    caller then calls `finish`, once it knows whether the whole pass allows pruning.
    `unseal` gives each object as the API server gets it (`live.unseal` decrypts a
    SOPS-encrypted Secret; without it such a Secret is refused, never applied encrypted); the
    inventory records the rendered object's digest."""
    sources = provenance or {}
    report = ClusterSync(connection.cluster)
    try:
        held = drift.inventory_of(connection)
    except ClusterError as error:
        report.reachable = False
        report.failed.append(str(error))
        return report
    planned = inventory.plan(rendered, held)
    report.held, report.stored, report.stale = held, dict(held), planned.prune
    owned = {ref.key: record for ref, record in held.items() if record.owned}
    try:
        intent = _survey(connection, planned.apply, owned, sources, report)
    except ClusterError as error:
        report.failed.append(str(error))
        return report
    if not _write_inventory(connection, report, {**held, **intent}):
        return report  # nothing is applied that the inventory could not name first
    for stage in inventory.in_stages(planned.apply):
        live = drift.listed(connection, stage)
        for obj in stage:
            ref = ObjectRef.of(obj)
            if ref.key in report.refused:
                continue
            record = owned.get(ref.key) or intent.get(ref) or Record(state=INTENDED)
            where = sources.get(ref.key, NO_PROVENANCE)
            try:
                server = (unseal or _SEALED_REFUSED)(obj, connection.cluster)
                wanted = inventory.digest(obj)
                _apply_one(
                    connection,
                    obj,
                    record.digest or None,
                    report,
                    live,
                    where.drift,
                    server,
                    wanted=wanted,
                )
                state = ADOPTED if record.state == ADOPTED else CREATED
                report.done[ref] = Record(wanted, state)
            except Rejected as error:
                report.add(_failure(ref, where, ResultCode.SYNC_FAILED, str(error)))
            except ClusterError as error:
                report.failed.append(str(error))
        crds = [o for o in stage if ObjectRef.of(o) in report.done]
        if (
            inventory.stage(ResourceKey.of(stage[0])) == inventory.CRDS
            and crds
            and not report.failed
        ):
            _await_established(connection, crds, report, sleep, clock)
        if report.failed:
            break  # the cluster itself is in trouble: a later stage may depend on this one
    return report


def finish(
    connection: Connection,
    report: ClusterSync,
    *,
    prune: bool,
    hold: Collection[KindInNamespace] = (),
) -> ClusterSync:
    """Steps 6-7: when `prune` and this cluster did not fail, prune what the inventory holds
    and is no longer rendered, except objects of a kind and namespace in `hold`; then write
    the inventory back with what this pass settled."""
    if not report.reachable:
        return report
    remaining = {ref: report.held[ref] for ref in report.stale}
    if prune and report.clean:
        for ref in report.stale:
            if scope(ref.key) in hold:
                report.add(ObjectResult(ref.key, ResultCode.HELD, HELD_BACK))
                continue
            if _prune_one(connection, ref, report.held[ref], report):
                del remaining[ref]
    stale, settled = set(report.stale), {ref.key for ref in report.done}
    unsettled = {  # still rendered but not applied this pass: kept, unless never dro's
        ref: record
        for ref, record in report.stored.items()
        if ref not in stale
        and ref.key not in settled
        and not (ref.key in report.refused and not record.owned)
    }
    _write_inventory(connection, report, {**unsettled, **report.done, **remaining})
    return report


def _survey(
    connection: Connection,
    objects: Sequence[Mapping[str, Any]],
    owned: Mapping[ResourceKey, Record],
    sources: Mapping[ResourceKey, Provenance],
    report: ClusterSync,
) -> dict[ObjectRef, Record]:
    """Read every rendered object dro does not hold: the intent entries of those it will
    create or adopt. Those it may not adopt, and those the API rejects, go to `report`."""
    intent: dict[ObjectRef, Record] = {}
    for obj in objects:
        ref = ObjectRef.of(obj)
        if ref.key in owned:
            continue
        where = sources.get(ref.key, NO_PROVENANCE)
        try:
            live = _read(connection, ref)
            if live is None or takeover.applied_by_dro(live):
                intent[ref] = Record(state=INTENDED)
                continue
            why = takeover.refusal(connection, obj, live, where.takeover)
        except Rejected as error:
            report.add(_failure(ref, where, ResultCode.SYNC_FAILED, str(error)))
            continue
        if why is None:
            intent[ref] = Record(state=ADOPTED)
        else:
            refusal = (
                f"cluster {connection.cluster}: {ref} exists and dro did not create it; "
                f"not adopted, left as it is: {why}"
            )
            report.add(_failure(ref, where, ResultCode.REFUSED, refusal))
    return intent


def _read(connection: Connection, ref: ObjectRef) -> dict[str, Any] | None:
    """The live object, or None when it does not exist (its kind not served yet included:
    the CRD that serves it may come in this very pass)."""
    try:
        key = ref.key
        return connection.get(ref.api_version, key.kind, key.name, key.namespace or None)
    except Rejected as error:
        if isinstance(error, UnservedKind):
            return None
        raise


def _apply_one(
    connection: Connection,
    obj: Mapping[str, Any],
    recorded: str | None,
    report: ClusterSync,
    listed: Mapping[ObjectRef, dict[str, Any] | None],
    rule: str = takeover.CORRECT,
    server: Mapping[str, Any] | None = None,
    *,
    wanted: str | None = None,
) -> None:
    """Apply one object unless the live one is already as rendered. An object listed absent
    is applied at once; one listed live that holds every rendered field unchanged, with the
    manifest dro last applied, costs no request; anything else is settled by a server-side
    dry run compared with the live object. Under the drift `rule` Report, an object that
    drifted from the manifest dro last applied (or was deleted) is reported, not written.
    `server` is `obj` as the API server gets it, when that differs (a decrypted Secret);
    `wanted` the digest of `obj`, when the caller has it."""
    ref = ObjectRef.of(obj)
    wanted = wanted or inventory.digest(obj)
    obj = obj if server is None else server  # what the API server gets (decrypted)
    outcome = ObjectResult(ref.key, ResultCode.SYNCED)
    report_only = rule == takeover.REPORT and recorded == wanted
    if ref in listed:
        live = listed[ref]
        if live is not None and recorded == wanted and drift.held(connection, live, obj, wanted):
            report.add(ObjectResult(ref.key, ResultCode.UNCHANGED))
            return
    else:
        live = _get(connection, ref)
    if live is not None:
        before, after = _compared(connection, obj, live)
        if before != after and ref in listed:
            # The list is older than the dry run: a controller may have written since (a
            # Deployment's revision annotation). Compare with the object as it is now.
            live = _get(connection, ref)
            if live is not None:
                before, after = _compared(connection, obj, live)
        if live is not None and before == after:
            report.add(ObjectResult(ref.key, ResultCode.UNCHANGED))
            return
        if live is not None and recorded == wanted:
            fields = ", ".join(takeover.differences_of(before, after)) or "metadata"
            if report_only:
                report.add(ObjectResult(ref.key, ResultCode.DRIFT_REPORTED, fields))
                return
            outcome = ObjectResult(ref.key, ResultCode.DRIFT_CORRECTED, fields)
    if live is None and report_only:
        report.add(ObjectResult(ref.key, ResultCode.DRIFT_REPORTED, DELETED_LIVE))
        return
    connection.apply(obj)
    report.add(outcome)
    report.writes += 1


def _compared(
    connection: Connection, obj: Mapping[str, Any], live: Mapping[str, Any]
) -> tuple[Any, Any]:
    """The live object and what a server-side dry run of `obj` would make of it, each without
    the fields that change on every write (`takeover.comparable`)."""
    preview = connection.apply(obj, dry_run=True)
    return takeover.comparable(live), takeover.comparable(preview)


def _get(connection: Connection, ref: ObjectRef) -> dict[str, Any] | None:
    """The live object under the apiVersion of `ref`, or None when it does not exist."""
    key = ref.key
    return connection.get(ref.api_version, key.kind, key.name, key.namespace or None)


def _failure(ref: ObjectRef, where: Provenance, code: ResultCode, why: str) -> ObjectResult:
    """An object that cannot be applied here, with where it was written."""
    return ObjectResult(ref.key, code, why, where.where)


def _await_established(
    connection: Connection,
    crds: Sequence[Mapping[str, Any]],
    report: ClusterSync,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    """Wait (bounded) until every CRD of the stage is Established."""
    deadline = clock() + ESTABLISH_TIMEOUT_S
    waiting = [ObjectRef.of(crd) for crd in crds]
    while waiting:
        waiting = [ref for ref in waiting if not _established(connection, ref)]
        if not waiting:
            return
        if clock() >= deadline:
            names = ", ".join(ref.key.name for ref in waiting)
            report.failed.append(f"cluster {connection.cluster}: CRD not Established: {names}")
            return
        sleep(0.2)


def _established(connection: Connection, ref: ObjectRef) -> bool:
    live = _get(connection, ref)
    conditions = ((live or {}).get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _prune_one(connection: Connection, ref: ObjectRef, record: Record, report: ClusterSync) -> bool:
    """Delete one stale object that dro created; False when it must stay in the inventory
    (the delete failed). An adopted, protected or foreign object leaves the inventory
    without being deleted."""
    if record.state == ADOPTED:
        report.add(ObjectResult(ref.key, ResultCode.RELEASED, ADOPTED_RELEASED))
        return True
    try:
        live = _read(connection, ref)
        if live is None:
            return True
        if inventory.protected(live):
            report.add(ObjectResult(ref.key, ResultCode.PROTECTED))
            return True
        mine = (
            takeover.applied_by_dro(live) if record.state == INTENDED else takeover.labelled(live)
        )
        if not mine:
            report.add(ObjectResult(ref.key, ResultCode.RELEASED, UNLABELLED_LEFT))
            return True
        key = ref.key
        if connection.delete(ref.api_version, key.kind, key.name, key.namespace or None):
            report.add(ObjectResult(ref.key, ResultCode.PRUNED))
            report.writes += 1
        return True
    except ClusterError as error:
        report.failed.append(str(error))
        return False


def _write_inventory(
    connection: Connection, report: ClusterSync, now: Mapping[ObjectRef, Record]
) -> bool:
    """Store `now` as the cluster's inventory unless it holds that already; False when the
    write failed (recorded in `report`)."""
    if dict(report.stored) == dict(now):
        return True
    try:
        if not report.stored:
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
        return False
    report.stored = dict(now)
    return True
