"""JSON Schema checks: dro's own kinds and Kubernetes objects, offline. The only jsonschema user.

dro's schemas (draft 2020-12) ship in the wheel as `reconciler.schemas`. Kubernetes objects are
checked against the strict OpenAPI-derived schemas that the `kubernetes-validate` package ships
as data; its own `validate()` rebuilds a validator for every call, so this module compiles one
validator per (version, apiVersion, kind) and keeps it.

Each schema is compiled twice: by `jsonschema-rs` (compiled Rust, about 150 times faster) and
by `jsonschema`, the reference. A document the fast validator accepts is valid; any other is
checked again by the reference, whose findings are the errors reported (none, if the two
disagree). So the verdict and the messages are the reference's, and a repo of valid
manifests, the common case, costs microseconds per document.

jsonschema's messages quote the offending value (`'hunter2' is not of type 'boolean'`). For
a Secret (by its kind, whatever its file or apiVersion) every message is rebuilt from the
schema's rule alone (`must be of type 'boolean' (the value is not shown)`), so no value of a
Secret reaches an error, wherever in the object it sits.

Called by `validate`, `validate.files`, `validate.listkinds`, `validate.quantitycheck` and
`validate.references`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, cast

import jsonschema
import jsonschema.exceptions
import jsonschema_rs
from referencing import Registry, Resource

from reconciler.errors import show
from reconciler.validate import kuberanges
from reconciler.yamlio import escape_pointer_token

MAX_ERRORS_PER_DOCUMENT = 20

DRO_SCHEMAS: Mapping[tuple[str, str], str] = {
    ("multicluster.io/v1alpha1", "Cluster"): "cluster.json",
    ("multicluster.io/v1alpha1", "SchedulerConfiguration"): "schedulerconfiguration.json",
    ("multicluster.io/v1alpha1", "ResourcePlacementPolicy"): "resourceplacementpolicy.json",
    ("multicluster.io/v1alpha1", "ClusterOverridePolicy"): "clusteroverridepolicy.json",
    ("multicluster.io/v1alpha1", "PropagationPolicy"): "propagationpolicy.json",
    ("multicluster.io/v1alpha1", "DataSet"): "dataset.json",
    ("multicluster.io/v1alpha1", "Topology"): "topology.json",
    ("multicluster.io/v1alpha1", "HelmRelease"): "helmrelease.json",
    ("policy.karmada.io/v1alpha1", "PropagationPolicy"): "karmada-propagationpolicy.json",
    ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy"): "karmada-propagationpolicy.json",
    ("policy.karmada.io/v1alpha1", "OverridePolicy"): "karmada-overridepolicy.json",
    ("policy.karmada.io/v1alpha1", "ClusterOverridePolicy"): "karmada-overridepolicy.json",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaError:
    """One schema violation: a JSON pointer into the document and a message."""

    pointer: str
    message: str


@dataclass(frozen=True, slots=True)
class _Checker:
    """One schema compiled by the reference validator and, when it can, by the fast one."""

    reference: jsonschema.protocols.Validator
    fast: Any | None = None


def _compiled(
    schema: Mapping[str, Any], resources_by_uri: Mapping[str, Any] | None = None
) -> _Checker:
    registry: Registry[Any] = Registry()
    for uri, contents in (resources_by_uri or {}).items():
        registry = registry.with_resource(uri, Resource.from_contents(contents))
    reference = jsonschema.Draft202012Validator(schema, registry=registry)
    try:
        fast_registry = jsonschema_rs.Registry(list((resources_by_uri or {}).items()))
        fast = jsonschema_rs.Draft202012Validator(dict(schema), registry=fast_registry)
    except (ValueError, jsonschema_rs.ReferencingError):
        fast = None  # a schema the fast validator cannot compile: the reference alone decides
    return _Checker(reference, fast)


def schema_folder() -> Traversable:
    """dro's schemas: inside the installed package, or the repo's schemas/ from a checkout."""
    try:
        packaged = resources.files("reconciler.schemas")
        if packaged.joinpath("cluster.json").is_file():
            return packaged
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "schemas"


@cache
def _dro_validator(filename: str) -> _Checker:
    return _compiled(json.loads(schema_folder().joinpath(filename).read_text(encoding="utf-8")))


def check_dro(api_version: str, kind: str, body: Mapping[str, Any]) -> list[SchemaError]:
    """Validate one dro or Karmada document; unknown (apiVersion, kind) is the caller's error."""
    return _errors(_dro_validator(DRO_SCHEMAS[(api_version, kind)]), body)


