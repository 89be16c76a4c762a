"""The difference between two manifests as RFC 6902 operations Karmada's `plaintext`
overrider takes: `add`, `remove` and `replace` only (no `move` or `copy`), in a fixed order.

Maps are compared key by key (removals first, then keys in sorted order), lists of the same
length item by item; any other change replaces the value whole. A value of another JSON type
(`1` and `true`, `1` and `1.0`) is a change. Applying the operations to `before` in order gives
`after`, exactly (tests/test_interop_karmada.py checks it with the `jsonpatch` library).

Called by `render.karmadaout`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pointer(parts: tuple[str | int, ...]) -> str:
    """The RFC 6901 JSON pointer of a path (`~` → `~0`, `/` → `~1`)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def diff(before: Any, after: Any) -> list[dict[str, Any]]:
    """The operations that turn `before` into `after`; empty when they are equal."""
    operations: list[dict[str, Any]] = []
    _diff(before, after, (), operations)
    return operations


def _same(before: Any, after: Any) -> bool:
    return type(before) is type(after) and before == after


def _diff(before: Any, after: Any, at: tuple[str | int, ...], into: list[dict[str, Any]]) -> None:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in sorted(k for k in before if k not in after):
            into.append({"operator": "remove", "path": pointer((*at, key))})
        for key in sorted(after):
            if key not in before:
                into.append({"operator": "add", "path": pointer((*at, key)), "value": after[key]})
            else:
                _diff(before[key], after[key], (*at, key), into)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            _diff(old, new, (*at, index), into)
        return
    if not _deep_same(before, after):
        into.append({"operator": "replace", "path": pointer(at), "value": after})


def _deep_same(before: Any, after: Any) -> bool:
    """Equal with the same JSON types all the way down (`True` is not `1`)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        return before.keys() == after.keys() and all(
            _deep_same(before[k], after[k]) for k in before
        )
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(map(_deep_same, before, after))
    return _same(before, after)
