"""Override operations: the draft's fieldPatches and Karmada's overriders, on one manifest.

`fieldPatch` paths use dots between keys and `[N]` for list items, as in the draft:
`spec.template.spec.containers[0].image`. A key holding dots or slashes is written in brackets
and double quotes: `metadata.annotations["example.com/owner"]` (inside the quotes, `\\"` is a
quote and `\\\\` a backslash). Missing maps on the way are created; a missing list item is an
error. Karmada's overriders keep Karmada's semantics (`KARMADA.md` §2). Every operation works
on a manifest the caller has already copied.

Called by `render`, `render.overridden`, `validate.overridecheck` and `validate.sealedcheck`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import jsonpatch

from reconciler.domain import OverridePolicy, OverrideRule, ResourceKey
from reconciler.errors import Problem, ValidationFailed
from reconciler.render import fieldoverride, imageref

PathToken = str | int

_TOKEN = re.compile(
    r'\.?(?:(?P<key>[^.\[\]"]+)|\[(?P<index>\d+)\]|\["(?P<quoted>(?:[^"\\]|\\.)*)"\])'
)
_POD_KINDS = {
    "Pod": ("spec",),
    "ReplicaSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}


class OverrideError(ValueError):
    """An override could not be applied; the message says which path or field and why."""


def parse_field_path(path: str) -> list[PathToken]:
    """Split a fieldPatch path into keys (str) and list indices (int)."""
    tokens: list[PathToken] = []
    position = 0
    while position < len(path):
        match = _TOKEN.match(path, position)
        if match is None or match.end() == position or (position == 0 and path[0] == "."):
            raise OverrideError(
                f"bad field path {path!r} at character {position + 1}: use "
                'a.b[0].c, and ["key.with.dots"] for keys with dots or slashes'
            )
        if match["index"] is not None:
            tokens.append(int(match["index"]))
        elif match["quoted"] is not None:
            tokens.append(re.sub(r"\\(.)", r"\1", match["quoted"]))
        else:
            tokens.append(match["key"])
        position = match.end()
    if not tokens:
        raise OverrideError("empty field path")
    return tokens


def field_patch(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
    """Set the value at a fieldPatch path, creating missing maps along the way."""
    path = str(op["path"])
    tokens = parse_field_path(path)
    node: Any = manifest
    for depth, token in enumerate(tokens[:-1]):
        following = tokens[depth + 1]
        node = _step(node, token, path, create=isinstance(following, str))
    last = tokens[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise OverrideError(f"{path}: no list item [{last}] to set")
        node[last] = op["value"]
    else:
        if not isinstance(node, dict):
            raise OverrideError(f"{path}: {last!r} is set on a {type(node).__name__}, not a map")
        node[last] = op["value"]


def _step(node: Any, token: PathToken, path: str, *, create: bool) -> Any:
    if isinstance(token, int):
        if not isinstance(node, list) or token >= len(node):
            raise OverrideError(f"{path}: no list item [{token}]")
        return node[token]
    if not isinstance(node, dict):
        raise OverrideError(f"{path}: cannot read {token!r} from a {type(node).__name__}")
    if token not in node or node[token] is None:
        if not create:
            raise OverrideError(f"{path}: {token!r} is missing and is followed by a list index")
        node[token] = {}
    return node[token]


def plaintext(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
    """Karmada's plaintext overrider: one RFC 6902 operation on the whole object."""
    patch: dict[str, Any] = {"op": op["operator"], "path": op["path"]}
    if op["operator"] != "remove":
        patch["value"] = op.get("value")
    try:
        result = jsonpatch.apply_patch(manifest, [patch], in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
        why = _patch_failure(manifest, patch, error)
        raise OverrideError(f"plaintext {op['operator']} {op['path']}: {why}") from None
    if result is not manifest:  # a patch on the root replaces the whole object
        manifest.clear()
        manifest.update(result)


def _patch_failure(manifest: Any, patch: Mapping[str, Any], error: Exception) -> str:
    """Why an RFC 6902 operation failed, naming keys and indices only. The library's own
    messages quote the object (`member 'x' not found in {...}`) or the tested value, which
    for a Secret are its data."""
    operation, path = str(patch["op"]), str(patch["path"])
    # add and move create their last token; the others need the whole path to exist
    whole = operation not in ("add", "move", "copy")
    reason = _unresolved(manifest, path, whole=whole)
    if reason:
        return reason
    if isinstance(error, jsonpatch.JsonPatchTestFailed):
        return "the value there is not the tested value"
    if isinstance(error, jsonpatch.JsonPatchConflict | jsonpatch.InvalidJsonPatch):
        return f"the operation does not apply there ({type(error).__name__})"
    return "the operation does not apply there"


def _unresolved(document: Any, pointer: str, *, whole: bool) -> str:
    """Where a JSON pointer stops resolving in `document` and why, without any value ("" when
    it resolves). With `whole` false only its parent must exist."""
    if pointer and not pointer.startswith("/"):
        return "a JSON pointer starts with /"
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    node, at = document, ""
    for token in tokens if whole else tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                return f"{at or '/'} has no field {token!r}"
            node = node[token]
        elif isinstance(node, list):
            if not token.isdigit() or int(token) >= len(node):
                return f"{at or '/'} has no item {token!r} (it has {len(node)})"
            node = node[int(token)]
        else:
            return f"{at or '/'} is a {_type_name(node)}, not an object or a list"
        at += "/" + token.replace("~", "~0").replace("/", "~1")
    return ""


def _type_name(value: Any) -> str:
    return {str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _rewrite_image(image: str, op: Mapping[str, Any]) -> str:
    try:
        return imageref.rewrite(
            image, str(op["component"]), str(op["operator"]), str(op.get("value") or "")
        )
    except imageref.ImageError as error:
        raise OverrideError(str(error)) from None


def _containers(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    path = _POD_KINDS.get(str(manifest.get("kind")))
    if path is None:
        return []
    node: Any = manifest
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    containers = node.get("containers") if isinstance(node, dict) else None
    return containers if isinstance(containers, list) else []


def image_overrider(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
    """Rewrite a registry, repository or tag: every app container, or the predicate's path."""
    predicate = op.get("predicate")
    if predicate:
        pointer = jsonpatch.JsonPointer(predicate["path"])
        try:
            current = pointer.resolve(manifest)
        except jsonpatch.JsonPointerException:
            why = _unresolved(manifest, str(predicate["path"]), whole=True)
            raise OverrideError(f"imageOverrider predicate {predicate['path']}: {why}") from None
        if not isinstance(current, str):
            raise OverrideError(
                f"imageOverrider predicate {predicate['path']}: the value there is a "
                f"{_type_name(current)}, not an image string"
            )
        plaintext(
            manifest,
            {
                "operator": "replace",
                "path": predicate["path"],
                "value": _rewrite_image(current, op),
            },
        )
        return
    for container in _containers(manifest):
        if isinstance(container.get("image"), str):
            container["image"] = _rewrite_image(container["image"], op)


def _list_overrider(field: str) -> Callable[[dict[str, Any], Mapping[str, Any]], None]:
    def apply(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
        for container in _containers(manifest):
            if container.get("name") != op["containerName"]:
                continue
            values = [str(v) for v in op.get("value") or ()]
            if op["operator"] == "add":
                container[field] = list(container.get(field) or []) + values
            elif field in container:
                container[field] = [v for v in container[field] if v not in values]

    apply.__doc__ = f"Karmada's {field}Overrider: append to or remove from `{field}`."
    return apply


def _map_overrider(field: str) -> Callable[[dict[str, Any], Mapping[str, Any]], None]:
    def apply(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
        metadata = manifest.setdefault("metadata", {})
        current = metadata.get(field)
        values = {str(k): str(v) for k, v in (op.get("value") or {}).items()}
        if op["operator"] == "add":
            metadata[field] = {**(current or {}), **values}
        elif isinstance(current, dict):
            for key, value in values.items():
                if key in current:
                    if op["operator"] == "replace":
                        current[key] = value
                    else:
                        del current[key]

    apply.__doc__ = f"Karmada's {field}Overrider: add, replace or remove {field}."
    return apply


def field_overrider(manifest: dict[str, Any], op: Mapping[str, Any]) -> None:
    """Karmada's fieldOverrider: JSON patches inside a field holding JSON or YAML text."""
    try:
        fieldoverride.apply(manifest, op)
    except fieldoverride.FieldOverrideError as error:
        raise OverrideError(str(error)) from None


OPERATIONS: Mapping[str, Callable[[dict[str, Any], Mapping[str, Any]], None]] = {
    "fieldPatch": field_patch,
    "plaintext": plaintext,
    "imageOverrider": image_overrider,
    "commandOverrider": _list_overrider("command"),
    "argsOverrider": _list_overrider("args"),
    "labelsOverrider": _map_overrider("labels"),
    "annotationsOverrider": _map_overrider("annotations"),
    "fieldOverrider": field_overrider,
}


def apply(manifest: dict[str, Any], operation: str, op: Mapping[str, Any]) -> None:
    """Apply one tagged operation to `manifest` in place; raises `OverrideError`."""
    OPERATIONS[operation](manifest, op)


def apply_rule(
    manifest: dict[str, Any],
    policy: OverridePolicy,
    rule: OverrideRule,
    *,
    cluster: str,
    key: ResourceKey,
) -> None:
    """Apply one rule's operations in order; a failing one raises `ValidationFailed`, located
    at that operation's line in its policy file (`failure`)."""
    for position, (operation, op) in enumerate(rule.operations):
        try:
            apply(manifest, operation, op)
        except OverrideError as error:
            detail = f"{operation} failed on {key} for cluster {cluster}: {error}"
            raise ValidationFailed([failure(policy, rule, position, detail)]) from error


def failure(policy: OverridePolicy, rule: OverrideRule, position: int, message: str) -> Problem:
    """A problem at the line of the `position`-th operation of `rule` in its policy file."""
    pointer = rule.pointers[position] if position < len(rule.pointers) else "/spec"
    return Problem(
        path=policy.origin.path,
        line=policy.origin.line_of(pointer),
        pointer=pointer,
        message=f"{policy.ref}: {message}",
    )
