"""Typed per-pass memos: one small table per purpose, each with its own key and value types.

Many of a pass's results depend only on a placement, or on an array the pass memoised itself,
and are worked out once. Each purpose declares a `Slot[K, V]` beside the code that fills it (a
filter, a scorer, the framework's static phase); `Memos` holds the tables of one pass, and
`slot.of(memos)` is that purpose's `dict[K, V]`. Keys are values (a flag, a demand's bytes) or
the `Ref` of an object the pass holds for its whole length. Built by `facts.Facts`, read
through `framework.Subject.memos` by the framework and the plugins.

Called by 8 modules, among them `schedule.express`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, NewType, TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Ref = NewType("Ref", int)
"""The identity of an object held for the whole pass, as a memo key."""

ref = cast("Callable[[object], Ref]", id)
"""The `Ref` of an object the pass holds for its whole length (a placement of the spec, an
array another memo keeps), so that no other object can take its identity meanwhile. `id`
itself, typed: a memo lookup sits on the hot path of every workload."""


class Memos:
    """The memo tables of one pass, one per `Slot`."""

    __slots__ = ("_tables",)

    def __init__(self) -> None:
        self._tables: dict[object, dict[Hashable, object]] = {}

    def table(self, slot: object) -> dict[Hashable, object]:
        """The table of `slot`, created empty on first use (`Slot.of` gives it typed)."""
        found = self._tables.get(slot)
        if found is None:
            found = self._tables[slot] = {}
        return found


class Slot(Generic[K, V]):
    """One purpose's memo: declared once per module, with its key and value types."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name
        """What is memoised, for a reader."""

    def of(self, memos: Memos) -> dict[K, V]:
        """This purpose's table in one pass."""
        return cast("dict[K, V]", memos.table(self))

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"
