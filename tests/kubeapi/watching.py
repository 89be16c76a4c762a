"""WATCH on a collection: its changes from a resourceVersion on, as the apiserver streams them.

`GET <collection>?watch=true` answers 200 and then one JSON event per line, each
`{"type": ..., "object": ...}`, until `timeoutSeconds` pass or the server stops:

- without `resourceVersion`, or with "0", first an ADDED event for every object there is, then
  the changes after them;
- with a resourceVersion, the changes after it; one older than the history keeps gets a single
  ERROR event holding a 410 Expired Status ("too old resource version"), and the stream ends;
- `labelSelector` and `fieldSelector` filter the changes as the apiserver does: an object that
  comes to match is ADDED, one that stops matching is DELETED;
- `allowWatchBookmarks=true` adds BOOKMARK events, an object with the apiVersion, kind and
  resourceVersion up to which every change has been sent, each `bookmark_interval` seconds
  while the store moves.

Called by `routes`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from .errors import bad_request
from .history import Event, Gone
from .listing import selected
from .resources import ResourceType
from .selectors import field_selector, label_selector
from .store import Store
from .targets import Target

WAIT = 0.25
"""Seconds between looks at the stopping flag and the client's connection, when idle."""

DEFAULT_TIMEOUT = 1800.0
"""A watch without `timeoutSeconds` ends after this long (the apiserver picks 30–60 minutes)."""

Stream = Iterator[dict[str, Any] | None]
"""Events, and None each `WAIT` while idle (the server then checks the connection)."""


class Watch:
    """One watch's settings, parsed from its query."""

    def __init__(self, target: Target, query: dict[str, str]) -> None:
        self.rtype = target.rtype
        self.namespace = target.namespace or None
        version = query.get("resourceVersion", "")
        if version not in ("", "0") and not version.isdigit():
            raise bad_request(f"invalid resourceVersion {version!r}")
        self.since = int(version) if version not in ("", "0") else None
        seconds = query.get("timeoutSeconds", "")
        if seconds and not seconds.isdigit():
            raise bad_request(f"invalid timeoutSeconds {seconds!r}")
        self.timeout = float(seconds) if seconds else DEFAULT_TIMEOUT
        self.bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        self.matches = _matcher(self.rtype, query)


def watch_objects(
    store: Store,
    target: Target,
    query: dict[str, str],
    stopping: Callable[[], bool],
    bookmark_interval: float,
) -> Stream:
    """The event stream of one WATCH request (its query is checked before the first event)."""
    watch = Watch(target, query)
    return _stream(store, watch, stopping, bookmark_interval)


def _stream(
    store: Store, watch: Watch, stopping: Callable[[], bool], bookmark_interval: float
) -> Stream:
    deadline = time.monotonic() + watch.timeout
    with store.lock:
        if watch.since is None:
            cursor = int(store.revision)
            initial = selected(store, Target(watch.rtype, watch.namespace or ""), {})
        else:
            cursor, initial = watch.since, []
    for obj in initial:
        if watch.matches(obj):
            yield {"type": "ADDED", "object": obj}
    marked, marked_at = cursor, time.monotonic()
    while not stopping() and time.monotonic() < deadline:
        with store.lock:
            try:
                events = store.history.after(cursor)
                if not events:
                    pause = min(WAIT, bookmark_interval) if watch.bookmarks else WAIT
                    store.history.changed.wait(min(pause, max(0.0, deadline - time.monotonic())))
                    events = store.history.after(cursor)
            except Gone as gone:
                yield {"type": "ERROR", "object": _expired(str(gone))}
                return
            sent = [_served(store, watch, event) for event in events]
            if events:
                cursor = events[-1].revision
            cursor = max(cursor, int(store.revision))
        idle = True
        for event in sent:
            if event is not None:
                idle = False
                yield event
        now = time.monotonic()
        if watch.bookmarks and cursor > marked and now - marked_at >= bookmark_interval:
            marked, marked_at, idle = cursor, now, False
            yield _bookmark(watch.rtype, cursor)
        if idle:
            yield None


def _served(store: Store, watch: Watch, event: Event) -> dict[str, Any] | None:
    """The event as this watch sees it: None for another resource, namespace or selection."""
    group, plural, namespace, _ = event.key
    rtype = watch.rtype
    if (group, plural) != (rtype.group, rtype.plural):
        return None
    if watch.namespace is not None and rtype.namespaced and namespace != watch.namespace:
        return None
    now = store.as_served(rtype, event.obj)
    was = watch.matches(store.as_served(rtype, event.before)) if event.before else False
    if event.kind == "DELETED":
        return {"type": "DELETED", "object": now} if was else None
    if not watch.matches(now):
        return None if not was else {"type": "DELETED", "object": now}
    return {"type": "MODIFIED" if was else "ADDED", "object": now}


def _matcher(rtype: ResourceType, query: dict[str, str]) -> Callable[[dict[str, Any]], bool]:
    """Whether an object passes the watch's label and field selectors."""
    tests: list[Callable[[dict[str, Any]], bool]] = []
    if query.get("labelSelector"):
        tests.append(label_selector(query["labelSelector"]))
    if query.get("fieldSelector"):
        tests.append(field_selector(query["fieldSelector"], rtype.kind))
    return lambda obj: all(test(obj) for test in tests)


def _bookmark(rtype: ResourceType, revision: int) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {
            "apiVersion": rtype.api_version,
            "kind": rtype.kind,
            "metadata": {"resourceVersion": str(revision)},
        },
    }


def _expired(message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Expired",
        "code": 410,
    }
