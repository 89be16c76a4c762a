"""Garbage collection between the passes of `dro run`.

What survives a pass is mostly what the next pass reads: the parse and read-back caches, the
render memo, the tree writers (`pipeline.Warm`), millions of objects at 10,000 workloads.
Python's cyclic collector scans all of them again in each full collection, about a second a
pass at that size. After a pass `between_passes` freezes them (`gc.freeze`), so a pass's
collections scan only what that pass allocates. Frozen objects are still freed by reference
counting when dropped; only garbage in reference cycles among them would stay, so every
`FULL_EVERY` passes they are unfrozen and collected once.

Called by `service`.
"""

from __future__ import annotations

import gc

FULL_EVERY = 30
"""Passes between two full collections of what earlier passes left."""


def between_passes(passes: int) -> None:
    """After the `passes`-th pass of the process: collect everything once every `FULL_EVERY`
    passes, then freeze what is left."""
    if passes % FULL_EVERY == 0:
        gc.unfreeze()
        gc.collect()
    gc.freeze()
