"""The observations a member of a sharded `dro run` publishes, and the leader gathers.

Each member writes one ConfigMap, `<lease-name>-observations-<identity>`, in the Lease's
namespace, after observing its own clusters: key `observations.json` holds a JSON document
with the member's identity, the time it observed, the members and clusters it saw as its own
(its assignment view), each owned cluster's `Observation` in full (figures, pending pods, the
health, sync marks and revisions of the workloads dro applied there), why the unreachable
ones could not be listed, and each surveyed cluster's drift from the output branch's tree
(`drift.survey`: a Secret's values already masked), for the leader's `status/drift/` files.
A document over `INLINE_LIMIT` bytes is stored gzipped under `binaryData`
(`observations.json.gz`), as a ConfigMap holds at most 1 MiB.

The leader reads them all (`gather`) and keeps, for each cluster, the observation of its
owner: the member that had it in its own view when it observed, and whose document is fresh
(observed at most `fresh` seconds ago) and still a live member. When two members' views
overlap during a handover, the later observation wins.

Called by `service.sharding`.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from reconciler import errors
from reconciler.domain import Observation, ResourceKey, durations
from reconciler.domain.drift import ABSENT, Change, Drifted
from reconciler.kube import client as kube
from reconciler.kube import inventory
from reconciler.service.membership import member_lease_name

log = structlog.get_logger("dro")

INFIX = "-observations-"
KEY = "observations.json"
GZIP_KEY = "observations.json.gz"
INLINE_LIMIT = 512 * 1024
LABEL = "multicluster.io/observations"


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """One member's document: what it observed of its own clusters, and when."""

    member: str
    observed_at: float
    members: tuple[str, ...] = ()
    owned: frozenset[str] = frozenset()
    observations: Mapping[str, Observation] = field(default_factory=dict)
    unreachable: Mapping[str, str] = field(default_factory=dict)
    drift: Mapping[str, tuple[Drifted, ...]] = field(default_factory=dict)
    """Each owned cluster surveyed: its drifted objects (none: nothing drifted)."""


def name(lease_name: str, identity: str) -> str:
    """The ConfigMap's name: `<lease-name>-observations-<identity>` (a DNS-1123 name)."""
    return member_lease_name(lease_name, identity).replace("-member-", INFIX, 1)


def encode(published: Published) -> str:
    """The document as canonical JSON (sorted keys): the same observations, the same bytes."""
    document = {
        "member": published.member,
        "observedAt": durations.rfc3339(published.observed_at),
        "observedAtSeconds": published.observed_at,
        "members": list(published.members),
        "owned": sorted(published.owned),
        "observations": {c: _observation(o) for c, o in sorted(published.observations.items())},
        "unreachable": dict(sorted(published.unreachable.items())),
        "drift": {c: [_drifted(d) for d in found] for c, found in sorted(published.drift.items())},
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def decode(text: str) -> Published:
    """A document back; ValueError when it is not one."""
    raw = json.loads(text)
    if not isinstance(raw, dict) or not isinstance(raw.get("member"), str):
        raise ValueError("not an observations document")
    observations = raw.get("observations") or {}
    return Published(
        member=raw["member"],
        observed_at=float(raw["observedAtSeconds"]),
        members=tuple(str(m) for m in raw.get("members") or ()),
        owned=frozenset(str(c) for c in raw.get("owned") or ()),
        observations={str(c): _decoded(str(c), o) for c, o in observations.items()},
        unreachable={str(c): str(why) for c, why in (raw.get("unreachable") or {}).items()},
        drift={
            str(c): tuple(_drifted_back(d) for d in found)
            for c, found in (raw.get("drift") or {}).items()
        },
    )


def publish(
    connection: kube.Connection, namespace: str, lease_name: str, published: Published
) -> None:
    """Create or replace this member's ConfigMap with `published`."""
    text = encode(published)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name(lease_name, published.member),
            "namespace": namespace,
            "labels": {LABEL: lease_name},
        },
    }
    if len(text) <= INLINE_LIMIT:
        body["data"] = {KEY: text}
    else:
        packed = gzip.compress(text.encode(), mtime=0)
        body["binaryData"] = {GZIP_KEY: base64.b64encode(packed).decode("ascii")}
    meta = body["metadata"]
    found = connection.get("v1", "ConfigMap", meta["name"], namespace)
    if found is None:
        connection.create(body)
    else:
        version = (found.get("metadata") or {}).get("resourceVersion")
        connection.replace({**body, "metadata": {**meta, "resourceVersion": version}})


def withdraw(connection: kube.Connection, namespace: str, lease_name: str, identity: str) -> None:
    """Delete this member's ConfigMap (a clean shutdown); best effort."""
    try:
        connection.delete("v1", "ConfigMap", name(lease_name, identity), namespace)
    except errors.ClusterError as error:
        log.warning("observations_not_withdrawn", error=str(error))


