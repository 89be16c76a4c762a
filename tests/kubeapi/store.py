"""Object storage: one lock, one global resourceVersion counter, uids, cascades and CRD effects."""

from __future__ import annotations

import copy
import pickle
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

from .errors import bad_request, not_found
from .history import Event, History
from .resources import ResourceRegistry, ResourceType, types_from_crd
from .selectors import SELECTABLE_FIELDS

ObjectKey = tuple[str, str, str, str]
CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def now_timestamp() -> str:
    """Return the current time in the RFC 3339 form the apiserver uses (seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_key(rtype: ResourceType, namespace: str, name: str) -> ObjectKey:
    """Return the storage key: objects are shared by every served version of a resource."""
    return (rtype.group, rtype.plural, namespace if rtype.namespaced else "", name)


def metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    """Return `obj.metadata`, creating it if absent."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    return meta


def without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Copy an object without the fields the server maintains, for no-op detection."""
    clean = copy.deepcopy(obj)
    meta = metadata_of(clean)
    for name in ("resourceVersion", "generation"):
        meta.pop(name, None)
    return clean


def spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Tell whether anything but metadata and status changed (what bumps `generation`)."""

    def body(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if k not in ("metadata", "status")}

    return body(old) != body(new)


_ROLLED_OUT = {("apps", "deployments"), ("apps", "statefulsets")}


def rolled_out(obj: dict[str, Any]) -> dict[str, Any]:
    """The status of a Deployment or StatefulSet whose rollout is complete."""
    replicas = (obj.get("spec") or {}).get("replicas", 1)
    return {
        "observedGeneration": metadata_of(obj).get("generation", 1),
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "currentReplicas": replicas,
        "currentRevision": "r1",
        "updateRevision": "r1",
    }


_SELECTABLE = sorted({path for paths in SELECTABLE_FIELDS.values() for path in paths})


def selectable(obj: dict[str, Any]) -> dict[str, Any]:
    """What label and field selectors read of an object (its name, namespace, labels and
    selectable fields): a history event keeps no more of the state before it."""
    meta = metadata_of(obj)
    named = ("name", "namespace", "labels")
    slim: dict[str, Any] = {"metadata": {k: copy.deepcopy(meta[k]) for k in named if k in meta}}
    for path in _SELECTABLE:
        *parents, leaf = path.split(".")
        source: Any = obj
        for part in parents:
            source = source.get(part) if isinstance(source, dict) else None
        if isinstance(source, dict) and leaf in source:
            into = slim
            for part in parents:
                into = into.setdefault(part, {})
            into[leaf] = source[leaf]
    return slim


