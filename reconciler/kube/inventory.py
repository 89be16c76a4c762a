"""What dro applied to a cluster, the order it applies in, and what it may prune.

Like Flux's inventory, each cluster keeps the list of objects dro applied there, in a ConfigMap
in that cluster (`dro-system/dro-inventory`). Pruning deletes only objects that are in the
inventory and no longer rendered, so an object dro never applied is never touched, whatever its
labels say. This module is pure: it plans; the apply stage talks to the cluster.

Apply order is fixed: CustomResourceDefinitions (which must be Established before their custom
resources), then Namespaces, then what workloads need (quotas, storage, service accounts, RBAC,
config, services), then workloads and everything else. Pruning runs in the reverse order, so a
Namespace or a CRD goes last. Within a stage the order is by kind, namespace and name.

An object annotated `multicluster.io/deletion-protected: Always` in its live copy is never
pruned (the applier checks the live object before each delete).

Each entry records how dro came to hold the object (`Record.state`):
- `created`: dro applied it and it did not exist before (or dro has held it since);
- `adopted`: it existed, and dro took it over under the takeover rule; a prune releases it
  (drops it from the inventory) and never deletes it;
- `intended`: written before the apply that may create it (intent first), so that a pass
  killed mid-apply leaves nothing a later pass cannot prune. The next apply confirms it as
  `created`, or drops it.

The ConfigMap holds one line per object: `<id> <digest>` for a created one (the format of
earlier versions), `<id> <digest or -> <state>` for the others.

Called by 14 modules, among them `branch.driftfiles`, `live.apply`, `render`,
`service.observations`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from reconciler.domain import ObjectRef, ResourceKey

MANAGED_BY = ("app.kubernetes.io/managed-by", "dro")
"""The label every object dro applies carries (its inventory included)."""
MANAGED_BY_SELECTOR = "=".join(MANAGED_BY)
"""The label selector that lists what dro applied."""
PLACEMENT_ANNOTATION = "multicluster.io/placement"
"""`<group>/<kind>/<namespace>/<name>` of the workload an object (or pod) belongs to
(`placement_name`)."""
CORE_GROUP = "core"
"""The group segment of a placement name for the core API group (`v1`), whose name is empty:
no API group is called `core` (a CRD's group needs a dot), as RBAC and kubectl call it."""
CLUSTER_SCOPE = "_cluster"
"""The namespace segment of a placement name for a cluster-scoped object: no namespace can be
called so (a namespace is a DNS label), and the output branch's folder for them is named so."""
INVENTORY_NAMESPACE = "dro-system"
INVENTORY_NAME = "dro-inventory"
PROTECTION_ANNOTATION = "multicluster.io/deletion-protected"
PROTECTED = "Always"
CREATED, ADOPTED, INTENDED = "created", "adopted", "intended"

CRDS, NAMESPACES, PREREQUISITES, WORKLOADS = range(4)
_STAGE_OF_KIND = {
    "CustomResourceDefinition": CRDS,
    "Namespace": NAMESPACES,
    **dict.fromkeys(
        (
            "ResourceQuota",
            "LimitRange",
            "PriorityClass",
            "StorageClass",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "Secret",
            "Service",
            "NetworkPolicy",
        ),
        PREREQUISITES,
    ),
}
_KIND_RANK = {kind: rank for rank, kind in enumerate(_STAGE_OF_KIND)}


def placement_name(key: ResourceKey) -> str:
    """`<group>/<kind>/<namespace>/<name>` with no empty segment: `core` for the core group,
    `_cluster` for a cluster-scoped object (`core/Namespace/_cluster/shop`)."""
    return f"{key.group or CORE_GROUP}/{key.kind}/{key.namespace or CLUSTER_SCOPE}/{key.name}"


def parse_placement_name(value: object) -> ResourceKey | None:
    """The key a placement name names, `""` for the core group and for no namespace; None
    when it is not one. Reads the names dro writes and those of earlier versions, which left
    those segments empty (`/Namespace//shop`)."""
    parts = value.split("/") if isinstance(value, str) else []
    if len(parts) != 4 or not parts[1] or not parts[3]:
        return None
    group, kind, namespace, name = parts
    return ResourceKey(
        "" if group == CORE_GROUP else group,
        kind,
        "" if namespace == CLUSTER_SCOPE else namespace,
        name,
    )


def entry(ref: ObjectRef) -> str:
    """The inventory line's id: `namespace_name_group_kind_version`, as Flux writes its ids."""
    key = ref.key
    return "_".join((key.namespace, key.name, key.group, key.kind, ref.version))


def from_entry(line: str) -> ObjectRef:
    """The inverse of `entry`. Names, groups and kinds hold no `_`; a namespace neither."""
    namespace, name, group, kind, version = line.split("_")
    api_version = f"{group}/{version}" if group else version
    return ObjectRef(ResourceKey(group, kind, namespace, name), api_version)


def stage(key: ResourceKey) -> int:
    """The apply stage of an object: CRDS, NAMESPACES, PREREQUISITES or WORKLOADS."""
    return _STAGE_OF_KIND.get(key.kind, WORKLOADS)


def apply_order(ref: ObjectRef) -> tuple[int, int, str, str, str, str]:
    """Sort key: stage, kind, then group, namespace and name."""
    key = ref.key
    rank = _KIND_RANK.get(key.kind, len(_KIND_RANK))
    return (stage(key), rank, key.kind, key.group, key.namespace, key.name)


class Record(NamedTuple):
    """One inventory entry: the digest of the manifest last applied ("" when not known), and
    how dro came to hold the object (CREATED, ADOPTED or INTENDED)."""

    digest: str = ""
    state: str = CREATED

    @property
    def owned(self) -> bool:
        """Whether dro applied the object and holds it (created or adopted), as opposed to
        only having announced that it may create it."""
        return self.state in (CREATED, ADOPTED)


@dataclass(frozen=True, slots=True)
class Plan:
    """One cluster's pass: what to apply, in order, and what may be pruned, in order."""

    apply: tuple[Mapping[str, Any], ...]
    prune: tuple[ObjectRef, ...]
    inventory: tuple[ObjectRef, ...]
    """What the cluster's inventory holds once the pass succeeds: every object applied, and
    every object left to prune that has not been pruned yet."""


def plan(rendered: Iterable[Mapping[str, Any]], inventory: Iterable[ObjectRef]) -> Plan:
    """Plan a cluster's pass from its rendered objects and its current inventory.

    An object applied under a new apiVersion is the same object (the same `ResourceKey`): it
    is not pruned.
    """
    objects = sorted(rendered, key=lambda obj: apply_order(ObjectRef.of(obj)))
    wanted = {ResourceKey.of(obj) for obj in objects}
    stale = [ref for ref in set(inventory) if ref.key not in wanted]
    prune = tuple(sorted(stale, key=apply_order, reverse=True))
    applied = tuple(ObjectRef.of(obj) for obj in objects)
    return Plan(apply=tuple(objects), prune=prune, inventory=applied + prune)


def protected(live: Mapping[str, Any]) -> bool:
    """Whether a live object is protected from deletion."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    return annotations.get(PROTECTION_ANNOTATION) == PROTECTED


def digest(obj: Mapping[str, Any]) -> str:
    """A digest of a manifest as dro applies it: it tells a changed manifest (an update)
    from a live object changed behind dro's back (drift)."""
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def encode(held: Mapping[ObjectRef, Record]) -> dict[str, Any]:
    """The inventory ConfigMap: one line per object, sorted: its id, the digest of the
    manifest dro applied, and its state unless created."""
    entries = sorted(_line(ref, record) for ref, record in held.items())
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": INVENTORY_NAME,
            "namespace": INVENTORY_NAMESPACE,
            "labels": {MANAGED_BY[0]: MANAGED_BY[1]},
        },
        "data": {"entries": "".join(f"{entry}\n" for entry in entries)},
    }


