"""Dependency bundling: the repo objects that must follow a pod-running workload to its clusters.

A Deployment (StatefulSet, DaemonSet, Job, CronJob, ReplicaSet, Pod …) does not run without the
ConfigMaps, Secrets, PersistentVolumeClaims and ServiceAccount its pod spec names, that
ServiceAccount's RBAC bindings and roles, the Services and PodDisruptionBudgets that select its
pods, the HorizontalPodAutoscalers that scale it, and its Namespace. As P2CODE's scheduler
bundles ancillary resources, these go to exactly the clusters of the workloads that need them.

The scheduler calls `find` to give each dependency the union of its dependents' clusters;
validation calls it for `Dependencies.missing`, warnings about references to objects that are not
in the repo. References resolve in the workload's namespace. Pure: no I/O.

Called by `validate` and `validate.memo`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any

from reconciler.domain import LabelSelector, ResourceKey, Workload, group_of
from reconciler.errors import Problem, Severity
from reconciler.kube import demand
from reconciler.validate import selectors
from reconciler.validate.kept import Kept

RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reference:
    """One object a pod spec names by name."""

    kind: str
    """ConfigMap, Secret, PersistentVolumeClaim or ServiceAccount (all in the core group)."""
    namespace: str
    """The dependent's namespace; "" for cluster-scoped objects."""
    name: str
    pointer: str
    """JSON pointer of the name in the dependent's manifest."""

    @property
    def key(self) -> ResourceKey:
        """The `ResourceKey` the reference resolves to."""
        return ResourceKey(group="", kind=self.kind, namespace=self.namespace, name=self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dependencies:
    """Who needs what, for the whole repo. Keys and tuples sort by `ResourceKey.sort_key`."""

    by_dependent: Mapping[ResourceKey, tuple[ResourceKey, ...]]
    """Every workload with a pod template → the repo objects it needs (possibly none)."""
    by_dependency: Mapping[ResourceKey, tuple[ResourceKey, ...]]
    """The exact reverse: each needed object → the workloads that need it."""
    missing: tuple[Problem, ...]
    """WARNINGs: a non-optional reference to an object not in the repo, once per workload."""


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(index, entry) of the mapping entries of a list; nothing for anything else."""
    if isinstance(value, list | tuple):
        for index, entry in enumerate(value):
            if isinstance(entry, Mapping):
                yield index, entry


def _template_pointer(manifest: Mapping[str, Any]) -> str:
    """The pointer of the pod template (the node with `metadata` and `spec`), as `pod_template`."""
    kind = manifest.get("kind")
    if kind == "Pod":
        return ""
    if kind == "CronJob":
        return "/spec/jobTemplate/spec/template"
    return "/spec/template"


def _pod(workload: Workload) -> Mapping[str, Any] | None:
    """The pod spec of a namespaced workload, or None when it runs no pods."""
    if not workload.key.namespace or not isinstance(workload.manifest.get("spec"), Mapping):
        return None
    return demand.pod_template(workload.manifest)


def _pod_labels(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The labels its pods get: the template's, or a Pod's own."""
    node: Any = manifest
    for part in [*_template_pointer(manifest).split("/")[1:], "metadata", "labels"]:
        node = node.get(part) if isinstance(node, Mapping) else None
    return {str(k): str(v) for k, v in node.items()} if isinstance(node, Mapping) else {}


def _scan(workload: Workload) -> Iterator[tuple[Reference, bool]]:
    """(reference, optional) for everything its pod spec names, in document order."""
    pod = _pod(workload)
    if pod is None:
        return
    namespace = workload.key.namespace
    base = _template_pointer(workload.manifest) + "/spec"

    def named(kind: str, node: Any, field: str, at: str) -> Iterator[tuple[Reference, bool]]:
        name = node.get(field) if isinstance(node, Mapping) else None
        if isinstance(name, str) and name:
            found = Reference(kind=kind, namespace=namespace, name=name, pointer=f"{at}/{field}")
            yield found, node.get("optional") is True

    def ref(
        kind: str, parent: Mapping[str, Any], field: str, at: str, name: str = "name"
    ) -> Iterator[tuple[Reference, bool]]:
        yield from named(kind, parent.get(field), name, f"{at}/{field}")

    def container(node: Mapping[str, Any], at: str) -> Iterator[tuple[Reference, bool]]:
        for field, value in node.items():
            if field == "env":
                for i, env in _items(value):
                    source = env.get("valueFrom")
                    if isinstance(source, Mapping):
                        here = f"{at}/env/{i}/valueFrom"
                        yield from ref("ConfigMap", source, "configMapKeyRef", here)
                        yield from ref("Secret", source, "secretKeyRef", here)
            elif field == "envFrom":
                for i, env in _items(value):
                    yield from ref("ConfigMap", env, "configMapRef", f"{at}/envFrom/{i}")
                    yield from ref("Secret", env, "secretRef", f"{at}/envFrom/{i}")

    def volume(node: Mapping[str, Any], at: str) -> Iterator[tuple[Reference, bool]]:
        yield from ref("ConfigMap", node, "configMap", at)
        yield from ref("Secret", node, "secret", at, "secretName")
        yield from ref("PersistentVolumeClaim", node, "persistentVolumeClaim", at, "claimName")
        projected = node.get("projected")
        if isinstance(projected, Mapping):
            for i, source in _items(projected.get("sources")):
                yield from ref("ConfigMap", source, "configMap", f"{at}/projected/sources/{i}")
                yield from ref("Secret", source, "secret", f"{at}/projected/sources/{i}")

    for field, value in pod.items():
        at = f"{base}/{field}"
        if field in ("containers", "initContainers"):
            for i, entry in _items(value):
                yield from container(entry, f"{at}/{i}")
        elif field == "volumes":
            for i, entry in _items(value):
                yield from volume(entry, f"{at}/{i}")
        elif field == "imagePullSecrets":
            for i, entry in _items(value):
                yield from named("Secret", entry, "name", f"{at}/{i}")
        elif field == "serviceAccountName" or (
            field == "serviceAccount" and "serviceAccountName" not in pod
        ):
            yield from named("ServiceAccount", pod, field, base)


def references(workload: Workload) -> tuple[Reference, ...]:
    """What its pod spec names (ConfigMap, Secret, PVC, ServiceAccount), in document order.

    Empty for objects without a pod template. A StatefulSet's volumeClaimTemplates are not
    references: its controller creates those claims.
    """
    return tuple(found for found, _ in _scan(workload))


class _Selectors:
    """Label selectors by namespace, each filed under one of its matchLabels pairs."""

    __slots__ = ("by_label", "unindexed")

    def __init__(self) -> None:
        self.by_label: dict[tuple[str, str, str], list[tuple[LabelSelector, ResourceKey]]]
        self.by_label = defaultdict(list)
        self.unindexed: dict[str, list[tuple[LabelSelector, ResourceKey]]] = defaultdict(list)

    def add(self, selector: LabelSelector, key: ResourceKey) -> None:
        if selector.match_labels:
            label, value = min(selector.match_labels.items())
            self.by_label[(key.namespace, label, value)].append((selector, key))
        else:
            self.unindexed[key.namespace].append((selector, key))

    def matching(self, namespace: str, labels: Mapping[str, str]) -> Iterator[ResourceKey]:
        for label, value in labels.items():
            for selector, key in self.by_label.get((namespace, label, value), ()):
                if selector.matches(labels):
                    yield key
        for selector, key in self.unindexed.get(namespace, ()):
            if selector.matches(labels):
                yield key


@dataclass(slots=True)
class _Index:
    """The repo's objects, indexed once for `find`."""

    keys: set[ResourceKey]
    services: _Selectors
    budgets: _Selectors
    scalers: dict[tuple[str, str, str], list[tuple[str | None, ResourceKey]]]
    """(namespace, kind, name) of the target → (its group or None, the HPA)."""
    bindings: dict[tuple[str, str], list[ResourceKey]]
    """(namespace, name) of a ServiceAccount → its bindings and their roles in the repo."""
    pull_secrets: dict[ResourceKey, list[ResourceKey]]
    """A ServiceAccount → the Secrets its imagePullSecrets name, in the repo."""


def _index(workloads: Sequence[Workload]) -> _Index:
    index = _Index({w.key for w in workloads}, _Selectors(), _Selectors(), {}, {}, {})
    for w in workloads:
        key, spec = w.key, w.manifest.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        if (key.group, key.kind) == ("", "Service"):
            raw = spec.get("selector")
            if isinstance(raw, Mapping) and raw:
                labels = MappingProxyType({str(k): str(v) for k, v in raw.items()})
                index.services.add(LabelSelector(match_labels=labels), key)
        elif (key.group, key.kind) == ("policy", "PodDisruptionBudget"):
            raw = spec.get("selector")
            if isinstance(raw, Mapping):
                index.budgets.add(selectors.label_selector(raw) or LabelSelector(), key)
        elif (key.group, key.kind) == ("autoscaling", "HorizontalPodAutoscaler"):
            target = spec.get("scaleTargetRef")
            if isinstance(target, Mapping):
                api = target.get("apiVersion")
                group = group_of(api) if isinstance(api, str) else None
                where = (key.namespace, str(target.get("kind")), str(target.get("name")))
                index.scalers.setdefault(where, []).append((group, key))
        elif (key.group, key.kind) == ("", "ServiceAccount"):
            names = (e.get("name") for _, e in _items(w.manifest.get("imagePullSecrets")))
            secrets = (ResourceKey("", "Secret", key.namespace, str(n)) for n in names if n)
            index.pull_secrets[key] = [s for s in secrets if s in index.keys]
        elif key.group == RBAC and key.kind in ("RoleBinding", "ClusterRoleBinding"):
            _index_binding(index, w)
    return index


def _index_binding(index: _Index, binding: Workload) -> None:
    """File a binding, and the role it grants if in the repo, under each ServiceAccount."""
    key, manifest = binding.key, binding.manifest
    role = manifest.get("roleRef")
    needed = [key]
    if isinstance(role, Mapping) and role.get("kind") in ("Role", "ClusterRole"):
        scope = key.namespace if role["kind"] == "Role" else ""
        granted = ResourceKey(RBAC, str(role["kind"]), scope, str(role.get("name")))
        needed += [granted] if granted in index.keys else []
    for _, subject in _items(manifest.get("subjects")):
        namespace = subject.get("namespace") or key.namespace
        if subject.get("kind") == "ServiceAccount" and namespace and subject.get("name"):
            index.bindings.setdefault((str(namespace), str(subject["name"])), []).extend(needed)


def _missing(workload: Workload, found: Reference) -> Problem:
    return Problem(
        path=workload.origin.path,
        line=workload.origin.line_of(found.pointer),
        pointer=found.pointer,
        message=f"{found.kind} {found.namespace}/{found.name} is referenced but not in the repo: "
        "it must already exist on every cluster the workload runs on",
        severity=Severity.WARNING,
    )


def _sorted(keys: Iterable[ResourceKey]) -> tuple[ResourceKey, ...]:
    return tuple(sorted(set(keys), key=lambda k: k.sort_key))


def _needs(w: Workload, index: _Index) -> tuple[frozenset[ResourceKey], tuple[Problem, ...]]:
    """What one pod-running workload needs in the repo, and its missing references."""
    namespace, found = w.key.namespace, set[ResourceKey]()
    default = ResourceKey("", "ServiceAccount", namespace, "default")
    reported: set[ResourceKey] = {default}
    missing: list[Problem] = []
    account = "default"
    for reference, optional in _scan(w):
        key = reference.key
        if reference.kind == "ServiceAccount":
            account = reference.name
        if key in index.keys:
            found.add(key)
        elif not optional and key not in reported:
            reported.add(key)
            missing.append(_missing(w, reference))
    account_key = ResourceKey("", "ServiceAccount", namespace, account)
    if account_key in index.keys:
        found.add(account_key)
        found.update(index.pull_secrets.get(account_key, ()))
    found.update(index.bindings.get((namespace, account), ()))
    labels = _pod_labels(w.manifest)
    found.update(index.services.matching(namespace, labels))
    found.update(index.budgets.matching(namespace, labels))
    for group, scaler in index.scalers.get((namespace, w.key.kind, w.key.name), ()):
        if group is None or group == w.key.group:
            found.add(scaler)
    namespace_key = ResourceKey("", "Namespace", "", namespace)
    if namespace_key in index.keys:
        found.add(namespace_key)
    return frozenset(found), tuple(missing)


def _reverse(
    needs: Mapping[ResourceKey, Iterable[ResourceKey]],
) -> Mapping[ResourceKey, tuple[ResourceKey, ...]]:
    reverse: dict[ResourceKey, set[ResourceKey]] = defaultdict(set)
    for dependent, keys in needs.items():
        for key in keys:
            reverse[key].add(dependent)
    return MappingProxyType({k: _sorted(reverse[k]) for k in _sorted(reverse)})


def find(workloads: Sequence[Workload]) -> Dependencies:
    """Every pod-running workload's dependencies in the repo, the reverse, and what is missing.

    A ServiceAccount named `default` (also the implicit one) is a dependency only when the repo
    defines it, and never missing. Optional references are dependencies when present but are
    never missing.
    """
    index = _index(workloads)
    needs: dict[ResourceKey, frozenset[ResourceKey]] = {}
    missing: list[Problem] = []
    for w in workloads:
        if _pod(w) is None:
            continue
        needs[w.key], lost = _needs(w, index)
        missing += lost
    return Dependencies(
        by_dependent=MappingProxyType({k: _sorted(needs[k]) for k in _sorted(needs)}),
        by_dependency=_reverse(needs),
        missing=tuple(sorted(missing, key=lambda p: p.sort_key)),
    )


INDEXED_KINDS = frozenset(
    {
        ("", "Service"),
        ("policy", "PodDisruptionBudget"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("", "ServiceAccount"),
        (RBAC, "RoleBinding"),
        (RBAC, "ClusterRoleBinding"),
        (RBAC, "Role"),
        (RBAC, "ClusterRole"),
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "PersistentVolumeClaim"),
        ("", "Namespace"),
    }
)
"""The kinds `find`'s index reads: the objects that select, scale or bind a workload's pods,
and every kind a workload's needs are looked up among."""


class Known:
    """`find`'s per-workload results, kept between passes by the workload's identity while
    the objects of `INDEXED_KINDS` stay the very same objects (`validate.memo`); a run of
    workloads (one file's, `validate.memo.Memo.runs`) that is the very list of the last
    pass has its results reused whole."""

    def __init__(self) -> None:
        self.indexed: tuple[Workload, ...] = ()
        self.index: _Index | None = None
        self.needs: Kept[Workload, _Needs] = Kept()
        self.indexed_runs: dict[int, tuple[Sequence[Workload], list[Workload]]] = {}
        self.needs_runs: dict[int, _RunNeeds] = {}


_Needs = tuple[frozenset[ResourceKey] | None, tuple[Problem, ...]]
"""What a workload needs (None: it runs no pods) and its missing references."""
_RunNeeds = tuple[
    Sequence[Workload], list[tuple[ResourceKey, frozenset[ResourceKey]]], list[Problem]
]
"""A run of workloads, the needs of those that need something, and their missing ones."""


def bundled(
    workloads: Sequence[Workload], known: Known, runs: Sequence[Sequence[Workload]] | None = None
) -> tuple[Mapping[ResourceKey, tuple[ResourceKey, ...]], tuple[Problem, ...]]:
    """`find(workloads)`'s `by_dependency` and `missing`, recomputing only the workloads
    `known` does not hold, unless an object of an indexed kind changed. `runs`, when given,
    are the workloads cut in runs (joined, they are `workloads`)."""
    runs = runs if runs is not None else [workloads]
    indexed_runs: dict[int, tuple[Sequence[Workload], list[Workload]]] = {}
    indexed: list[Workload] = []
    for run in runs:
        entry = known.indexed_runs.get(id(run))
        if entry is None or entry[0] is not run:
            entry = (run, [w for w in run if (w.key.group, w.key.kind) in INDEXED_KINDS])
        indexed_runs[id(run)] = entry
        indexed += entry[1]
    known.indexed_runs = indexed_runs
    if known.index is None or not _same(indexed, known.indexed):
        known.index, known.indexed = _index(indexed), tuple(indexed)
        known.needs.clear()
        known.needs_runs = {}
    compute = partial(_needs_of, known.index)
    needs_runs: dict[int, _RunNeeds] = {}
    needs: list[tuple[ResourceKey, frozenset[ResourceKey]]] = []
    missing: list[Problem] = []
    for run in runs:
        kept = known.needs_runs.get(id(run))
        if kept is None or kept[0] is not run:
            found = known.needs.values(run, compute)
            pairs = [(w.key, n) for w, (n, _) in zip(run, found, strict=True) if n]
            lost = [p for n, problems in found if n is not None for p in problems]
            kept = (run, pairs, lost)
        else:
            known.needs.asked(run)
        needs_runs[id(run)] = kept
        needs += kept[1]
        missing += kept[2]
    known.needs_runs = needs_runs
    known.needs.prune(len(workloads))
    return _reverse(dict(needs)), tuple(sorted(missing, key=lambda p: p.sort_key))


def _needs_of(index: _Index, w: Workload) -> _Needs:
    return (None, ()) if _pod(w) is None else _needs(w, index)


def _same(first: Sequence[Workload], second: Sequence[Workload]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))
