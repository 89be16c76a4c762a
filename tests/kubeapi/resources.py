"""The resource table (built-in types plus registered CRDs) and the discovery documents."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SERVER_VERSION = "v1.32.0"
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update"]
STATUS_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource: where it lives in the API and how it is scoped."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    has_status: bool = True
    custom: bool = False
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        """Return `group/version`, or just `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        """Return the lower-case singular name."""
        return self.kind.lower()

    def discovery_entries(self) -> list[dict[str, Any]]:
        """Return the APIResource entries (the resource and its status subresource)."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(VERBS),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        if self.has_status:
            entries.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": list(STATUS_VERBS),
                }
            )
        return entries


def _builtin(
    api_version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short_names: tuple[str, ...] = (),
    has_status: bool = True,
) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(group, version, plural, kind, namespaced, short_names, has_status)


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _builtin("v1", "namespaces", "Namespace", False, ("ns",)),
    _builtin("v1", "nodes", "Node", False, ("no",)),
    _builtin("v1", "pods", "Pod", True, ("po",)),
    _builtin("v1", "services", "Service", True, ("svc",)),
    _builtin("v1", "configmaps", "ConfigMap", True, ("cm",), has_status=False),
    _builtin("v1", "secrets", "Secret", True, has_status=False),
    _builtin("v1", "serviceaccounts", "ServiceAccount", True, ("sa",), has_status=False),
    _builtin("v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",)),
    _builtin("v1", "events", "Event", True, ("ev",), has_status=False),
    _builtin("apps/v1", "deployments", "Deployment", True, ("deploy",)),
    _builtin("apps/v1", "statefulsets", "StatefulSet", True, ("sts",)),
    _builtin("apps/v1", "daemonsets", "DaemonSet", True, ("ds",)),
    _builtin("apps/v1", "replicasets", "ReplicaSet", True, ("rs",)),
    _builtin("batch/v1", "jobs", "Job", True),
    _builtin("batch/v1", "cronjobs", "CronJob", True, ("cj",)),
    _builtin("rbac.authorization.k8s.io/v1", "roles", "Role", True, has_status=False),
    _builtin("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True, has_status=False),
    _builtin(
        "rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False, has_status=False
    ),
    _builtin(
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        False,
        has_status=False,
    ),
    _builtin("coordination.k8s.io/v1", "leases", "Lease", True, has_status=False),
    _builtin(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
    ),
    _builtin("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
    _builtin(
        "autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ("hpa",)
    ),
    _builtin("networking.k8s.io/v1", "ingresses", "Ingress", True, ("ing",)),
    _builtin("storage.k8s.io/v1", "storageclasses", "StorageClass", False, ("sc",), False),
)


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting versions in Kubernetes priority order (GA > beta > alpha, newest first)."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    return (stage, -int(match.group(1)), -int(match.group(3) or 0), version)


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """Return the resource types a CustomResourceDefinition serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    served = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        served.append(
            ResourceType(
                group=str(spec.get("group", "")),
                version=str(version.get("name", "")),
                plural=str(names.get("plural", "")),
                kind=str(names.get("kind", "")),
                namespaced=namespaced,
                short_names=tuple(names.get("shortNames") or ()),
                has_status="status" in subresources,
                custom=True,
                categories=tuple(names.get("categories") or ()),
            )
        )
    return served


class ResourceRegistry:
    """Every served resource type, looked up by URL parts or by apiVersion and kind."""

    def __init__(self) -> None:
        self._builtin = list(BUILTIN_TYPES)
        self._custom: dict[str, list[ResourceType]] = {}

    def all_types(self) -> list[ResourceType]:
        """Return built-in types followed by the types of established CRDs."""
        custom = [rtype for types in self._custom.values() for rtype in types]
        return self._builtin + custom

    def register_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        """Serve (or re-serve) the types of the CRD called `crd_name`."""
        self._custom[crd_name] = types

    def unregister_crd(self, crd_name: str) -> list[ResourceType]:
        """Stop serving a CRD's types and return them."""
        return self._custom.pop(crd_name, [])

    def by_plural(self, group: str, version: str, plural: str) -> ResourceType | None:
        """Find the type served at `/apis/<group>/<version>/<plural>`."""
        for rtype in self.all_types():
            if (rtype.group, rtype.version, rtype.plural) == (group, version, plural):
                return rtype
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """Find the type for an object's `apiVersion` and `kind`."""
        for rtype in self.all_types():
            if (rtype.api_version, rtype.kind) == (api_version, kind):
                return rtype
        return None

    def same_resource(self, group: str, plural: str) -> list[ResourceType]:
        """Return every served version of one resource (objects are shared across them)."""
        return [r for r in self.all_types() if (r.group, r.plural) == (group, plural)]

    def group_versions(self) -> dict[str, list[str]]:
        """Map each named group to its served versions in priority order."""
        groups: dict[str, list[str]] = {}
        for rtype in self.all_types():
            if rtype.group and rtype.version not in groups.setdefault(rtype.group, []):
                groups[rtype.group].append(rtype.version)
        return {name: sorted(versions, key=version_priority) for name, versions in groups.items()}

    def api_group(self, name: str) -> dict[str, Any] | None:
        """Return the APIGroup document of one group, or None if it is not served."""
        versions = self.group_versions().get(name)
        if not versions:
            return None
        entries = [
            {"groupVersion": f"{name}/{version}", "version": version} for version in versions
        ]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": name,
            "versions": entries,
            "preferredVersion": dict(entries[0]),
        }

    def api_group_list(self) -> dict[str, Any]:
        """Return the `/apis` APIGroupList document."""
        groups = []
        for name in self.group_versions():
            group = self.api_group(name)
            if group is not None:
                del group["kind"], group["apiVersion"]
                groups.append(group)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """Return the APIResourceList for one group/version, or None if it is not served."""
        types = [r for r in self.all_types() if (r.group, r.version) == (group, version)]
        if not types:
            return None
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": types[0].api_version,
            "resources": [entry for rtype in types for entry in rtype.discovery_entries()],
        }


def version_document() -> dict[str, str]:
    """Return the `/version` document."""
    major, minor, _ = SERVER_VERSION.lstrip("v").split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": SERVER_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.3",
        "compiler": "gc",
        "platform": "linux/amd64",
    }
