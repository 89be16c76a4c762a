"""The guard: what a source repository may place, in the manner of Argo CD's AppProject.

A guard says which namespaces a repo's objects may live in, which cluster-scoped kinds it may
create, on which clusters it may place, and whether its Roles may hold `*` wildcards. It has
layers, and an object must pass every one:

1. **The ceiling**, set by the operator outside the repo (`--guard FILE`, `DRO_GUARD`, or
   `guard:` in `dro run`'s config file). Each section the operator writes replaces that
   section of the built-in default, so an operator may widen it (a platform repo that does
   manage `kube-system`). Without one, the built-in default is the ceiling:
   namespaces `kube-system`, `kube-public` and `kube-node-lease` denied, every cluster-scoped
   kind and every cluster allowed, and no `*` in an RBAC rule's `verbs` or `resources`.
2. **`dro.yaml` `spec.guard`**, written by the repo's committers, may only narrow the ceiling:
   an `allow` entry naming something the ceiling denies, or `rbacWildcards: Allow` under a
   ceiling that denies them, is an error at its own line, so a committer cannot widen what the
   operator set.

Patterns are shell globs (`shop-*`), matched case-sensitively. A value is permitted by a
section when it matches one of its `allow` patterns (default `*`) and none of its `deny`
patterns. Cluster-scoped kinds are written `Kind.group`, or `Kind` for the core group
(`ClusterRole.rbac.authorization.k8s.io`, `Namespace`). A cluster is checked by its name and
by its kubeconfig context, so renaming a Cluster file does not reach a denied context.

What is checked, each at the line that breaks the rule:
- every namespaced object's namespace (`default` when unset), and a Namespace object's name;
- every cluster-scoped object's `Kind.group`;
- in every Role and ClusterRole, a `*` in a rule's `verbs` or `resources` (as Kyverno's
  restrict-wildcard-verbs and restrict-wildcard-resources policies do). A `*` in `apiGroups`
  is allowed: it widens only over the resources the rule names;
- every placement target (dro's `targetClusters`, Karmada's `clusterAffinity`/`clusterAffinities`,
  the draft's `targetClusters`, and `dro.yaml`'s `defaultPlacement` when a workload uses it) that
  selects a cluster the guard denies; a policy with no target selects every cluster.

This module is pure: validate calls `check`, the CLI and `dro run` call `load_ceiling`.

Called by 11 modules, among them `cli`, `pipeline`, `review`, `service.api.store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from reconciler import yamlio
from reconciler.domain import (
    DRO_API_VERSION,
    KARMADA_POLICY_API_VERSION,
    Cluster,
    ClusterAffinity,
    Document,
    Origin,
    Workload,
)
from reconciler.errors import Problem, UsageError, ValidationFailed
from reconciler.validate import selectors

BUILTIN_DENIED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
"""The namespaces no repo may place into unless the operator's ceiling allows them."""
FIELDS = {"namespaces": "namespaces", "clusterKinds": "cluster_kinds", "clusters": "clusters"}
"""The sections of a guard as written → the `Guard` field that holds each."""
SECTIONS = tuple(FIELDS)
ALLOW, DENY = "Allow", "Deny"
FLAG_HELP = (
    "the operator's guard: a YAML file of namespaces, clusterKinds and clusters (allow/deny "
    "globs) and rbacWildcards (Allow|Deny); dro.yaml's spec.guard may only narrow it "
    "(default: deny kube-system, kube-public, kube-node-lease and '*' in RBAC verbs and "
    "resources)"
)
"""The help of `--guard`, the same in every command."""
RBAC_KINDS = frozenset({"Role", "ClusterRole"})
Finding = tuple[str, str]
"""A JSON pointer and the message for it."""
RBAC_GROUP = "rbac.authorization.k8s.io"
WILDCARD_FIELDS = ("verbs", "resources")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One section of a guard: glob patterns allowed and denied."""

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()

    def permits(self, value: str) -> bool:
        """Whether `value` matches an allow pattern and no deny pattern."""
        allowed = any(fnmatchcase(value, pattern) for pattern in self.allow)
        return allowed and not any(fnmatchcase(value, pattern) for pattern in self.deny)


@dataclass(frozen=True, slots=True, kw_only=True)
class Guard:
    """One layer of the guard, and where it was written (for messages)."""

    namespaces: Rule = Rule(deny=BUILTIN_DENIED_NAMESPACES)
    cluster_kinds: Rule = Rule()
    clusters: Rule = Rule()
    rbac_wildcards: bool = False
    """Whether a Role's rules may hold `*` in verbs or resources."""
    by: str = "the built-in guard"
    origin: Origin | None = field(default=None, compare=False)