def _line(ref: ObjectRef, record: Record) -> str:
    if record.state == CREATED:
        return f"{entry(ref)} {record.digest}".rstrip()
    return f"{entry(ref)} {record.digest or '-'} {record.state}"


def decode(configmap: Mapping[str, Any] | None) -> dict[ObjectRef, Record]:
    """Object → record of what an inventory ConfigMap holds; empty when it does not exist yet.
    A state this version does not know reads as INTENDED: held, but not taken as dro's."""
    if configmap is None:
        return {}
    text = str((configmap.get("data") or {}).get("entries", ""))
    held: dict[ObjectRef, Record] = {}
    for line in text.splitlines():
        if line:
            ident, digest, state, *_ = (*line.split(" "), "", "")
            state = state or CREATED
            known = state if state in (CREATED, ADOPTED, INTENDED) else INTENDED
            held[from_entry(ident)] = Record("" if digest == "-" else digest, known)
    return dict(sorted(held.items()))


def in_stages(objects: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """`objects` (already in apply order) cut into their stages, empty stages left out."""
    stages: list[list[Mapping[str, Any]]] = []
    current = -1
    for obj in objects:
        here = stage(ResourceKey.of(obj))
        if here != current:
            stages.append([])
            current = here
        stages[-1].append(obj)
    return stages
