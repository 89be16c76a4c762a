"""Drift: where a live object differs from what dro applies, field by field.

The comparison is `kubectl diff`'s: the rendered manifest is applied in a server-side dry run
(field manager `dro`) over the live object, and the result is compared with the live object,
both without what the server changes on its own (`takeover.comparable`: status,
managedFields, resourceVersion …). A field the API server defaults is the same on both sides,
so it is never drift; a field another manager owns and the manifest does not name is kept by
the dry run, so it is never drift either.

- `changes(live, preview)`: the differing fields, each a `Change` with its JSON pointer
  (RFC 6901: `/spec/template/spec/containers/0/image`, `~1` for a `/` in a key) and the live
  and rendered values. A Secret's values (`data`, `stringData`) and the annotation that can
  copy them (`kubectl.kubernetes.io/last-applied-configuration`) are never shown: a marker
  stands for them (`masked`).
- `survey(connection, rendered, provenance)`: the drifted objects of one cluster, for the
  `status/drift/` files. Only objects dro applied with exactly this manifest count (the
  inventory holds its digest): a live object that differs from a manifest dro has not applied
  yet is an update, not drift. Beside them, the rendered objects that exist but are not dro's
  and that their takeover rule does not adopt (`foreign`): never written, so listed. A steady
  cluster costs one inventory read and one LIST per kind (and a read of each object dro does
  not hold); a dry run is made only for an object whose live copy does not hold every
  rendered field (`holds`), or that is foreign.
- `listed` and `holds` are those two shortcuts, shared with `apply`.

Called by `live`, `live.apply` and `live.difference`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from reconciler.domain import ObjectRef, ResourceKey, group_of
from reconciler.domain.drift import ABSENT, Change, Drifted
from reconciler.errors import ClusterError
from reconciler.kube import inventory
from reconciler.kube.client import Connection, Rejected, UnservedKind
from reconciler.live import takeover
from reconciler.live import unseal as unsealing
from reconciler.live.takeover import Provenance

SECRET_FIELDS = ("data", "stringData")
MASKED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
SAME = "<redacted>"
LIVE = "<redacted: live value>"
RENDERED = "<redacted: rendered value>"


def inventory_of(connection: Connection) -> dict[ObjectRef, inventory.Record]:
    """The cluster's inventory, through the pass's shared reads: the survey and apply read
    it alike."""
    return inventory.decode(
        connection.get(
            "v1", "ConfigMap", inventory.INVENTORY_NAME, inventory.INVENTORY_NAMESPACE, shared=True
        )
    )


def changes(live: Mapping[str, Any], preview: Mapping[str, Any]) -> tuple[Change, ...]:
    """Where `live` differs from `preview` (a dry run of the manifest over it), in pointer
    order, a Secret's values masked."""
    before, after = masked(takeover.comparable(live), takeover.comparable(preview))
    return tuple(_walk(before, after, ""))


def _walk(live: Any, rendered: Any, pointer: str) -> Iterator[Change]:
    if isinstance(live, Mapping) and isinstance(rendered, Mapping):
        for key in sorted(set(live) | set(rendered), key=str):
            yield from _walk(
                live.get(key, ABSENT), rendered.get(key, ABSENT), f"{pointer}/{escape(str(key))}"
            )
    elif isinstance(live, list) and isinstance(rendered, list):
        for index in range(max(len(live), len(rendered))):
            yield from _walk(
                live[index] if index < len(live) else ABSENT,
                rendered[index] if index < len(rendered) else ABSENT,
                f"{pointer}/{index}",
            )
    elif live != rendered or type(live) is not type(rendered):
        yield Change(pointer, live, rendered)


def escape(key: str) -> str:
    """One JSON pointer token (RFC 6901): `~` as `~0`, `/` as `~1`."""
    return key.replace("~", "~0").replace("/", "~1")


