"""Deliveries: the webhook deliveries seen lately, so that a replay starts no second pass.

GitHub names each delivery in `X-GitHub-Delivery` and keeps the name when a delivery is
redelivered; GitLab keeps `Idempotency-Key` across its retries. `server` claims a delivery's
id before it starts a pass for it, and releases the claim when starting the pass failed (503),
so that the sender's retry is served. Memory is bounded: at most `capacity` ids, each kept for
`ttl` seconds, the oldest dropped first. An id is remembered only after the request's signature
was checked, so an unauthenticated client cannot fill the memory or block a real delivery.

Called by `service.server`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

CAPACITY = 4096
TTL = 24 * 3600.0
"""A day: GitHub lets a person redeliver for three days; a pass a day later is harmless."""
MAX_ID_LENGTH = 128
"""Longer ids are kept as their SHA-256, so one entry stays small."""


class RecentDeliveries:
    """Delivery ids claimed within the last `ttl` seconds, at most `capacity` of them."""

    def __init__(
        self,
        capacity: int = CAPACITY,
        ttl: float = TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._expiry: OrderedDict[str, float] = OrderedDict()

    def claim(self, delivery: str) -> bool:
        """Remember `delivery`; False when it was already claimed (a replay)."""
        key = _key(delivery)
        with self._lock:
            now = self.clock()
            while self._expiry and next(iter(self._expiry.values())) <= now:
                self._expiry.popitem(last=False)
            if key in self._expiry:
                return False
            self._expiry[key] = now + self.ttl
            while len(self._expiry) > self.capacity:
                self._expiry.popitem(last=False)
            return True

    def release(self, delivery: str) -> None:
        """Forget `delivery`: handling it failed, and its retry must be served."""
        with self._lock:
            self._expiry.pop(_key(delivery), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._expiry)


def _key(delivery: str) -> str:
    if len(delivery) <= MAX_ID_LENGTH:
        return delivery
    return "sha256:" + hashlib.sha256(delivery.encode()).hexdigest()