def gather(
    connection: kube.Connection,
    namespace: str,
    lease_name: str,
    *,
    live: Collection[str],
    now: float,
    fresh: float,
) -> list[Published]:
    """The documents of live members observed at most `fresh` seconds before `now`, oldest
    first; unreadable ones are logged and skipped."""
    found = connection.list(
        "v1", "ConfigMap", namespace=namespace, label_selector=f"{LABEL}={lease_name}"
    )
    result: list[Published] = []
    for config_map in found:
        where = (config_map.get("metadata") or {}).get("name")
        try:
            published = decode(_text(config_map))
        except (ValueError, KeyError, TypeError, OSError) as error:
            log.warning("observations_unreadable", configmap=where, error=str(error))
            continue
        if published.member in live and now - published.observed_at <= fresh:
            result.append(published)
    return sorted(result, key=lambda p: (p.observed_at, p.member))


def merged(documents: list[Published]) -> tuple[dict[str, Observation], dict[str, str]]:
    """Each cluster's observation from the documents (oldest first): only of a cluster its
    member had as its own, the later one winning; and why the unreachable ones were."""
    observations: dict[str, Observation] = {}
    unreachable: dict[str, str] = {}
    for published in documents:
        for cluster, observation in published.observations.items():
            if cluster not in published.owned:
                continue
            observations[cluster] = observation
            unreachable.pop(cluster, None)
            if cluster in published.unreachable:
                unreachable[cluster] = published.unreachable[cluster]
    return observations, unreachable


def drift_of(documents: list[Published]) -> dict[str, tuple[Drifted, ...]]:
    """Each surveyed cluster's drift from the documents (oldest first): only of a cluster its
    member had as its own, the later one winning (as `merged`)."""
    found: dict[str, tuple[Drifted, ...]] = {}
    for published in documents:
        found.update((c, d) for c, d in published.drift.items() if c in published.owned)
    return found


def _text(config_map: Mapping[str, Any]) -> str:
    data = config_map.get("data") or {}
    if KEY in data:
        return str(data[KEY])
    packed = (config_map.get("binaryData") or {})[GZIP_KEY]
    return gzip.decompress(base64.b64decode(packed)).decode()


def _observation(observation: Observation) -> dict[str, Any]:
    return {
        "capacity": dict(observation.capacity),
        "used": dict(observation.used),
        "largestNodeFree": dict(observation.largest_node_free),
        "observedAt": observation.observed_at,
        "stale": observation.stale,
        "unreachableSince": observation.unreachable_since,
        "pending": _keyed(observation.pending, list),
        "health": _keyed(observation.health, list),
        "synced": _keyed(observation.synced, str),
        "revisions": _keyed(observation.revisions, str),
    }


def _keyed(values: Mapping[ResourceKey, Any], shape: type) -> dict[str, Any]:
    return {inventory.placement_name(k): shape(v) for k, v in sorted(values.items())}


def _decoded(cluster: str, raw: Mapping[str, Any]) -> Observation:
    def floats(key: str) -> dict[str, float]:
        return {str(k): float(v) for k, v in (raw.get(key) or {}).items()}

    def keyed(key: str) -> dict[ResourceKey, Any]:
        found: dict[ResourceKey, Any] = {}
        for placement, value in (raw.get(key) or {}).items():
            parsed = inventory.parse_placement_name(placement)
            if parsed is not None:
                found[parsed] = tuple(value) if isinstance(value, list) else str(value)
        return found

    pending = {k: (int(v[0]), str(v[1])) for k, v in keyed("pending").items()}
    health = {k: (str(v[0]), str(v[1])) for k, v in keyed("health").items()}
    return Observation(
        cluster=cluster,
        capacity=floats("capacity"),
        used=floats("used"),
        largest_node_free=floats("largestNodeFree"),
        observed_at=raw.get("observedAt"),
        stale=bool(raw.get("stale")),
        unreachable_since=raw.get("unreachableSince"),
        pending=pending,
        health=health,
        synced=keyed("synced"),
        revisions=keyed("revisions"),
    )


def _drifted(drifted: Drifted) -> dict[str, Any]:
    return {
        "resource": inventory.placement_name(drifted.key),
        "rule": drifted.rule,
        "changes": [change.document() for change in drifted.changes],
        "deleted": drifted.deleted,
        "foreign": drifted.foreign,
    }


def _drifted_back(raw: Mapping[str, Any]) -> Drifted:
    key = inventory.parse_placement_name(str(raw["resource"]))
    if key is None:
        raise ValueError(f"not a resource: {raw['resource']!r}")
    changes = tuple(
        Change(
            pointer=str(change["pointer"]),
            live=change.get("live", ABSENT),
            rendered=change.get("rendered", ABSENT),
        )
        for change in raw.get("changes") or ()
    )
    return Drifted(
        key=key,
        rule=str(raw["rule"]),
        changes=changes,
        deleted=bool(raw.get("deleted")),
        foreign=bool(raw.get("foreign")),
    )
