"""What a YAML file may hold before `yamlio` builds values from it: the limits that keep a
hostile or careless file from crashing or stalling a command.

- Nesting: at most `MAX_DEPTH` levels below a document's root. PyYAML's composer recurses once
  per level on the C stack, and about 25,000 levels (a 50 KB file of `[`) crash the process
  with SIGSEGV; libyaml's own parser keeps its state on the heap and is safe. `Loader` counts
  the levels inside the composer (`DepthGuard`), so it stops exactly at the node that crosses
  the limit, before any deep recursion, and reports its line. libyaml 0.2.6 (PyYAML 6.0.4)
  stops at 1,000 levels itself, in its scanner, which runs ahead of the composer; `too_deep`
  then finds the same node from the parser's events, so the report does not depend on the
  PyYAML release.
- Numbers: integers within int64 (Python refuses to read more than 4,300 digits at all), and
  floats that are finite: Kubernetes decodes JSON numbers as int64 or float64, and JSON has
  no NaN or infinity.

Called by `service.api.bodies` and `yamlio`.
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


LIBYAML_DEPTH_ERROR = "maximum nesting depth"
"""What libyaml's own nesting limit says (PyYAML 6.0.4 and later)."""


def too_deep(error: yaml.MarkedYAMLError, stream: str | bytes) -> TooDeep | None:
    """The node that crosses `MAX_DEPTH`, found from the parser's events: the same line and
    pointer `DepthGuard` reports, for a stream whose nesting libyaml's scanner refused (at
    `error`) before the composer reached it. The events are read from the stream up to where
    the scanner stopped, since it scans ahead of the events it hands out. None when nothing
    crosses the limit there."""
    mark = error.problem_mark or error.context_mark
    text = stream.decode("utf-8", "replace") if isinstance(stream, bytes) else stream
    if mark is not None:
        text = text[: mark.index]
    frames: list[_Frame] = []
    try:
        for event in yaml.parse(text, Loader=Loader):
            if isinstance(event, yaml.NodeEvent):
                if len(frames) > MAX_DEPTH:
                    trail = [None, *(frame.child_index() for frame in frames)]
                    return TooDeep(frames[-1].child_line(event), _trail_pointer(trail))
                if isinstance(event, yaml.CollectionStartEvent):
                    frames.append(_Frame(event))
                    continue
            elif not isinstance(event, yaml.CollectionEndEvent):
                continue
            else:
                frames.pop()
            if frames:
                frames[-1].completed(event)
    except yaml.YAMLError:
        return None
    return None


class _Frame:
    """One open mapping or sequence while `too_deep` walks the events."""

    def __init__(self, start: yaml.CollectionStartEvent) -> None:
        self.mapping = isinstance(start, yaml.MappingStartEvent)
        self.line = _line_of(start.start_mark)
        self.items = 0
        self.key: yaml.Node | None = None
        self.key_line = self.line
        self.previous_end = self.line

    def child_index(self) -> Any:
        """The index `DepthGuard` sees for the child being composed: a key node's value side
        gets the key, a key gets None, a sequence item its position."""
        if self.mapping:
            return self.key if self.items % 2 else None
        return self.items

    def child_line(self, event: yaml.Event) -> int:
        """`_line_below` for the child that starts with `event`."""
        if self.mapping:
            return self.key_line if self.items % 2 else self.line
        return self.previous_end if self.items > 0 else self.line

    def completed(self, event: yaml.Event) -> None:
        """A child node ended with `event` (a scalar, an alias or a collection's end)."""
        if self.mapping and self.items % 2 == 0:
            value = event.value if isinstance(event, yaml.ScalarEvent) else None
            self.key = yaml.ScalarNode("tag:yaml.org,2002:str", value) if value else None
            self.key_line = _line_of(event.start_mark)
        self.previous_end = _line_of(event.end_mark)
        self.items += 1


def _line_of(mark: Any) -> int:
    """A mark's 1-based line (1 when the parser gave none)."""
    return int(mark.line) + 1 if mark is not None else 1


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
