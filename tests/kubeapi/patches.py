"""Non-apply PATCH bodies: JSON merge patch, strategic merge patch and JSON patch."""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError, bad_request
from .fieldsets import ASSOCIATIVE_LIST_KEYS

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Strategic merge patch merges these lists by one key; every other list is replaced.
STRATEGIC_MERGE_KEYS: dict[str, str] = {
    name: keys[0] for name, keys in ASSOCIATIVE_LIST_KEYS.items()
}


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch (null deletes a key, lists are replaced)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field_name: str | None = None) -> Any:
    """Apply a strategic merge patch: like a merge patch, but keyed lists merge by key.

    Supports `$patch: delete` on list items and `$patch: replace` on maps; other `$`
    directives (such as `$setElementOrder`) are accepted and ignored.
    """
    if isinstance(patch, list):
        return _strategic_list(target, patch, field_name)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = strategic_merge_patch(result.get(key), value, key)
    return result


def _strategic_list(target: Any, patch: list[Any], field_name: str | None) -> list[Any]:
    """Merge a patch list into a live list by its merge key, or replace it."""
    merge_key = STRATEGIC_MERGE_KEYS.get(field_name or "", "")
    if field_name == "ports" and patch and all(isinstance(i, dict) for i in patch):
        merge_key = "containerPort" if "containerPort" in patch[0] else "port"
    keyed = all(isinstance(item, dict) and merge_key in item for item in patch)
    if not merge_key or not keyed or not isinstance(target, list):
        return [item for item in copy.deepcopy(patch) if not _is_delete(item)]
    result = copy.deepcopy(target)
    for item in patch:
        position = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if _is_delete(item):
            if position is not None:
                del result[position]
        elif position is None:
            result.append(strategic_merge_patch(None, item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


def _is_delete(item: Any) -> bool:
    """Tell whether a list item is a `$patch: delete` directive."""
    return isinstance(item, dict) and item.get("$patch") == "delete"


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "path" not in operation:
            raise bad_request(f"invalid json patch operation: {operation!r}")
        op = operation.get("op")
        path = _pointer(str(operation["path"]))
        if op == "add":
            document = _put(document, path, copy.deepcopy(operation.get("value")), insert=True)
        elif op == "remove":
            document = _remove(document, path)[0]
        elif op == "replace":
            _get(document, path)
            document = _put(document, path, copy.deepcopy(operation.get("value")), insert=False)
        elif op in ("move", "copy"):
            source = _pointer(str(operation.get("from", "")))
            value = copy.deepcopy(_get(document, source))
            if op == "move":
                document = _remove(document, source)[0]
            document = _put(document, path, value, insert=True)
        elif op == "test":
            if _get(document, path) != operation.get("value"):
                raise ApiError(422, f"json patch test failed at {operation['path']}")
        else:
            raise bad_request(f"unknown json patch operation {op!r}")
    return document


def _pointer(text: str) -> list[str]:
    """Split a JSON pointer into unescaped tokens."""
    if text == "":
        return []
    if not text.startswith("/"):
        raise bad_request(f"invalid json pointer {text!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _parent(document: Any, path: list[str]) -> Any:
    """Return the container holding the last token of `path`."""
    node = document
    for token in path[:-1]:
        node = _child(node, token)
    return node


def _child(node: Any, token: str) -> Any:
    """Step into a map key or list index, or fail with 422."""
    try:
        if isinstance(node, list):
            return node[int(token)]
        return node[token]
    except (KeyError, IndexError, ValueError, TypeError):
        raise ApiError(422, f"json patch path not found at {token!r}") from None


def _get(document: Any, path: list[str]) -> Any:
    """Read the value at a pointer."""
    return _child(_parent(document, path), path[-1]) if path else document


def _put(document: Any, path: list[str], value: Any, insert: bool) -> Any:
    """Add (or set) `value` at a pointer and return the document."""
    if not path:
        return value
    parent = _parent(document, path)
    token = path[-1]
    if isinstance(parent, list):
        index = len(parent) if token == "-" else int(token)
        if insert:
            parent.insert(index, value)
        else:
            parent[index] = value
    elif isinstance(parent, dict):
        parent[token] = value
    else:
        raise ApiError(422, f"json patch cannot add at {token!r}")
    return document


def _remove(document: Any, path: list[str]) -> tuple[Any, Any]:
    """Remove the value at a pointer; return (document, removed value)."""
    if not path:
        return None, document
    parent = _parent(document, path)
    token = path[-1]
    removed = _child(parent, token)
    if isinstance(parent, list):
        del parent[int(token)]
    else:
        del parent[token]
    return document, removed
