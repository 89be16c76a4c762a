"""The connections a long-running process keeps from one pass to the next, as a controller
keeps its clients: a pass's first request to a cluster does not repeat discovery (a dozen
requests a cluster) nor a new TLS handshake.

`Pool.connection` gives a kept connection when it was made the same way (the cluster, its
kubeconfig context and file, the file unchanged since: its size, its modification time and
its inode) and its last pass used it without a failure (`Connection.sound`); otherwise it
makes a new one. Credentials that expire (an exec plugin's token, a projected service-account
token) are refreshed by the client before each request, as on a new connection. A connection
that failed is closed at the end of its pass, so the next pass discovers again: a CRD whose
versions changed is found anew, as it would be on a fresh connection. With `watching`
(`dro run --watch-clusters`), a connection that lasted a pass keeps its lists current by
watches (`kube.watchcache`), so a pass that finds a cluster as it was sends it no LIST.
`Pool.release` keeps the connections the pass used and closes those of clusters it no longer
reaches.

The workers that reach the clusters in parallel are kept too (`Pool.workers`).

Called by `live`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reconciler import filestamp
from reconciler.kube.client import Connection

Made = tuple[str, str | None, str | None, tuple[int, int, int] | None, float]
"""How a connection was made: the cluster, its context, its kubeconfig file, that file's
(size, mtime_ns, inode), and the request timeout."""


class Pool:
    """The connections and the cluster workers of one process (the module's docstring). One
    pass uses it at a time."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Made, Connection]] = {}
        self._lock = threading.Lock()
        self._workers: ThreadPoolExecutor | None = None
        self._width = 0
        self.watching = False
        """Whether its connections keep their lists current by watches (`--watch-clusters`)."""
        weakref.finalize(self, _close_all, self._kept)  # a pool dropped unclosed

    def connection(
        self,
        cluster: str,
        *,
        context: str | None,
        kubeconfig: Path | None,
        timeout: float,
        make: Callable[[], Connection],
    ) -> Connection:
        """The kept connection to `cluster` when it was made the same way and is sound, else
        a new one from `make` (the kept one closed)."""
        made: Made = (cluster, context, str(kubeconfig), filestamp.stamp(kubeconfig), timeout)
        with self._lock:
            kept = self._kept.pop(cluster, None)
        if kept is not None and kept[0] == made and kept[1].sound:
            connection = kept[1]
            if self.watching:  # it lasted a pass: a connection that fails each pass never does
                connection.keep_watching()
            else:
                connection.stop_watching()
        else:
            if kept is not None:
                kept[1].close()
            connection = make()
        with self._lock:
            self._kept[cluster] = (made, connection)
        return connection

    def release(self, used: Collection[str]) -> None:
        """A pass ended: its sound connections are kept for the next one; the others, and
        those of clusters the pass did not use (removed, suspended, another member's), are
        closed."""
        with self._lock:
            dropped = [
                (name, kept[1])
                for name, kept in self._kept.items()
                if name not in used or not kept[1].sound
            ]
            for name, _ in dropped:
                del self._kept[name]
        for _, connection in dropped:
            connection.close()

    def workers(self, width: int) -> ThreadPoolExecutor:
        """The threads that reach the clusters, at most `width` at once; kept between calls
        and passes while `width` stays the same."""
        with self._lock:
            if self._workers is None or self._width != width:
                if self._workers is not None:
                    self._workers.shutdown(wait=False)
                self._workers = ThreadPoolExecutor(
                    max_workers=width, thread_name_prefix="dro-cluster"
                )
                self._width = width
            return self._workers

    def close(self) -> None:
        """Close every kept connection and stop the workers."""
        self.release(())
        with self._lock:
            workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown(wait=False)


def _close_all(kept: dict[str, tuple[Made, Connection]]) -> None:
    for _, connection in list(kept.values()):
        connection.close()
    kept.clear()