BUILTIN = Guard()


def parse(raw: Mapping[str, Any], *, base: Guard, by: str, origin: Origin | None) -> Guard:
    """A guard layer from its mapping (`spec.guard`, or the operator's file): each section
    written replaces that section of `base`. The shape is assumed valid."""
    rules = {}
    for section, attribute in FIELDS.items():
        written = raw.get(section)
        if isinstance(written, Mapping):
            rules[attribute] = Rule(
                allow=tuple(str(p) for p in written.get("allow", ("*",))),
                deny=tuple(str(p) for p in written.get("deny", ())),
            )
    wildcards = raw.get("rbacWildcards")
    return replace(
        base,
        **rules,
        rbac_wildcards=base.rbac_wildcards if wildcards is None else wildcards == ALLOW,
        by=by,
        origin=origin,
    )


def narrowing(config: Document | None, ceiling: Guard) -> tuple[Guard | None, list[Problem]]:
    """`dro.yaml`'s `spec.guard` as a layer under `ceiling`, and an error at each line where it
    tries to allow what the ceiling denies. None when dro.yaml sets no guard."""
    raw = ((config.body.get("spec") or {}).get("guard") if config is not None else None) or None
    if config is None or not isinstance(raw, Mapping):
        return None, []
    problems = []
    for section, attribute in FIELDS.items():
        rule: Rule = getattr(ceiling, attribute)
        for index, pattern in enumerate((raw.get(section) or {}).get("allow") or ()):
            if _literal(str(pattern)) and not rule.permits(str(pattern)):
                problems.append(
                    _problem(
                        config.origin,
                        f"/spec/guard/{section}/allow/{index}",
                        f"dro.yaml cannot allow {_noun(section)} {pattern!r}: {_denier(ceiling)} "
                        "denies it, and dro.yaml may only narrow the operator's guard",
                    )
                )
    if raw.get("rbacWildcards") == ALLOW and not ceiling.rbac_wildcards:
        problems.append(
            _problem(
                config.origin,
                "/spec/guard/rbacWildcards",
                f"dro.yaml cannot allow '*' in RBAC rules: {_denier(ceiling)} denies them, and "
                "dro.yaml may only narrow the operator's guard",
            )
        )
    layer = parse(raw, base=Guard(namespaces=Rule(), rbac_wildcards=True), by="", origin=None)
    where = f"dro.yaml's spec.guard ({config.origin.path}:{config.origin.line_of('/spec/guard')})"
    return replace(layer, by=where, origin=config.origin), problems


def check_objects(layers: Sequence[Guard], objects: Iterable[Workload]) -> list[Problem]:
    """An error at the line of every object that a layer of the guard denies."""
    problems: list[Problem] = []
    for workload in objects:
        key = workload.key
        if key.namespace or (key.group, key.kind) == ("", "Namespace"):
            namespace = key.namespace or key.name
            pointer = "/metadata/namespace" if key.namespace else "/metadata/name"
            for layer in layers:
                if not layer.namespaces.permits(namespace):
                    message = f"namespace {namespace!r} is denied by {_denier(layer)}"
                    problems.append(_problem(workload.origin, pointer, message))
                    break
        if not key.namespace:
            kind = f"{key.kind}.{key.group}" if key.group else key.kind
            for layer in layers:
                if not layer.cluster_kinds.permits(kind):
                    message = f"cluster-scoped kind {kind} is denied by {_denier(layer)}"
                    problems.append(_problem(workload.origin, "/kind", message))
                    break
        if key.group == RBAC_GROUP and key.kind in RBAC_KINDS:
            problems += _wildcards(layers, workload)
    return problems


