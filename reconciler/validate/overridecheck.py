"""Override check: at validate time, every override on every cluster it applies to, tried.

Overrides (dro's `fieldPatches`, Karmada's overriders, plaintext JSON patches included) cannot
break or hijack an object. For every workload and every distinct list of rules that targets
one of its clusters, the rules are applied as render applies them, and the result must:

- apply at all: a path that does not resolve is an error at that operation's own line;
- keep the object's identity: `apiVersion`, `kind`, `metadata.name` and `metadata.namespace`
  never change, nor dro's `managed-by` label and placement annotation, which prune and
  observe rely on;
- pass the same strict schema as the source (the built-in Kubernetes schema, or the CRD in
  the repo), each error located at the operation that caused it.

Clusters with equal rules share one try, and equal results one schema check, so a fleet of
many clusters with a few distinct overrides costs a few checks per workload. Secret values
never appear in a message. Replicas are the source's: the division only ever writes an
int32 count there, before any override.

Called by `validate`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler import render
from reconciler.domain import Cluster, OverridePolicy, OverrideRule, Workload
from reconciler.errors import Problem
from reconciler.render import overrides
from reconciler.validate import guard, quantitycheck, references

Applied = tuple[tuple[OverridePolicy, int, OverrideRule], ...]
Steps = Sequence[tuple[OverridePolicy, OverrideRule, int, str]]
Findings = Callable[[Mapping[str, Any]], set[tuple[str, str]]]
IDENTITY = (
    ("apiVersion",),
    ("kind",),
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("metadata", "labels", render.MANAGED_BY[0]),
    ("metadata", "annotations", render.PLACEMENT_ANNOTATION),
)


def problems(
    workloads: Sequence[Workload],
    policies: Sequence[OverridePolicy],
    clusters: Sequence[Cluster],
    version: str,
    crds: references.CRDs,
    layers: Sequence[guard.Guard] = (),
) -> list[Problem]:
    """Every override that fails, changes an object's identity, breaks its schema or puts
    in what the guard's `layers` deny (a `*` in an RBAC rule) on some cluster, located at the
    operation's line; each problem once, naming its clusters."""
    if not policies:
        return []
    index = render.RuleIndex(clusters)
    found: dict[tuple[str, int, str, str], list[str]] = {}
    for workload in workloads:
        rules = render.rules_for(workload, policies)
        if not rules:
            continue
        base = render.base_manifest(workload)
        if workload.replicas is not None:
            base.setdefault("spec", {})["replicas"] = workload.replicas
        tried: dict[tuple[str, ...], list[Problem]] = {}
        checked: dict[str, list[Problem]] = {}
        for cluster, applied in sorted(index.by_cluster(rules).items()):
            fingerprint = tuple(index.key(rule) for _, _, rule in applied)
            if fingerprint not in tried:
                tried[fingerprint] = _try(base, applied, workload, (version, crds, layers), checked)
            for problem in tried[fingerprint]:
                where = (problem.path, problem.line, problem.pointer, problem.message)
                found.setdefault(where, []).append(cluster)
    return [
        Problem(path=path, line=line, pointer=pointer, message=_on(message, names))
        for (path, line, pointer, message), names in sorted(found.items())
    ]


def _on(message: str, clusters: Sequence[str]) -> str:
    shown = ", ".join(clusters[:5]) + (
        f" and {len(clusters) - 5} more" if len(clusters) > 5 else ""
    )
    return f"{message} (on {'cluster' if len(clusters) == 1 else 'clusters'} {shown})"


def _try(
    base: Mapping[str, Any],
    applied: Applied,
    workload: Workload,
    against: tuple[str, references.CRDs, Sequence[guard.Guard]],
    checked: dict[str, list[Problem]],
) -> list[Problem]:
    """The problems of one list of rules on one workload: the operations that fail or
    hijack it, then the schema errors and guard denials of the result."""
    manifest: dict[str, Any] = render.plain_copy(base)
    steps: list[tuple[OverridePolicy, OverrideRule, int, str]] = []
    failed: list[Problem] = []
    for policy, _, rule in applied:
        for position, (operation, op) in enumerate(rule.operations):
            try:
                overrides.apply(manifest, operation, op)
            except (overrides.OverrideError, KeyError, TypeError, ValueError) as error:
                detail = f"{operation} failed on {workload.key}: {_safe(error, manifest)}"
                failed.append(overrides.failure(policy, rule, position, detail))
                manifest = _replay(base, steps)  # go on as if this operation were not there
                continue
            changed = _identity_change(base, manifest)
            if changed is not None:
                detail = (
                    f"{operation} would change {changed} of {workload.key}; an override "
                    "cannot change apiVersion, kind, metadata.name or metadata.namespace, "
                    "nor dro's managed-by label and placement annotation"
                )
                failed.append(overrides.failure(policy, rule, position, detail))
                manifest = _replay(base, steps)
                continue
            steps.append((policy, rule, position, operation))
    text = json.dumps(manifest, sort_keys=True, default=str)
    if text not in checked:
        version, crds, layers = against
        checked[text] = _schema_problems(base, manifest, steps, workload, version, crds)
        checked[text] += _guard_problems(base, manifest, steps, workload, layers)
    return failed + checked[text]


