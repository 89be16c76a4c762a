"""What a YAML file may hold before `yamlio` builds values from it: the limits that keep a
hostile or careless file from crashing or stalling a command.

- Nesting: at most `MAX_DEPTH` levels below a document's root. PyYAML's composer recurses once
  per level on the C stack, and about 25,000 levels (a 50 KB file of `[`) crash the process
  with SIGSEGV; libyaml's own parser keeps its state on the heap and is safe. `Loader` counts
  the levels inside the composer (`DepthGuard`), so it stops exactly at the node that crosses
  the limit, before any deep recursion, and reports its line.
- Numbers: integers within int64 (Python refuses to read more than 4,300 digits at all), and
  floats that are finite: Kubernetes decodes JSON numbers as int64 or float64, and JSON has
  no NaN or infinity.

Called by `yamlio`.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

MAX_DEPTH = 100
"""Levels of mappings and sequences below a document's root (the root is level 0)."""
DEPTH_SHOWN = 4
"""Levels of a too-deep value's pointer that its error shows; its line says where it crosses."""
INT64 = (-(2**63), 2**63 - 1)
"""The integers a file may hold."""

INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"


def escape_pointer_token(token: str) -> str:
    """RFC 6901 escaping of one reference token."""
    return token.replace("~", "~0").replace("/", "~1")


def outer(pointer: str) -> str:
    """The first `DEPTH_SHOWN` levels of a pointer, not a hundred `/0`s."""
    return "/".join(pointer.split("/")[: DEPTH_SHOWN + 1])


class TooDeep(yaml.YAMLError):
    """The composer reached a node nested deeper than `MAX_DEPTH`, at `line` (1-based)."""

    def __init__(self, line: int, pointer: str) -> None:
        self.line = line
        self.pointer = pointer
        super().__init__(f"nesting deeper than {MAX_DEPTH} levels")


class DepthGuard:
    """Mixed into PyYAML's loader: stops the composer before it descends past `MAX_DEPTH`.

    The composer calls `descend_resolver(parent, index)` before it composes each node and
    `ascend_resolver()` after, in C and in pure Python alike (dro uses no path resolvers, the
    only thing the base methods do). Counting there costs one list append per node.
    """

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)  # type: ignore[call-arg]
        self._trail: list[Any] = []

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """One level down; `TooDeep` past the limit."""
        trail = self._trail
        trail.append(current_index)
        if len(trail) > MAX_DEPTH + 1:
            raise TooDeep(_line_below(current_node, current_index), _trail_pointer(trail))

    def ascend_resolver(self) -> None:
        """One level up."""
        self._trail.pop()


def _line_below(parent: Any, index: Any) -> int:
    """The line of the child of `parent` at `index` being composed: its key's line in a
    mapping, else the end of the previous item, else the parent's own line."""
    if isinstance(index, yaml.Node):
        return int(index.start_mark.line) + 1
    if isinstance(index, int) and index > 0 and isinstance(parent, yaml.SequenceNode):
        return int(parent.value[index - 1].end_mark.line) + 1
    return int(parent.start_mark.line) + 1 if isinstance(parent, yaml.Node) else 1


def _trail_pointer(trail: list[Any]) -> str:
    """The pointer of the node being composed (keys and indexes; complex keys skipped)."""
    tokens = []
    for index in trail[1 : DEPTH_SHOWN + 1]:
        if isinstance(index, yaml.ScalarNode):
            tokens.append(escape_pointer_token(str(index.value)))
        elif isinstance(index, int):
            tokens.append(str(index))
    return "".join(f"/{token}" for token in tokens)


Loader: Any = type("Loader", (DepthGuard, getattr(yaml, "CSafeLoader", yaml.SafeLoader)), {})
"""libyaml's safe loader (PyYAML's own when libyaml is missing), with the depth guard."""


def number_problem(tag: str, value: Any, written: str) -> str | None:
    """Why a constructed int or float cannot be kept (None when it can); `value` is None
    when Python refused to read the digits at all."""
    if tag == INT_TAG and (value is None or not INT64[0] <= value <= INT64[1]):
        return f"integer {_shortened(written)} is outside int64"
    if tag == FLOAT_TAG and not math.isfinite(value):
        return f"{_shortened(written)} is not a finite number (JSON has no NaN or infinity)"
    return None


def _shortened(text: str) -> str:
    """A scalar as written, cut for a message."""
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"