def _wildcards(layers: Sequence[Guard], workload: Workload) -> list[Problem]:
    return [
        _problem(workload.origin, pointer, message)
        for pointer, message in wildcard_findings(layers, workload.manifest)
    ]


def wildcard_findings(layers: Sequence[Guard], manifest: Mapping[str, Any]) -> list[Finding]:
    """(pointer, message) of every `*` in a Role's or ClusterRole's rules that a layer of the
    guard denies; empty for other kinds. The override check asks it of overridden manifests."""
    denier = next((layer for layer in layers if not layer.rbac_wildcards), None)
    api_group = str(manifest.get("apiVersion") or "").partition("/")[0]
    if denier is None or api_group != RBAC_GROUP or manifest.get("kind") not in RBAC_KINDS:
        return []
    kind = manifest["kind"]
    findings = []
    for index, rule in enumerate(manifest.get("rules") or ()):
        for name in WILDCARD_FIELDS:
            values = rule.get(name) if isinstance(rule, Mapping) else None
            for position, value in enumerate(values if isinstance(values, list) else ()):
                if value == "*":
                    findings.append(
                        (
                            f"/rules/{index}/{name}/{position}",
                            f"'*' in a {kind}'s {name} grants every "
                            f"{'verb' if name == 'verbs' else 'resource'} and is denied by "
                            f"{_denier(denier)}; list them",
                        )
                    )
    return findings


def check_placement(
    layers: Sequence[Guard],
    clusters: Sequence[Cluster],
    policy_docs: Iterable[Document],
    config: Document | None,
    default_used: bool,
) -> list[Problem]:
    """An error at every placement target that selects a cluster the guard denies."""
    denied = {
        c.name: layer for c in clusters for layer in layers if not _cluster_permitted(layer, c)
    }
    if not denied:
        return []
    by_name = {c.name: c for c in clusters}
    problems = []
    targets = [(doc, pointer, term) for doc in policy_docs for pointer, term in _targets(doc)]
    if config is not None and default_used:
        raw = (config.body.get("spec") or {}).get("defaultPlacement") or {}
        for pointer, term in _dro_targets(raw.get("targetClusters"), "/spec/defaultPlacement"):
            targets.append((config, pointer, term))
    for doc, pointer, term in targets:
        hit = [
            name
            for name in sorted(denied)
            if term is None or term.matches(name, by_name[name].labels)
        ]
        if hit:
            what = "targets every cluster, including" if term is None else "selects"
            layer = denied[hit[0]]
            problems.append(
                _problem(
                    doc.origin,
                    pointer,
                    f"this placement {what} cluster {', '.join(hit)}, which {_denier(layer)} "
                    "does not let this repo place on",
                )
            )
    return problems


def _cluster_permitted(layer: Guard, cluster: Cluster) -> bool:
    names = [cluster.name] + ([cluster.kubeconfig_context] if cluster.kubeconfig_context else [])
    return all(layer.clusters.permits(name) for name in names)


def _targets(doc: Document) -> list[tuple[str, ClusterAffinity | None]]:
    """Each target term of a placement policy with its pointer; None selects every cluster."""
    body, spec = doc.body, doc.body.get("spec") or {}
    if body.get("apiVersion") == KARMADA_POLICY_API_VERSION:
        placement = spec.get("placement") or {}
        terms = placement.get("clusterAffinities")
        if terms:
            found: list[tuple[str, ClusterAffinity | None]] = []
            for index, term in enumerate(terms):
                found.append((f"/spec/placement/clusterAffinities/{index}", _karmada(term)))
                for number, overflow in enumerate(term.get("overflowAffinities") or ()):
                    pointer = (
                        f"/spec/placement/clusterAffinities/{index}/overflowAffinities/{number}"
                    )
                    found.append((pointer, _karmada(overflow)))
            return found
        affinity = placement.get("clusterAffinity")
        if affinity is None:
            return [("/spec/placement", None)]
        return [("/spec/placement/clusterAffinity", _karmada(affinity))]
    if body.get("apiVersion") == DRO_API_VERSION and body.get("kind") == "PropagationPolicy":
        return [
            (f"/spec/targetClusters/{index}", ClusterAffinity(names=(str(name),)))
            for index, name in enumerate(spec.get("targetClusters") or ())
        ]
    return _dro_targets(spec.get("targetClusters"), "/spec")