def _replay(base: Mapping[str, Any], steps: Steps) -> dict[str, Any]:
    """`base` with the operations that succeeded so far (an operation may fail half-way)."""
    manifest: dict[str, Any] = render.plain_copy(base)
    for _, rule, position, _ in steps:
        overrides.apply(manifest, *rule.operations[position])
    return manifest


def _safe(error: Exception, manifest: Mapping[str, Any]) -> str:
    """An operation's error message; for a Secret, one that cannot hold a value."""
    if manifest.get("kind") == "Secret" and not isinstance(error, overrides.OverrideError):
        return "the operation does not apply (values not shown)"
    return str(error)


def _identity_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    for path in IDENTITY:
        if _at(before, path) != _at(after, path):
            return ".".join(path)
    return None


def _at(manifest: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        manifest = manifest.get(key) if type(manifest) is dict else None
    return manifest


def _schema_problems(
    base: Mapping[str, Any],
    manifest: Mapping[str, Any],
    steps: Steps,
    workload: Workload,
    version: str,
    crds: references.CRDs,
) -> list[Problem]:
    """The schema errors of an overridden manifest, and the bad quantities it did not have
    before (`quantitycheck`), each at the operation that caused it."""

    quantities = _may_write_quantities(steps)

    def errors_of(candidate: Mapping[str, Any]) -> set[tuple[str, str]]:
        found = references.schema_errors(candidate, version, crds) or ()
        written = set(quantitycheck.findings(candidate, version)) if quantities else set()
        return {(e.pointer, e.message) for e in found} | written

    errors = errors_of(manifest)
    if errors and quantities:
        errors -= set(quantitycheck.findings(base, version))
    return _located(
        base,
        steps,
        errors,
        errors_of,
        lambda operation, pointer, message: (
            f"{operation} makes {workload.key} invalid at {pointer or '/'}: {message}"
        ),
    )


_NO_QUANTITY = frozenset(
    {
        "imageOverrider",
        "commandOverrider",
        "argsOverrider",
        "labelsOverrider",
        "annotationsOverrider",
    }
)
"""Karmada overriders that write only images, command lines, labels and annotations."""
_NO_QUANTITY_PATHS = ("spec.replicas", "/spec/replicas", "metadata.", "/metadata/")


def _may_write_quantities(steps: Steps) -> bool:
    """Whether any of `steps` could write a resource quantity: the quantity check of an
    overridden manifest is skipped when none could (most overrides set replicas, images,
    labels or annotations), since the source's own quantities were checked already."""
    for _, rule, position, _ in steps:
        operation, op = rule.operations[position]
        if operation in _NO_QUANTITY:
            continue
        path = str(op.get("path") or "") if operation in ("fieldPatch", "plaintext") else None
        if path is None or not (
            path.startswith(_NO_QUANTITY_PATHS) or path.endswith((".image", "/image"))
        ):
            return True
    return False


def _guard_problems(
    base: Mapping[str, Any],
    manifest: Mapping[str, Any],
    steps: Steps,
    workload: Workload,
    layers: Sequence[guard.Guard],
) -> list[Problem]:
    """What the overrides put in that the guard denies (a `*` in an RBAC rule), each at the
    operation that put it there; the source's own are reported at the object's line."""

    def findings(candidate: Mapping[str, Any]) -> set[tuple[str, str]]:
        return set(guard.wildcard_findings(layers, candidate))

    return _located(
        base,
        steps,
        findings(manifest) - findings(base),
        findings,
        lambda operation, pointer, message: (
            f"{operation} puts into {workload.key} at {pointer}: {message}"
        ),
    )


def _located(
    base: Mapping[str, Any],
    steps: Steps,
    found: set[tuple[str, str]],
    findings: Findings,
    describe: Callable[[str, str, str], str],
) -> list[Problem]:
    """Each (pointer, message) `found` in the overridden manifest as a problem at the line
    of the operation that made it appear (`_blame`), worded by `describe(operation, pointer,
    message)`; nothing is replayed when nothing was found."""
    if not found:
        return []
    blame = _blame(base, steps, found, findings)
    result = []
    for pointer, message in sorted(found):
        policy, rule, position, operation = steps[blame.get((pointer, message), -1)]
        result.append(
            overrides.failure(policy, rule, position, describe(operation, pointer, message))
        )
    return result


def _blame(
    base: Mapping[str, Any],
    steps: Steps,
    final: set[tuple[str, str]],
    findings: Findings,
) -> dict[tuple[str, str], int]:
    """Which step made each final finding appear and stay: the operations are replayed one by
    one (only when the result has findings, so valid repos pay nothing for it)."""
    manifest: dict[str, Any] = render.plain_copy(base)
    since: dict[tuple[str, str], int] = {}
    for number, (_, rule, position, _) in enumerate(steps):
        operation, op = rule.operations[position]
        overrides.apply(manifest, operation, op)
        since = {finding: since.get(finding, number) for finding in findings(manifest) & final}
    return since
