"""The basic values: manifests, resource keys and object refs, origins and the loaded source.

Called by 10 modules, among them `domain`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from reconciler.domain import paths
from reconciler.errors import Problem

Manifest = Mapping[str, Any]
"""A Kubernetes object (or a dro kind) as parsed from YAML: plain dicts, lists and scalars."""

EMPTY: Mapping[str, Any] = MappingProxyType({})


def empty() -> Mapping[str, Any]:
    """The shared empty mapping, as a dataclass default factory."""
    return EMPTY


DRO_API_VERSION = "multicluster.io/v1alpha1"
KARMADA_POLICY_API_VERSION = "policy.karmada.io/v1alpha1"


_SHARED: dict[ResourceKey, ResourceKey] = {}
"""The shared instance of each key (`ResourceKey.shared`)."""
_SHARED_AT_MOST = 1_000_000
"""More keys than this (a long life of renamed objects): the table starts afresh."""


class ResourceKey(NamedTuple):
    """The one join key for an object: (group, kind, namespace, name).

    `namespace` is "" for cluster-scoped objects. Render, diff, apply and prune all use it.
    A tuple: every stage keeps maps by key, and a tuple's hash and equality run in C, where
    a class's own `__hash__` was a Python call at each of the 200,000 lookups of a pass.
    """

    group: str
    kind: str
    namespace: str
    name: str

    def shared(self) -> ResourceKey:
        """The one instance of this key that every caller of `shared` gets: the keys of the
        source's objects and of the output branch's decisions are shared, so that the maps
        every stage keeps by key find them by identity, without comparing their fields."""
        found = _SHARED.setdefault(self, self)
        if len(_SHARED) > _SHARED_AT_MOST:
            _SHARED.clear()
        return found

    @property
    def sort_key(self) -> tuple[str, str, str, str]:
        """Decisions sort by (namespace, kind, name), then group."""
        return (self.namespace, self.kind, self.name, self.group)

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{self.namespace or '_cluster'}/{kind}/{self.name}"

    @property
    def file_stem(self) -> str:
        """`<kind>-<name>`, with `.<group>` after the kind outside core and apps; lowercase;
        shortened with a hash when `<stem>.yaml` would pass 255 bytes (`paths.stem`).

        The one naming rule for rendered manifests, decision files and decision names.
        """
        kind = self.kind if self.group in ("", "apps") else f"{self.kind}.{self.group}"
        return paths.stem(f"{kind}-{self.name}".lower())

    @property
    def folder(self) -> str:
        """The namespace, or `_cluster` for cluster-scoped objects."""
        return self.namespace or "_cluster"

    @property
    def brief(self) -> str:
        """`Kind namespace/name`, or `Kind name` when cluster-scoped: how apply's reports and
        the audit log name an object."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ResourceKey:
        """The key of a manifest or live object (its `metadata.name` must be set)."""
        metadata = obj.get("metadata") or {}
        return cls(
            group_of(str(obj.get("apiVersion", ""))),
            str(obj["kind"]),
            str(metadata.get("namespace") or ""),
            str(metadata["name"]),
        )


@dataclass(frozen=True, slots=True, order=True)
class ObjectRef:
    """One object as a cluster serves it: its identity (`key`, the same whatever the
    version) and the apiVersion dro renders, applies and reads it with.

    The apiVersion is carried, never guessed from the group: an object applied as
    `autoscaling/v2` or `example.com/v1beta2` is read back and pruned under that version.
    """

    key: ResourceKey
    api_version: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        """The ref of a manifest or live object."""
        return cls(ResourceKey.of(obj), str(obj.get("apiVersion", "")))

    @property
    def version(self) -> str:
        """The version part of the apiVersion: `v1` of `apps/v1`, `v1` of `v1`."""
        return self.api_version.rpartition("/")[2]

    def __str__(self) -> str:
        return self.key.brief


CLUSTER_SCOPED_KINDS = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("networking.k8s.io", "IngressClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("apiregistration.k8s.io", "APIService"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    }
)
"""The built-in cluster-scoped kinds, (group, kind); a custom resource's scope is its CRD's."""


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: "" for core "v1", "apps" for "apps/v1"."""
    return api_version.rpartition("/")[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where a document came from: repo-relative path, 1-based line of its first key."""

    path: str
    line: int
    lines: Mapping[str, int] = field(default_factory=empty, compare=False, repr=False)
    """JSON pointer → line of that node inside the document, for error messages."""

    def line_of(self, pointer: str) -> int:
        """The line of the deepest node on `pointer` that the parser recorded."""
        probe = pointer
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe.rpartition("/")[0]
        return self.line


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One YAML document of a source file, parsed, with its origin."""

    origin: Origin
    body: Manifest


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A file read from the source tree at one commit (or from a plain directory)."""

    path: str
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Everything a pass reads from the user's repository, before any parsing."""

    files: tuple[SourceFile, ...]
    commit: str | None = None
    """The source commit's sha; None for a plain directory."""
    commit_time: int | None = None
    """The committer time of the source commit (Unix seconds), the pass's "now" offline."""
    author: str | None = None
    """`Name <email>` of the source commit's author, for the audit log."""
    links: tuple[tuple[str, str], ...] = ()
    """Symbolic links and submodules among the source paths (path, which), which dro does not
    read: `validate` reports each at its path."""
    problems: tuple[Problem, ...] = ()
    """What loading found wrong before any parsing: a kustomize or Helm folder that could not
    be built (`load.builds`); `validate` reports each with its own."""