def _karmada(raw: Mapping[str, Any]) -> ClusterAffinity:
    return selectors.karmada_affinity(raw)


def _dro_targets(
    raw: Sequence[Mapping[str, Any]] | None, parent: str
) -> list[tuple[str, ClusterAffinity | None]]:
    """dro's `targetClusters`: one term per value, at the value's own line."""
    if not raw:
        return [(parent, None)]
    found: list[tuple[str, ClusterAffinity | None]] = []
    for index, entry in enumerate(raw):
        for position, value in enumerate(entry.get("values") or ()):
            term = selectors.target_clusters([{**entry, "values": [value]}])[0]
            found.append((f"{parent}/targetClusters/{index}/values/{position}", term))
    return found


def _literal(pattern: str) -> bool:
    return not any(char in pattern for char in "*?[")


def _noun(section: str) -> str:
    return {"namespaces": "namespace", "clusterKinds": "cluster-scoped kind"}.get(
        section, "cluster"
    )


def _denier(layer: Guard) -> str:
    return layer.by


def _problem(origin: Origin, pointer: str, message: str) -> Problem:
    return Problem(path=origin.path, line=origin.line_of(pointer), pointer=pointer, message=message)


# --- the operator's ceiling ----------------------------------------------------------------


def load_ceiling(path: Path | None) -> Guard:
    """The operator's guard file (`--guard`), its sections over the built-in default; the
    built-in default without one. A file that cannot be read or has the wrong shape raises
    `ValidationFailed` (with its line) or `UsageError`."""
    if path is None:
        return BUILTIN
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"--guard {path}: {error.strerror or error}") from error
    try:
        documents = yamlio.parse_documents(str(path), data)
    except yamlio.YamlError as error:
        raise ValidationFailed([error.problem]) from error
    if len(documents) != 1:
        raise UsageError(f"--guard {path}: expected one YAML document, found {len(documents)}")
    return ceiling_from(documents[0].body, origin=documents[0].origin)


def ceiling_from(raw: Any, *, origin: Origin) -> Guard:
    """The operator's ceiling from a mapping (a guard file, or `guard:` in the config file)."""
    problems = shape_problems(raw, origin)
    if problems:
        raise ValidationFailed(problems)
    where = f"the operator's guard ({origin.path})"
    return parse(raw, base=BUILTIN, by=where, origin=origin)


def shape_problems(raw: Any, origin: Origin) -> list[Problem]:
    """Every way a guard mapping departs from its shape, each at its line."""
    if not isinstance(raw, Mapping):
        return [
            _problem(
                origin,
                "",
                "a guard must be a mapping of namespaces, clusterKinds, clusters and rbacWildcards",
            )
        ]
    problems = []
    for key, value in raw.items():
        pointer = f"/{key}"
        if key == "rbacWildcards":
            if value not in (ALLOW, DENY):
                problems.append(_problem(origin, pointer, "must be Allow or Deny"))
        elif key not in SECTIONS:
            expected = ", ".join((*SECTIONS, "rbacWildcards"))
            problems.append(
                _problem(origin, pointer, f"unknown field {key!r}; expected {expected}")
            )
        elif not isinstance(value, Mapping):
            problems.append(_problem(origin, pointer, "must be a mapping with allow and deny"))
        else:
            problems += _rule_problems(value, origin, pointer)
    return problems


def _rule_problems(value: Mapping[str, Any], origin: Origin, pointer: str) -> list[Problem]:
    problems = []
    for name, patterns in value.items():
        where = f"{pointer}/{name}"
        if name not in ("allow", "deny"):
            problems.append(
                _problem(origin, where, f"unknown field {name!r}; expected allow, deny")
            )
        elif not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
            problems.append(_problem(origin, where, "must be a list of non-empty glob patterns"))
    return problems
