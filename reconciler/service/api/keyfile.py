"""Token keys re-read when their file changes: a rotated signing key is taken up without a
restart, and a withdrawn one stops verifying.

Identity providers rotate the keys that sign their tokens (Dex every six hours by default), and
the kubelet swaps a mounted Secret's or ConfigMap's file for the new one behind the same path.
`KeyFile.current` looks at the file at most every `RECHECK` seconds, and `KeyFile.refresh` at
once (at most every `FORCED` seconds) when a token names a key the set lacks, as OIDC clients
do on an unknown `kid`. When the file's size, modification time or inode changed, it is read
and parsed again. A file that is gone, unreadable or no longer a valid key set leaves the keys
in force and says so once (`api_keys_not_reloaded`, with the parser's reason, never the key
material) until the file changes again; a new set is logged as `api_keys_reloaded`.

Called by `service.api.auth`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

import structlog

from reconciler import filestamp
from reconciler.errors import UsageError

log = structlog.get_logger("dro")

K = TypeVar("K")
RECHECK = 5.0
"""Seconds between two looks at the file."""
FORCED = 1.0
"""Seconds between two looks asked for by a token naming an unknown key."""

GONE = "gone"


class KeyFile(Generic[K]):
    """The keys parsed from one file, kept current with it (the module's docstring)."""

    def __init__(
        self,
        path: Path,
        parse: Callable[[bytes], K],
        *,
        flag: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Read and parse the file now: a file that cannot be read or parsed is a
        UsageError naming `flag`, as at start-up."""
        self.path = path
        self.flag = flag
        self._parse = parse
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp = filestamp.stamp(path)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise UsageError(f"{flag} {path}: {error.strerror or error}") from None
        self._keys = parse(data)
        self._looked = clock()
        self._forced = float("-inf")
        self._refused: object = None
        """The file as last refused (its stamp, or `GONE`), so a refusal is said once."""

    def current(self) -> K:
        """The keys in force, the file looked at again when `RECHECK` seconds have passed."""
        with self._lock:
            if self._clock() - self._looked >= RECHECK:
                self._look()
            return self._keys

    def refresh(self) -> K:
        """The keys in force, the file looked at now unless it was less than `FORCED`
        seconds ago (a token named a key the set lacks)."""
        with self._lock:
            if self._clock() - self._forced >= FORCED:
                self._forced = self._clock()
                self._look()
            return self._keys

    def _look(self) -> None:
        self._looked = self._clock()
        stamp = filestamp.stamp(self.path)
        if stamp == self._stamp:
            self._refused = None
            return
        seen: object = GONE if stamp is None else stamp
        if seen == self._refused:
            return  # refused already, and said so
        try:
            if stamp is None:
                raise UsageError(f"{self.flag} {self.path}: the file is gone")
            keys = self._parse(self.path.read_bytes())
        except (UsageError, OSError) as error:
            reason = str(error) if isinstance(error, UsageError) else str(error.strerror or error)
            log.warning("api_keys_not_reloaded", file=str(self.path), reason=reason)
            self._refused = seen
            return
        self._keys, self._stamp, self._refused = keys, stamp, None
        log.info("api_keys_reloaded", file=str(self.path))
