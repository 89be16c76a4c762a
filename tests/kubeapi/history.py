"""The store's recent changes, for WATCH: each write as an event under its resourceVersion.

The apiserver serves a watch from its watch cache and etcd's history. Both are bounded: etcd
compacts its history (every 5 minutes by default), and a watch from a resourceVersion older
than what is kept fails with 410 Gone ("too old resource version"), after which a client
lists again. `History` keeps the last `capacity` events and can be compacted at will, so
tests can make that happen.

Called by `store`.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

ObjectKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class Event:
    """One change: its resourceVersion, ADDED, MODIFIED or DELETED, the object's storage
    key, the object after it (the last state, for DELETED), and what selectors read of it
    before (`store.selectable`; None if new)."""

    revision: int
    kind: str
    key: ObjectKey
    obj: dict[str, Any]
    before: dict[str, Any] | None


class Gone(Exception):
    """A watch asked for changes older than the history keeps."""

    def __init__(self, asked: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {asked} ({oldest})")
        self.asked = asked
        self.oldest = oldest


class History:
    """The last events of a store; shares the store's lock (every call holds it)."""

    def __init__(self, lock: threading.RLock, capacity: int = 10_000) -> None:
        self.changed = threading.Condition(lock)
        """Notified after each recorded event (and on `wake`)."""
        self._events: deque[Event] = deque(maxlen=capacity)
        self._compacted = 0
        """Changes at or below this resourceVersion are no longer kept."""

    def record(self, event: Event) -> None:
        """Keep `event` (the oldest one may fall out) and wake the watches."""
        events = self._events
        if events.maxlen is not None and len(events) == events.maxlen:
            self._compacted = events[0].revision
        events.append(event)
        self.changed.notify_all()

    def compact(self, revision: int) -> None:
        """Forget every change at or below `revision`, as etcd's compaction does."""
        events = self._events
        while events and events[0].revision <= revision:
            events.popleft()
        self._compacted = max(self._compacted, revision)

    def after(self, revision: int) -> list[Event]:
        """The events after `revision`, oldest first; Gone if some may be forgotten."""
        if revision < self._compacted:
            raise Gone(revision, self._compacted + 1)
        found: list[Event] = []
        for event in reversed(self._events):
            if event.revision <= revision:
                break
            found.append(event)
        found.reverse()
        return found

    def wake(self) -> None:
        """Wake every waiting watch (the server is stopping)."""
        self.changed.notify_all()