def masked(live: dict[str, Any], rendered: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides of a comparison, safe to show: each value of a Secret's `data` and
    `stringData`, and the last-applied annotation of any object, becomes `SAME` on both sides
    when it is equal, else `LIVE` and `RENDERED`. Keys stay, so the reader sees which changed."""
    live, rendered = _masked_annotation(live, rendered)
    if str(live.get("kind") or rendered.get("kind")) != "Secret":
        return live, rendered
    live, rendered = dict(live), dict(rendered)
    for field in SECRET_FIELDS:
        before, after = live.get(field), rendered.get(field)
        if not isinstance(before, Mapping) and not isinstance(after, Mapping):
            continue
        before, after = dict(before or {}), dict(after or {})
        for key in set(before) | set(after):
            same = before.get(key, ABSENT) == after.get(key, ABSENT)
            if key in before:
                before[key] = SAME if same else LIVE
            if key in after:
                after[key] = SAME if same else RENDERED
        for side, value in ((live, before), (rendered, after)):
            if field in side:
                side[field] = value
    return live, rendered


def _masked_annotation(
    live: dict[str, Any], rendered: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    found = [((side.get("metadata") or {}).get("annotations") or {}) for side in (live, rendered)]
    if not any(MASKED_ANNOTATION in annotations for annotations in found):
        return live, rendered
    same = found[0].get(MASKED_ANNOTATION, ABSENT) == found[1].get(MASKED_ANNOTATION, ABSENT)
    result = []
    for side, present, marker in ((live, found[0], LIVE), (rendered, found[1], RENDERED)):
        shown = side
        if MASKED_ANNOTATION in present:
            hidden = {**present, MASKED_ANNOTATION: SAME if same else marker}
            shown = {**side, "metadata": {**side["metadata"], "annotations": hidden}}
        result.append(shown)
    return result[0], result[1]


def survey(
    connection: Connection,
    rendered: Sequence[Mapping[str, Any]],
    provenance: Mapping[ResourceKey, Provenance] | None = None,
    unseal: Callable[[Mapping[str, Any], str], Mapping[str, Any]] | None = None,
) -> list[Drifted]:
    """The objects of `rendered` that dro applied as they are rendered (their digest is the
    inventory's) and whose live copy has drifted since, in apply order. An object whose dry
    run the API rejects is left to apply, which reports it. `unseal` gives an object as the
    API server gets it (a decrypted SOPS-encrypted Secret); one it cannot open is left to
    apply too."""
    sources = provenance or {}
    inventoried = inventory_of(connection)
    digests: dict[ObjectRef, str] = {}
    for obj in rendered:
        ref = ObjectRef.of(obj)
        record = inventoried.get(ref)
        if record is not None and record.owned and record.digest == inventory.digest(obj):
            digests[ref] = record.digest
    applied = [obj for obj in rendered if ObjectRef.of(obj) in digests]
    applied.sort(key=lambda obj: inventory.apply_order(ObjectRef.of(obj)))
    found = _foreign(connection, rendered, inventoried, sources)
    for stage in inventory.in_stages(applied):
        live = listed(connection, stage)
        for obj in stage:
            ref = ObjectRef.of(obj)
            rule = sources.get(ref.key, Provenance()).drift
            now = live[ref] if ref in live else read(connection, ref)
            if now is None:
                found.append(Drifted(ref.key, rule, deleted=True))
                continue
            try:
                server = (unseal or unsealing.Unsealer(None))(obj, connection.cluster)
                if held(connection, now, server, digests[ref]):
                    continue
                preview = connection.apply(server, dry_run=True)
            except Rejected:
                continue
            differences = changes(now, preview)
            if differences:
                found.append(Drifted(ref.key, rule, differences))
    return found


def _foreign(
    connection: Connection,
    rendered: Sequence[Mapping[str, Any]],
    held: Mapping[ObjectRef, inventory.Record],
    sources: Mapping[ResourceKey, Provenance],
) -> list[Drifted]:
    """The rendered objects that exist, that dro neither holds nor applied, and that their
    takeover rule does not let dro adopt (`takeover.refusal`): apply reports them and leaves
    them as they are, and so they are listed with what the manifest would change."""
    found: list[Drifted] = []
    for obj in rendered:
        ref = ObjectRef.of(obj)
        record = held.get(ref)
        if record is not None and record.owned:
            continue
        rule = sources.get(ref.key, Provenance()).takeover
        try:
            live = read(connection, ref)
            if live is None or takeover.applied_by_dro(live):
                continue
            if takeover.refusal(connection, obj, live, rule) is None:
                continue
            preview = connection.apply(obj, dry_run=True)
        except Rejected:
            continue
        found.append(Drifted(ref.key, rule, changes(live, preview), foreign=True))
    return found


def read(connection: Connection, ref: ObjectRef) -> dict[str, Any] | None:
    """The live object `ref` names, or None where it does not exist or its kind is not
    served."""
    key = ref.key
    try:
        return connection.get(ref.api_version, key.kind, key.name, key.namespace or None)
    except UnservedKind:
        return None


def listed(
    connection: Connection, stage: Sequence[Mapping[str, Any]]
) -> dict[ObjectRef, dict[str, Any] | None]:
    """The live objects of a stage, by the ref they are listed under, from one LIST per
    kind of what dro manages (its `managed-by` label): a steady pass reads each kind once
    instead of every object. A kind that cannot be listed is left out; its objects are then
    read one by one."""
    found: dict[ObjectRef, dict[str, Any] | None] = {}
    kinds = sorted({(str(o["apiVersion"]), str(o["kind"])) for o in stage if takeover.labelled(o)})
    for api_version, kind in kinds:
        try:
            items = connection.list(
                api_version, kind, label_selector=inventory.MANAGED_BY_SELECTOR, shared=True
            )
        except ClusterError:
            continue
        for obj in stage:
            if (obj["apiVersion"], obj["kind"]) == (api_version, kind) and takeover.labelled(obj):
                found[ObjectRef.of(obj)] = None  # absent unless listed below
        for item in items:
            metadata = item.get("metadata") or {}
            key = ResourceKey(
                group_of(api_version),
                kind,
                metadata.get("namespace") or "",
                metadata.get("name", ""),
            )
            ref = ObjectRef(key, api_version)
            if ref in found:
                found[ref] = {"apiVersion": api_version, "kind": kind, **item}
    return found


KNOWN_LIMIT = 200_000
"""At most this many objects' verdicts are kept per connection (`held`)."""


def held(
    connection: Connection, live: Mapping[str, Any], wanted: Mapping[str, Any], digest: str
) -> bool:
    """`holds(live, wanted)`, `wanted` being the manifest of digest `digest` as the server
    gets it, without comparing again an object found to hold it at the same resourceVersion:
    a kept connection (`live.pool`) remembers it, so a steady cluster's objects are compared
    once, not on every pass (the server gives an object a new resourceVersion on every
    change, and a new uid when it is made again)."""
    metadata = live.get("metadata") or {}
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    if not isinstance(uid, str) or not isinstance(version, str) or not uid or not version:
        return holds(live, wanted)
    key = (uid, digest)
    if connection.known.get(key) == version:
        return True
    if not holds(live, wanted):
        return False
    if len(connection.known) >= KNOWN_LIMIT:
        connection.known.clear()
    connection.known[key] = version
    return True


def holds(live: Any, wanted: Any) -> bool:
    """Whether `live` has every field of `wanted` with the same value: maps may hold more
    keys (server defaults, other managers' fields), lists must match item by item."""
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(
            key in live and holds(live[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(holds(a, b) for a, b in zip(live, wanted, strict=True))
        )
    return bool(live == wanted) and type(live) is type(wanted)
