"""Direct access to stored objects for tests: inspect, seed, delete and set status without HTTP."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from .errors import ApiError, no_such_route
from .resources import ResourceType
from .store import Store

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


class ObjectsView:
    """Test-side helpers over a `Store` (no request counters are touched)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def resource(self, group: str, version: str, plural: str) -> ResourceType:
        """Return the served type at group/version/plural, or raise 404."""
        rtype = self.store.registry.by_plural(group, version, plural)
        if rtype is None:
            raise no_such_route()
        return rtype

    def get(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        """Return a copy of one object (namespace "" for cluster-scoped types), or None."""
        return self.store.read(self.resource(group, version, plural), namespace, name)

    def list(
        self, group: str, version: str, plural: str, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        """Return copies of every object of a type, in one namespace or all."""
        return self.store.list(self.resource(group, version, plural), namespace)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or overwrite an object as given (status included), creating its namespace.

        uid, creationTimestamp and generation are filled in (kept when overwriting) and the
        resourceVersion is bumped; no managedFields are recorded, as for pre-SSA objects.
        """
        return self.store.seed(obj)

    def delete(self, group: str, version: str, plural: str, namespace: str, name: str) -> bool:
        """Delete one object (with cascades); return whether it existed."""
        return self.store.remove(self.resource(group, version, plural), namespace, name) is not None

    def set_status(
        self,
        group: str,
        version: str,
        plural: str,
        namespace: str,
        name: str,
        status: dict[str, Any],
    ) -> dict[str, Any]:
        """Replace an object's status (bumping its resourceVersion) and return the object."""
        return self.store.set_status(self.resource(group, version, plural), namespace, name, status)

    def add_node(
        self,
        name: str,
        cpu: str = "8",
        memory: str = "32Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
        unschedulable: bool = False,
        taints: builtins.list[dict[str, Any]] | None = None,
        ready: bool = True,
    ) -> dict[str, Any]:
        """Seed a Ready Node with capacity = allocatable = {cpu, memory, pods}."""
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        spec: dict[str, Any] = {"unschedulable": unschedulable}
        if taints:
            spec["taints"] = [dict(taint) for taint in taints]
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    **(labels or {}),
                },
            },
            "spec": spec,
            "status": {
                "capacity": dict(resources),
                "allocatable": dict(resources),
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                    }
                ],
            },
        }
        return self.store.seed(node)

    def add_pod(
        self,
        namespace: str,
        name: str,
        node: str | None,
        requests: Mapping[str, str] | None = None,
        phase: str = "Running",
        labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Seed a one-container Pod bound to `node` (None: unscheduled) in the given phase."""
        if node is not None and self.store.read(self.resource("", "v1", "nodes"), "", node) is None:
            raise ApiError(404, f'nodes "{node}" not found')
        container: dict[str, Any] = {"name": "main", "image": PAUSE_IMAGE}
        wanted = dict(requests) if requests is not None else {"cpu": "500m", "memory": "1Gi"}
        if wanted:
            container["resources"] = {"requests": wanted}
        spec: dict[str, Any] = {"containers": [container]}
        if node is not None:
            spec["nodeName"] = node
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": {"phase": phase},
        }
        if labels:
            pod["metadata"]["labels"] = dict(labels)
        return self.store.seed(pod)