class Store:
    """Every stored object, guarded by one re-entrant lock."""

    def __init__(
        self,
        registry: ResourceRegistry,
        crd_establish_delay: float = 0.0,
        rollouts: bool = False,
        history: int = 10_000,
    ) -> None:
        self.lock = threading.RLock()
        self.history = History(self.lock, history)
        """The last `history` changes, for WATCH."""
        self.registry = registry
        self.crd_establish_delay = crd_establish_delay
        self.rollouts = rollouts
        """Complete every Deployment's and StatefulSet's rollout as it is written, as an
        instant controller would (the emulator runs no controllers otherwise)."""
        self._objects: dict[ObjectKey, dict[str, Any]] = {}
        self._revision = 0
        self._timers: list[threading.Timer] = []
        self._established: set[str] = set()
        for name in INITIAL_NAMESPACES:
            self.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    @property
    def revision(self) -> str:
        """Return the current (latest) resourceVersion."""
        with self.lock:
            return str(self._revision)

    def type_for(self, api_version: str, kind: str) -> ResourceType | None:
        """Find the resource type of an apiVersion/kind pair."""
        return self.registry.by_kind(api_version, kind)

    def read(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a copy of one object as served through `rtype`, or None."""
        with self.lock:
            stored = self._objects.get(object_key(rtype, namespace, name))
            return self.as_served(rtype, stored) if stored is not None else None

    def list(self, rtype: ResourceType, namespace: str | None) -> list[dict[str, Any]]:
        """Return copies of all objects of a resource, in one namespace or all, sorted."""
        with self.lock:
            found = [
                self.as_served(rtype, obj)
                for (group, plural, ns, _), obj in self._objects.items()
                if (group, plural) == (rtype.group, rtype.plural)
                and (namespace is None or not rtype.namespaced or ns == namespace)
            ]
        return sorted(
            found, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])
        )

    def namespace_exists(self, name: str) -> bool:
        """Tell whether a Namespace of that name is stored."""
        with self.lock:
            return ("", "namespaces", "", name) in self._objects

    def commit(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Store `obj` under a new resourceVersion, run side effects, return the stored copy."""
        with self.lock:
            self._revision += 1
            meta = metadata_of(obj)
            meta["resourceVersion"] = str(self._revision)
            if (rtype.group, rtype.plural) == (CRD_GROUP, CRD_PLURAL):
                self._refresh_crd(obj)
            if self.rollouts and (rtype.group, rtype.plural) in _ROLLED_OUT:
                obj["status"] = rolled_out(obj)
            key = object_key(rtype, meta.get("namespace", ""), meta["name"])
            before = self._objects.get(key)
            stored = self._objects[key] = copy.deepcopy(obj)
            kind = "ADDED" if before is None else "MODIFIED"
            was = None if before is None else selectable(before)
            self.history.record(Event(self._revision, kind, key, stored, was))
            return self.as_served(rtype, obj)

    def remove(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """Delete one object (and what it owns: a Namespace's objects, a CRD's resources)."""
        with self.lock:
            stored = self._objects.pop(object_key(rtype, namespace, name), None)
            if stored is None:
                return None
            self._deleted(object_key(rtype, namespace, name), stored)
            owned: list[ObjectKey] = []
            if (rtype.group, rtype.plural) == ("", "namespaces"):
                owned = [key for key in self._objects if key[2] == name]
            if (rtype.group, rtype.plural) == (CRD_GROUP, CRD_PLURAL):
                self._established.discard(name)
                for gone in self.registry.unregister_crd(name):
                    owned += [k for k in self._objects if k[:2] == (gone.group, gone.plural)]
            for key in owned:
                self._deleted(key, self._objects.pop(key))
            return self.as_served(rtype, stored)

    def _deleted(self, key: ObjectKey, stored: dict[str, Any]) -> None:
        """Record a deletion under a new resourceVersion, as the object's last state."""
        self._revision += 1
        meta = {**metadata_of(stored), "resourceVersion": str(self._revision)}
        last = {**stored, "metadata": meta}
        self.history.record(Event(self._revision, "DELETED", key, last, selectable(stored)))

    def seed(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object directly (no HTTP, no managedFields), creating its namespace."""
        rtype = self.type_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rtype is None:
            raise bad_request(f"no resource serves {obj.get('apiVersion')}/{obj.get('kind')}")
        new = copy.deepcopy(obj)
        meta = metadata_of(new)
        if not meta.get("name"):
            raise bad_request("seeded objects need metadata.name")
        with self.lock:
            if rtype.namespaced:
                meta["namespace"] = meta.get("namespace") or "default"
                if not self.namespace_exists(meta["namespace"]):
                    self.seed(
                        {
                            "apiVersion": "v1",
                            "kind": "Namespace",
                            "metadata": {"name": meta["namespace"]},
                        }
                    )
            else:
                meta.pop("namespace", None)
            old = self.read(rtype, meta.get("namespace", ""), meta["name"])
            old_meta = metadata_of(old) if old else {}
            meta.setdefault("uid", old_meta.get("uid") or str(uuid.uuid4()))
            meta.setdefault(
                "creationTimestamp", old_meta.get("creationTimestamp") or now_timestamp()
            )
            meta.setdefault("generation", old_meta.get("generation", 1))
            if rtype.kind == "Namespace":
                new.setdefault("status", {"phase": "Active"})
            return self.commit(rtype, new)

    def set_status(
        self, rtype: ResourceType, namespace: str, name: str, status: dict[str, Any]
    ) -> dict[str, Any]:
        """Replace an object's status directly (as a controller would) and bump its version."""
        with self.lock:
            obj = self.read(rtype, namespace, name)
            if obj is None:
                raise not_found(rtype.plural, rtype.group, name)
            obj["status"] = copy.deepcopy(status)
            return self.commit(rtype, obj)

    def stop_timers(self) -> None:
        """Cancel pending CRD establishment timers."""
        for timer in self._timers:
            timer.cancel()

    def as_served(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Copy a stored object with the apiVersion and kind of the type it is read through.
        Stored objects are plain JSON values, so a pickle round trip copies them, in C, at a
        fraction of `copy.deepcopy`'s cost (a large LIST copies every object it serves)."""
        served: dict[str, Any] = pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
        served["apiVersion"] = rtype.api_version
        served["kind"] = rtype.kind
        return {"apiVersion": served.pop("apiVersion"), "kind": served.pop("kind"), **served}

    def _refresh_crd(self, crd: dict[str, Any]) -> None:
        """Fill a CRD's status and (re)register its types once it counts as established."""
        name = metadata_of(crd)["name"]
        key = (CRD_GROUP, CRD_PLURAL, "", name)
        if name not in self._established and self.crd_establish_delay > 0:
            if key not in self._objects:
                timer = threading.Timer(self.crd_establish_delay, self._establish_later, [name])
                timer.daemon = True
                self._timers.append(timer)
                timer.start()
        else:
            self._established.add(name)
        established = name in self._established
        spec = crd.get("spec") or {}
        when = now_timestamp()
        crd["status"] = {
            "acceptedNames": copy.deepcopy(spec.get("names") or {}),
            "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
            "conditions": [
                _crd_condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", when),
                _crd_condition(
                    "Established",
                    "True" if established else "False",
                    "InitialNamesAccepted" if established else "Installing",
                    "the initial names have been accepted" if established else "installing",
                    when,
                ),
            ],
        }
        previous = (self._objects.get(key) or {}).get("status") or {}
        for old in previous.get("conditions") or []:
            for condition in crd["status"]["conditions"]:
                if (condition["type"], condition["status"]) == (old.get("type"), old.get("status")):
                    condition["lastTransitionTime"] = old.get("lastTransitionTime", when)
        if established:
            self.registry.register_crd(name, types_from_crd(crd))

    def _establish_later(self, name: str) -> None:
        """Timer callback: mark a CRD established (a new resourceVersion) and serve its types."""
        with self.lock:
            crd_type = self.registry.by_plural(CRD_GROUP, "v1", CRD_PLURAL)
            crd = self.read(crd_type, "", name) if crd_type else None
            if crd is None or crd_type is None:
                return
            self._established.add(name)
            self.commit(crd_type, crd)


def _crd_condition(kind: str, status: str, reason: str, message: str, when: str) -> dict[str, str]:
    """Build one CRD status condition."""
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": when,
    }
