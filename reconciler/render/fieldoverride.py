"""Karmada's fieldOverrider: JSON patches inside one string field that holds JSON or YAML.

`fieldPath` is an RFC 6901 pointer to a string in the object, such as `/data/app.yaml` of a
ConfigMap. The string is parsed as YAML (`yaml:` operations) or JSON (`json:` operations),
exactly one of the two; each operation `{subPath, operator: add|remove|replace, value}` is an
RFC 6902 operation on the parsed document; the result is written back as text. As in Karmada
(`applyFieldOverriders`), a path that does not lead to a string is an error, `add` and
`replace` need a value and `remove` takes none. YAML is written back with dro's YAML writer
(keys sorted, as Karmada's writer sorts them), JSON compactly in its own key order. Errors
name paths, never the field's text, which may be a Secret's. The overrides module is the
caller.

Called by `render.overrides`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch

from reconciler import yamlio


class FieldOverrideError(ValueError):
    """The fieldOverrider cannot be applied; the message names the path and why."""


def _text_at(manifest: Any, pointer: str) -> str:
    try:
        value = jsonpatch.JsonPointer(pointer).resolve(manifest)
    except jsonpatch.JsonPointerException:
        raise FieldOverrideError(f"fieldPath {pointer}: no such field") from None
    if not isinstance(value, str):
        raise FieldOverrideError(f"fieldPath {pointer}: the value there is not a string")
    return value


def _operations(ops: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, Any]]:
    patch = []
    for index, op in enumerate(ops):
        operator, has_value = op["operator"], op.get("value") is not None
        if operator in ("add", "replace") and not has_value:
            raise FieldOverrideError(f"{where}/{index}: a value is required for {operator}")
        if operator == "remove" and has_value:
            raise FieldOverrideError(f"{where}/{index}: remove takes no value")
        step = {"op": operator, "path": op["subPath"]}
        if has_value:
            step["value"] = op["value"]
        patch.append(step)
    return patch


def _parse(text: str, as_yaml: bool, pointer: str) -> Any:
    if not as_yaml:
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise FieldOverrideError(
                f"fieldPath {pointer}: not JSON (line {error.lineno}, column {error.colno})"
            ) from None
    try:
        documents = yamlio.parse_documents(pointer, text.encode("utf-8"))
    except yamlio.YamlError as error:
        raise FieldOverrideError(
            f"fieldPath {pointer}: not YAML (line {error.problem.line} of the field)"
        ) from None
    if len(documents) > 1:
        raise FieldOverrideError(f"fieldPath {pointer}: holds more than one YAML document")
    return documents[0].body if documents else None


def apply(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
    """Apply one fieldOverrider entry to `manifest` in place; raises FieldOverrideError."""
    pointer = str(op["fieldPath"])
    yaml_ops, json_ops = op.get("yaml") or (), op.get("json") or ()
    if yaml_ops and json_ops:
        raise FieldOverrideError("has both yaml and json operations; only one is allowed")
    if not yaml_ops and not json_ops:
        raise FieldOverrideError("must have either json or yaml operations")
    as_yaml = bool(yaml_ops)
    patch = _operations(yaml_ops or json_ops, "yaml" if as_yaml else "json")
    document = _parse(_text_at(manifest, pointer), as_yaml, pointer)
    try:
        result = jsonpatch.apply_patch(document, patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
        paths = ", ".join(str(step["path"]) for step in patch)
        raise FieldOverrideError(
            f"fieldPath {pointer}: the operations on {paths} do not apply to the "
            f"field's {'YAML' if as_yaml else 'JSON'} ({type(error).__name__})"
        ) from None
    if as_yaml:
        text = yamlio.dump(result)
    else:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    jsonpatch.JsonPointer(pointer).set(manifest, text, inplace=True)
