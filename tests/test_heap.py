"""`service.heap`: what a pass leaves is frozen out of the cyclic collector's scans, and
collected in full every `FULL_EVERY` passes, so cyclic garbage among it is not kept."""

from __future__ import annotations

import gc
import weakref

from reconciler.service import heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_a_pass_leaves_its_survivors_frozen_and_a_full_pass_frees_frozen_cycles() -> None:
    try:
        node = _Node()
        gone = weakref.ref(node)
        heap.between_passes(1)
        assert gc.get_freeze_count() > 0
        del node
        gc.collect()
        assert gone() is not None  # frozen: a collection does not look at it
        heap.between_passes(heap.FULL_EVERY)
        assert gone() is None
    finally:
        gc.unfreeze()
