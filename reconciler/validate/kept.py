"""Values computed from one object each, kept between passes by the object's identity.

Called by `validate.dependencies` and `validate.memo`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(Generic[K, V]):
    """Values computed from one object each, kept by the object's identity. The object is
    kept with its value, so its id cannot be another object's while the entry lives; entries
    of objects no longer asked for are dropped once they outnumber the ones asked for."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[K, V]] = {}
        self._asked: list[K] = []
        self._runs: dict[int, tuple[Sequence[K], list[V]]] = {}

    def clear(self) -> None:
        """Forget every value (what they were computed against changed)."""
        self._by_id = {}
        self._runs = {}

    def runs(self, runs: Iterable[Sequence[K]], compute: Callable[[K], V]) -> list[V]:
        """`values` of the runs' items, one run after the other; a run that is the very
        list of a run of the last call gets that call's values whole."""
        result: list[V] = []
        now: dict[int, tuple[Sequence[K], list[V]]] = {}
        for run in runs:
            kept = self._runs.get(id(run))
            if kept is None or kept[0] is not run:
                kept = (run, self.values(run, compute))
            else:
                self.asked(run)
            now[id(run)] = kept
            result += kept[1]
        self._runs = now
        return result

    def values(
        self,
        items: Iterable[K],
        compute: Callable[[K], V],
        valid: Callable[[V], bool] | None = None,
    ) -> list[V]:
        """`compute(item)` of each item, from the kept value when there is one (and `valid`
        says it still holds)."""
        by_id, result = self._by_id, []
        for item in items:
            entry = by_id.get(id(item))
            if entry is None or entry[0] is not item or (valid is not None and not valid(entry[1])):
                entry = by_id[id(item)] = (item, compute(item))
            result.append(entry[1])
            self._asked.append(item)
        return result

    def asked(self, items: Iterable[K]) -> None:
        """Count items as asked for by this pass, their values known unchanged."""
        self._asked += items

    def prune(self, asked: int) -> None:
        """End of a pass that asked for `asked` items: drop the others when they are many."""
        if len(self._by_id) > 2 * asked + 64:
            self._by_id = {id(item): self._by_id[id(item)] for item in self._asked}
        self._asked = []