# --- Kubernetes -----------------------------------------------------------------------------


def _kube_root() -> Traversable:
    return resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")


@cache
def kubernetes_versions() -> tuple[str, ...]:
    """Kubernetes minor versions with bundled strict schemas, oldest first ("1.25" …)."""
    found = []
    for entry in _kube_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if match:
            found.append((int(match[1]), int(match[2])))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def _kube_folder(version: str) -> Traversable:
    return _kube_root().joinpath(f"v{version}.0-local-strict")


@cache
def _kube_definitions(version: str) -> Mapping[str, Any]:
    definitions = json.loads(_kube_folder(version).joinpath("_definitions.json").read_text())
    kuberanges.bounded(definitions.get("$defs") or definitions.get("definitions") or {})
    return {"https://kubernetes.io/api/_definitions.json": definitions}


def _kube_schema_name(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    prefix = group.split(".", 1)[0]
    suffix = f"{prefix}-{version}" if group else version
    return f"{kind.lower()}-{suffix}.json"


@cache
def kube_schema(version: str, api_version: str, kind: str) -> Mapping[str, Any] | None:
    """The strict schema of a built-in kind in Kubernetes `version`, or None. Its `$ref`s
    point into `kube_definitions(version)`."""
    schema_file = _kube_folder(version).joinpath(_kube_schema_name(api_version, kind))
    if not schema_file.is_file():
        return None
    schema: Mapping[str, Any] = json.loads(schema_file.read_text())
    # The schema's x-kubernetes-group-version-kind names the real group; reject near misses
    # such as apps.example.com/v1 Deployment matching apps/v1.
    gvks = schema.get("x-kubernetes-group-version-kind", [])
    group = api_version.rpartition("/")[0]
    if gvks and not any(g.get("group", "") == group and g.get("kind") == kind for g in gvks):
        return None
    return schema


def kube_definitions(version: str) -> Mapping[str, Any]:
    """The shared definitions (`$defs`) of Kubernetes `version`'s schemas, by name."""
    definitions: Mapping[str, Any] = next(iter(_kube_definitions(version).values()))["$defs"]
    return definitions


@cache
def _kube_validator(version: str, api_version: str, kind: str) -> _Checker | None:
    schema = kube_schema(version, api_version, kind)
    if schema is None:
        return None
    return _compiled(schema, _kube_definitions(version))


def has_kube_schema(version: str, api_version: str, kind: str) -> bool:
    """True when Kubernetes `version` has a built-in schema for this apiVersion and kind."""
    return _kube_validator(version, api_version, kind) is not None


def check_kube(version: str, body: Mapping[str, Any]) -> list[SchemaError]:
    """Validate a built-in Kubernetes object strictly (unknown fields are errors)."""
    validator = _kube_validator(version, str(body["apiVersion"]), str(body["kind"]))
    if validator is None:
        raise KeyError((body["apiVersion"], body["kind"]))
    return _errors(validator, body)


def check_openapi_v3(schema: Mapping[str, Any], body: Mapping[str, Any]) -> list[SchemaError]:
    """Validate a custom resource against its CRD's openAPIV3Schema (structural subset)."""
    return _errors(_crd_validator(json.dumps(schema, sort_keys=True)), body)


@cache
def _crd_validator(schema_text: str) -> _Checker:
    return _compiled(json.loads(schema_text))


# --- error shaping ----------------------------------------------------------------------------


def _pointer(path: Iterator[Any] | Any) -> str:
    return "".join(f"/{escape_pointer_token(str(part))}" for part in path)


def _describe(error: jsonschema.exceptions.ValidationError, blind: bool) -> list[SchemaError]:
    if error.validator in ("oneOf", "anyOf") and error.context:
        return _describe(jsonschema.exceptions.best_match(error.context), blind)
    base = _pointer(error.absolute_path)
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(schema.get("properties", {}))
        patterns = schema.get("patternProperties", {})
        extras = sorted(
            k
            for k in error.instance
            if k not in known and not any(re.search(p, k) for p in patterns)
        )
        if extras:
            return [
                SchemaError(
                    pointer=f"{base}/{escape_pointer_token(k)}",
                    message=f"unknown field {k!r}"
                    + (
                        f" (expected one of: {', '.join(sorted(known))})"
                        if 0 < len(known) <= 12
                        else ""
                    ),
                )
                for k in extras
            ]
    if error.validator == "required":
        return [SchemaError(pointer=base, message=error.message.replace("property", "field"))]
    if blind:
        return [SchemaError(pointer=base, message=f"{_rule(error, schema)} {NOT_SHOWN}")]
    if error.validator == "pattern" and "description" in schema:
        return [
            SchemaError(pointer=base, message=f"{show(error.instance)}: {schema['description']}")
        ]
    if error.validator == "const":
        return [
            SchemaError(
                pointer=base,
                message=f"must be {show(error.validator_value)}, got {show(error.instance)}",
            )
        ]
    if error.validator == "enum":
        allowed = ", ".join(show(v) for v in cast(list[Any], error.validator_value))
        return [
            SchemaError(pointer=base, message=f"{_shown(error.instance)} is not one of {allowed}")
        ]
    return [SchemaError(pointer=base, message=_yaml_words(error))]


_LONGEST_SHOWN = 60
"""A longer string value is cut in a message: a 5,000-digit value must not flood the report."""


def _shown(value: Any) -> str:
    """A value as a message quotes it: YAML's words (`errors.show`), long strings cut."""
    if isinstance(value, str) and len(value) > _LONGEST_SHOWN:
        return f"{value[:_LONGEST_SHOWN]!r}…({len(value)} characters)"
    return show(value)


def _yaml_words(error: jsonschema.exceptions.ValidationError) -> str:
    """jsonschema's message with the value it quotes (`None is not of type 'array'`) written
    as YAML writes it (`null is not of type 'array'`), and a long string cut."""
    message, written = error.message, repr(error.instance)
    if message.startswith(written):
        return _shown(error.instance) + message[len(written) :]
    if isinstance(error.instance, str) and len(error.instance) > _LONGEST_SHOWN:
        return message.replace(written, _shown(error.instance))
    return message


NOT_SHOWN = "(the value is not shown)"


def holds_secret_values(body: Mapping[str, Any]) -> bool:
    """Whether schema messages about `body` must not quote it: a Secret, by its kind alone
    (any case, any apiVersion), so that no file name or group can lift the mask."""
    return str(body.get("kind", "")).lower() == "secret"


def _rule(error: jsonschema.exceptions.ValidationError, schema: Mapping[str, Any]) -> str:
    """What the schema asks at this place, from the schema alone: nothing of the instance."""
    rule, expected = str(error.validator), error.validator_value
    if rule == "type":
        names = expected if isinstance(expected, list) else [expected]
        return "must be of type " + " or ".join(repr(str(name)) for name in names)
    if rule == "enum":
        return "must be one of " + ", ".join(show(v) for v in cast(list[Any], expected))
    if rule == "const":
        return f"must be {show(expected)}"
    if rule == "pattern":
        return str(schema.get("description") or f"must match the pattern {expected!r}")
    if rule == "format":
        return f"must be in the format {expected!r}"
    if isinstance(expected, int | float | str) and not isinstance(expected, bool):
        return f"breaks {rule} {expected!r}"  # minLength, maximum, multipleOf …
    return f"does not satisfy the schema's {rule!r} rule"


def _errors(checker: _Checker, body: Mapping[str, Any]) -> list[SchemaError]:
    if checker.fast is not None and _fast_accepts(checker.fast, body):
        return []
    blind = holds_secret_values(body)
    found: list[SchemaError] = []
    for error in checker.reference.iter_errors(body):
        found.extend(_describe(error, blind))
        if len(found) >= MAX_ERRORS_PER_DOCUMENT:
            break
    unique = {(e.pointer, e.message): e for e in found}
    return sorted(unique.values(), key=lambda e: (e.pointer, e.message))


def _fast_accepts(fast: Any, body: Mapping[str, Any]) -> bool:
    try:
        return bool(fast.is_valid(body))
    except (ValueError, TypeError):
        return False  # a value it cannot read (a Python-only type): ask the reference
