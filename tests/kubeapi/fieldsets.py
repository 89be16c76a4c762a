"""Field sets: the paths an object sets, their FieldsV1 encoding and conflict-message spelling.

A path is a tuple of FieldsV1 path elements: `f:<field>` for a map key, `k:{...}` for an item of
an associative list (keyed by its merge keys), `v:<json>` for an item of a set list. Without
OpenAPI schemas, list and map semantics come from field names, following the built-in types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

Path = tuple[str, ...]

# Lists merged by key, per field name. "ports" is resolved by the keys its items carry.
ASSOCIATIVE_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "ownerReferences": ("uid",),
    "conditions": ("type",),
    "hostAliases": ("ip",),
    "resourceClaims": ("name",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
PORT_KEYS: tuple[tuple[str, ...], ...] = (("containerPort", "protocol"), ("port", "protocol"))
SET_LISTS = frozenset({"finalizers"})
LABEL_SELECTOR_FIELDS = frozenset({"matchLabels", "matchExpressions"})
# Maps and structs owned as a whole (besides any `*Selector` shaped like a label selector).
ATOMIC_MAP_FIELDS = frozenset({"selector", "nodeSelector", "roleRef"})

# Paths no manager ever owns (object identity and server-maintained metadata).
UNOWNED_EXACT: frozenset[Path] = frozenset({("f:apiVersion",), ("f:kind",), ("f:metadata",)})
UNOWNED_PREFIXES: frozenset[Path] = frozenset(
    ("f:metadata", f"f:{name}")
    for name in (
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "managedFields",
    )
)


@dataclass(frozen=True)
class ListShape:
    """How a list merges: `atomic` (replaced whole), `set` (scalar items) or `map` (by keys)."""

    style: str
    keys: tuple[str, ...] = ()


ATOMIC = ListShape("atomic")


def list_shape(field_name: str | None, items: list[Any]) -> ListShape:
    """Decide how the list found under `field_name` merges, given its items."""
    if field_name in SET_LISTS and all(not isinstance(i, dict | list) for i in items):
        return ListShape("set") if len(set(map(json.dumps, items))) == len(items) else ATOMIC
    candidates: tuple[tuple[str, ...], ...] = ()
    if field_name == "ports":
        candidates = PORT_KEYS
    elif field_name in ASSOCIATIVE_LIST_KEYS:
        candidates = (ASSOCIATIVE_LIST_KEYS[field_name],)
    for keys in candidates:
        if items and all(isinstance(item, dict) and keys[0] in item for item in items):
            seen = {item_element(item, keys) for item in items}
            return ListShape("map", keys) if len(seen) == len(items) else ATOMIC
    return ListShape("map", candidates[0]) if candidates and not items else ATOMIC


def is_atomic_map(field_name: str | None, value: dict[str, Any]) -> bool:
    """Tell whether a map is owned as a whole (label selectors are atomic structs)."""
    if field_name in ATOMIC_MAP_FIELDS:
        return True
    if field_name is None or not field_name.endswith("Selector"):
        return False
    return set(value) <= LABEL_SELECTOR_FIELDS


def compact_json(value: Any) -> str:
    """Serialise the way FieldsV1 keys do: compact, keys sorted."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def item_element(item: Any, keys: tuple[str, ...]) -> str:
    """Return the path element of a list item: `k:{...}` for keyed items, `v:` for set items."""
    if not keys:
        return "v:" + compact_json(item)
    return "k:" + compact_json({key: item[key] for key in keys if key in item})


class ItemMarker:
    """Stands for an associative-list item in a value map; items are never compared as values."""


ITEM = ItemMarker()


def field_values(value: Any) -> dict[Path, Any]:
    """Map every owned-able path of an object to its value (`ITEM` for keyed list items)."""
    out: dict[Path, Any] = {}
    _collect(value, (), None, out)
    return out


