"""A watch cache of a kept connection's LISTs: each list kept current by a WATCH.

A long-running `dro run` lists the same kinds of every cluster at every pass: Nodes, unfinished
Pods, the rollout kinds dro applied. Most passes find them as they were. A controller keeps
such lists in memory instead (client-go's reflector, Argo CD's cluster cache): it lists once,
then watches from the list's resourceVersion, and answers from memory.

`Watches` does that for a kept connection (`live.pool`). The first LIST of a kind (with its
namespace and selectors) seeds a `Reflector`, whose thread watches from that LIST's
resourceVersion with bookmarks, applies each event, watches again when the server ends the
stream, and lists again after a 410 Gone or a failure. A later LIST of the same kind is
answered from memory (`Connection.listing`), as a LIST then would answer it, when all of:

- the stream is up: the last watch was answered, and the cluster was heard from (an event, a
  bookmark or a new stream, every `WATCH_SECONDS` at least) within `FRESH` seconds. So an
  unreachable cluster stops being answered from memory within `FRESH` seconds, and its
  listing fails as before;
- no write of that kind through the connection came since the cache last caught up: after
  one, the next listing asks the server, and the cache answers again once its events reach
  that LIST's resourceVersion (read-your-writes: a pass sees what the last one applied).

The answer holds the objects in the apiserver's order (by namespace/name, as etcd keys sort),
and its digest is the reflector's own, new at each change: equal digests mean equal items.
Changes made by others reach a pass as far as they have been delivered, a few milliseconds
after they happen, as in every watch-based controller.

Called by `kube.client`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.kube.body import Body

WATCH_SECONDS = 30
"""A watch's `timeoutSeconds`: the server ends the stream after it and the reflector watches
again, which proves the cluster answers."""

FRESH = 2.5 * WATCH_SECONDS
"""A cache not heard from for this long answers nothing until its stream is up again."""

BACKOFF = (0.5, 30.0)
"""Seconds between attempts after a failure: the first, doubled up to the last."""

MAX_REFLECTORS = 4096
"""At most this many lists are watched in a process (each holds a thread and a connection);
past it, a list is asked of the server every time, as without a cache."""

ListKey = tuple[str | None, ...]
"""("list", kind, apiVersion, namespace, labelSelector, fieldSelector), as `Connection`
keys its reads."""

Opener = Callable[[str], Any]
"""Opens a watch from a resourceVersion: the streaming HTTP response (urllib3's)."""

Lister = Callable[[], Body]
"""Lists again, as `Connection.listing` does."""


_BUDGET = threading.BoundedSemaphore(MAX_REFLECTORS)
"""The reflectors the process may still start."""


class Gone(Exception):
    """The server no longer has the changes after the cache's resourceVersion (410)."""


class Reflector:
    """One list, kept current by a watch in its own thread (the module's docstring)."""

    def __init__(self, key: ListKey, listed: Body, opener: Opener, lister: Lister) -> None:
        self.key = key
        self._open = opener
        self._list = lister
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        self._version = 0
        self._generation = 0
        self._token = os.urandom(8)
        self._answer: tuple[int, Body] | None = None
        self._heard = time.monotonic()
        self._up = True
        self._needs: int | None = 0
        self._stop = threading.Event()
        self._stream: Any = None
        self.failure: str | None = None
        """The kind of the last failure (an exception's class name), for tests and logs."""
        self._seed(listed)
        self._thread = threading.Thread(target=self._run, name=f"dro-watch-{key[1]}", daemon=True)
        self._thread.start()

    # --- what the connection asks ----------------------------------------------------------

    def answer(self) -> Body | None:
        """The list from memory, or None when the server must be asked (the module's
        docstring says when)."""
        with self._lock:
            if not self._up or self._needs is None or self._version < self._needs:
                return None
            if time.monotonic() - self._heard > FRESH:
                return None
            if self._answer is None or self._answer[0] != self._generation:
                items = [self._objects[k] for k in sorted(self._objects)]
                digest = hashlib.blake2b(
                    self._token + self._generation.to_bytes(8, "big"), digest_size=20
                ).digest()
                self._answer = (self._generation, Body.kept(items, digest))
            return self._answer[1]

    def wrote(self) -> None:
        """A write of this kind went through the connection: ask the server next time."""
        with self._lock:
            self._needs = None

    def listed(self, body: Body) -> None:
        """The connection listed the server (`body`): answer again once caught up to it."""
        version = _version_of(body.document)
        with self._lock:
            self._needs = version if version is not None else None

    def close(self) -> None:
        """Stop watching (the thread ends at once; the open stream is cut)."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.shutdown()
            with contextlib.suppress(Exception):
                stream.release_conn()

    # --- the thread --------------------------------------------------------------------------

    def _seed(self, listed: Body) -> None:
        """Take a LIST's items and resourceVersion as the state (a 410 or a failure lists)."""
        objects = {_key(item): item for item in listed.items if isinstance(item, dict)}
        version = _version_of(listed.document)
        with self._lock:
            self._objects = objects
            self._version = version or 0
            self._generation += 1
            self._heard = time.monotonic()
            self._up = version is not None

    def _run(self) -> None:
        pause = BACKOFF[0]
        while not self._stop.is_set():
            try:
                if not self._up:
                    self._seed(self._list())
                    if not self._up:
                        return  # no resourceVersion to watch from: never answer from memory
                self._watch()
                pause = BACKOFF[0]
            except Gone:
                with self._lock:
                    self._up = False
            except Exception as error:  # the cluster or the stream failed: list again later
                with self._lock:
                    self._up = False
                if self._stop.is_set():
                    return
                self.failure = type(error).__name__
                if self._stop.wait(pause):
                    return
                pause = min(pause * 2, BACKOFF[1])

    def _watch(self) -> None:
        """One watch, from the cache's resourceVersion until the server ends it."""
        stream = self._open(str(self._version))
        self._stream = stream
        try:
            with self._lock:
                self._heard = time.monotonic()
            pending = b""
            for chunk in stream.stream(amt=None, decode_content=False):
                if self._stop.is_set():
                    return
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._event(json.loads(line))
        finally:
            self._stream = None
            with contextlib.suppress(Exception):
                stream.release_conn()

    def _event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError("a watch event without an object")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(str(obj.get("message", "")))
            raise ValueError(f"watch error {obj.get('code')}: {obj.get('reason')}")
        version = _version_of(obj)
        with self._lock:
            self._heard = time.monotonic()
            if version is not None:
                self._version = max(self._version, version)
            if kind in ("ADDED", "MODIFIED"):
                self._objects[_key(obj)] = obj
                self._generation += 1
            elif kind == "DELETED" and self._objects.pop(_key(obj), None) is not None:
                self._generation += 1


class Watches:
    """The reflectors of one connection, by list."""

    def __init__(self) -> None:
        self._reflectors: dict[ListKey, Reflector] = {}
        self._lock = threading.Lock()

    def answer(self, key: ListKey) -> Body | None:
        """The list `key` from memory, or None (ask the server)."""
        reflector = self._reflectors.get(key)
        return None if reflector is None else reflector.answer()

    def listed(self, key: ListKey, body: Body, opener: Opener, lister: Lister) -> None:
        """The server answered the list `key` with `body`: seed a reflector from it, or tell
        the one there is."""
        with self._lock:
            reflector = self._reflectors.get(key)
            if reflector is not None:
                reflector.listed(body)
                return
            if _version_of(body.document) is None or not _BUDGET.acquire(blocking=False):
                return
            self._reflectors[key] = Reflector(key, body, opener, lister)

    def wrote(self, kind: str) -> None:
        """A write of `kind` went through the connection."""
        with self._lock:
            for key, reflector in self._reflectors.items():
                if key[1] == kind:
                    reflector.wrote()

    def close(self) -> None:
        """Stop every reflector."""
        with self._lock:
            reflectors, self._reflectors = list(self._reflectors.values()), {}
        for reflector in reflectors:
            reflector.close()
            _BUDGET.release()


def _key(obj: Mapping[str, Any]) -> str:
    """Where etcd keeps an object (namespace/name, or name), which orders a LIST."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def _version_of(document: Mapping[str, Any]) -> int | None:
    """A document's `metadata.resourceVersion` as a number; None when it has none (or not
    a number: the cache then never answers)."""
    meta = document.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    try:
        return int(version) if isinstance(version, str) else None
    except ValueError:
        return None