def _collect(value: Any, path: Path, field_name: str | None, out: dict[Path, Any]) -> None:
    """Walk a map or list `value` at `path`, recording member paths into `out`."""
    if isinstance(value, dict):
        if path and is_atomic_map(field_name, value):
            out[path] = value
            return
        for key, child in value.items():
            collect_field(key, child, (*path, f"f:{key}"), out)
    elif isinstance(value, list):
        shape = list_shape(field_name, value)
        if shape.style == "atomic":
            out[path] = value
            return
        for item in value:
            item_path = (*path, item_element(item, shape.keys))
            out[item_path] = ITEM if shape.style == "map" else item
            if isinstance(item, dict):
                _collect(item, item_path, None, out)


def collect_field(key: str, child: Any, child_path: Path, out: dict[Path, Any]) -> None:
    """Record the member paths of the map entry `key: child` found at `child_path`."""
    nested_map = isinstance(child, dict) and child and not is_atomic_map(key, child)
    if nested_map or isinstance(child, list):
        _collect(child, child_path, key, out)
    else:
        out[child_path] = child


def item_paths(item: Any, item_path: Path) -> set[Path]:
    """Return the member paths of one list item: the item itself and, for maps, its fields."""
    out: dict[Path, Any] = {item_path: ITEM}
    if isinstance(item, dict):
        _collect(item, item_path, None, out)
    return set(out)


# Write scopes: the whole object (types without a status subresource), everything but
# `status` (the main endpoint of types with one), or only `status` (the status subresource).
SCOPE_ALL = "all"
SCOPE_MAIN = "main"
SCOPE_STATUS = "status"


def ownable(path: Path, scope: str) -> bool:
    """Tell whether `path` can be owned by a manager writing in `scope`."""
    if path in UNOWNED_EXACT or path[:2] in UNOWNED_PREFIXES:
        return False
    if scope == SCOPE_STATUS:
        return path[:1] == ("f:status",)
    if scope == SCOPE_MAIN:
        return path[:1] != ("f:status",)
    return True


def owned_values(obj: dict[str, Any], scope: str) -> dict[Path, Any]:
    """Return `field_values` restricted to what a write in `scope` may own."""
    return {path: v for path, v in field_values(obj).items() if ownable(path, scope)}


def changed_paths(old: dict[Path, Any], new: dict[Path, Any]) -> tuple[set[Path], set[Path]]:
    """Compare two value maps: return (added or modified paths, removed paths)."""
    touched = {
        path
        for path, value in new.items()
        if path not in old or (value is not ITEM and old[path] != value)
    }
    return touched, set(old) - set(new)


def encode_fields(paths: set[Path]) -> dict[str, Any]:
    """Encode a path set as a FieldsV1 tree (`.: {}` marks members that also have children)."""
    tree: dict[str, Any] = {}
    members: set[Path] = set(paths)
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return _mark_members(tree, (), members)


def _mark_members(node: dict[str, Any], path: Path, members: set[Path]) -> dict[str, Any]:
    """Add `.` entries to inner nodes that are members themselves; sort children."""
    out: dict[str, Any] = {}
    if path in members and node and path:
        out["."] = {}
    for element in sorted(node):
        out[element] = _mark_members(node[element], (*path, element), members)
    return out


def decode_fields(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """Decode a FieldsV1 tree into its path set."""
    paths: set[Path] = set()
    for element, child in tree.items():
        if element == ".":
            paths.add(prefix)
            continue
        path = (*prefix, element)
        if not child:
            paths.add(path)
        else:
            paths |= decode_fields(child, path)
    return paths


def path_text(path: Path) -> str:
    """Spell a path the way conflict messages do: `.spec.containers[name="app"].image`."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            text += f".{rest}"
        elif kind == "k":
            fields = json.loads(rest)
            text += "[" + ",".join(f"{k}={compact_json(v)}" for k, v in fields.items()) + "]"
        elif kind == "v":
            text += f"[={rest}]"
        else:
            text += f"[{rest}]"
    return text
