"""`KubeAPI`: one emulated cluster, its HTTP endpoint, seeding helpers, counters and faults."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

import yaml

from .errors import ApiError
from .faults import Faults, Hold
from .objects import ObjectsView
from .resources import ResourceRegistry
from .routes import MUTATING_METHODS, ApiRequest, Router
from .server import HttpResponse, Listener
from .store import Store


class RequestRecord(NamedTuple):
    """One request the server received: method, path (no query) and query parameters."""

    method: str
    path: str
    query: dict[str, str]


class Stamped(NamedTuple):
    """A request as the log of clients has it: when it arrived (`time.monotonic`), its
    method and path, and the bearer token it carried (which client sent it)."""

    at: float
    method: str
    path: str
    token: str


class KubeAPI:
    """An in-process Kubernetes API server emulator serving JSON over HTTP on 127.0.0.1."""

    def __init__(
        self,
        nodes: int = 0,
        node_cpu: str = "8",
        node_memory: str = "32Gi",
        port: int = 0,
        crd_establish_delay: float = 0.0,
        verbose: bool = False,
        rollouts: bool = False,
    ) -> None:
        self.registry = ResourceRegistry()
        self.store = Store(self.registry, crd_establish_delay, rollouts)
        self.objects = ObjectsView(self.store)
        self.faults = Faults()
        self._listener = Listener(self._answer, port, verbose)
        self._router = Router(self.store, self.registry, f"127.0.0.1:{port}")
        self._router.stopping = self._stopping_now
        self._records_lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._writes: list[RequestRecord] = []
        self._changes: list[RequestRecord] = []
        self._stamped: list[Stamped] = []
        self._stopping = threading.Event()
        for index in range(nodes):
            self.objects.add_node(f"node-{index}", cpu=node_cpu, memory=node_memory)

    # Lifecycle -------------------------------------------------------------------------

    def start(self) -> KubeAPI:
        """Listen on 127.0.0.1 (a free port unless one was given) and serve in a daemon thread."""
        self._stopping.clear()
        self._listener.listen()
        self._router.server_address = f"127.0.0.1:{self.port}"
        return self

    def stop(self) -> None:
        """Stop serving and free the port (pending delays, holds and watches are cut short)."""
        self._stopping.set()
        with self.store.lock:
            self.store.history.wake()
        self.faults.clear()
        self._listener.close()
        self.store.stop_timers()

    def _stopping_now(self) -> bool:
        return self._stopping.is_set()

    def compact(self) -> None:
        """Forget the store's history up to now, as etcd's compaction does: a watch from an
        older resourceVersion gets 410 Gone."""
        with self.store.lock:
            self.store.history.compact(int(self.store.revision))

    @property
    def bookmark_interval(self) -> float:
        """Seconds between a watch's BOOKMARK events while the store moves (1 s)."""
        return self._router.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float) -> None:
        self._router.bookmark_interval = seconds

    def refuse(self) -> None:
        """Close the listening socket and open connections: new connections are refused.

        The port is kept in `self.port` for `accept()`; another process could take it
        meanwhile, in which case `accept()` raises OSError.
        """
        self._listener.close()

    def accept(self) -> None:
        """Listen again on the same port after `refuse()`."""
        self._listener.listen()

    def __enter__(self) -> KubeAPI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """Return the TCP port (0 before the first start with port=0)."""
        return self._listener.port

    @property
    def url(self) -> str:
        """Return the base URL, e.g. `http://127.0.0.1:34567`."""
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(
        self, path: str | Path, context: str = "c1", token: str = "kubeapi-emulator-token"
    ) -> Path:
        """Write (or merge into) a kubeconfig with a token user for this server; return its path.

        An existing file keeps its other contexts, so several emulators can share one file;
        `current-context` is set only if the file has none. A distinct `token` per client
        tells their requests apart in `stamped`.
        """
        target = Path(path)
        config: dict[str, Any] = {}
        if target.exists():
            config = yaml.safe_load(target.read_text()) or {}
        config.setdefault("apiVersion", "v1")
        config.setdefault("kind", "Config")
        config.setdefault("preferences", {})
        user = f"{context}-user"
        entries = {
            "clusters": {"name": context, "cluster": {"server": self.url}},
            "users": {"name": user, "user": {"token": token}},
            "contexts": {"name": context, "context": {"cluster": context, "user": user}},
        }
        for section, entry in entries.items():
            kept = [e for e in config.get(section) or [] if e.get("name") != entry["name"]]
            config[section] = [*kept, entry]
        config["current-context"] = config.get("current-context") or context
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    # Counters ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """Return every request received, oldest first."""
        with self._records_lock:
            return list(self._requests)

    @property
    def writes(self) -> list[RequestRecord]:
        """Return every non-dry-run POST, PUT, PATCH or DELETE received (even failed ones)."""
        with self._records_lock:
            return list(self._writes)

    @property
    def changes(self) -> list[RequestRecord]:
        """Return the requests that actually changed stored state."""
        with self._records_lock:
            return list(self._changes)

    @property
    def stamped(self) -> list[Stamped]:
        """Every request received, with when and from which token (`Stamped`), oldest first."""
        with self._records_lock:
            return list(self._stamped)

    def reset_counters(self) -> None:
        """Forget recorded requests, writes and changes."""
        with self._records_lock:
            self._requests.clear()
            self._writes.clear()
            self._changes.clear()
            self._stamped.clear()

    # Faults and seeding shortcuts -----------------------------------------------------------

    def fail_next(
        self, count: int = 1, status: int = 500, method: str | None = None, path_prefix: str = ""
    ) -> None:
        """Answer the next `count` matching requests with `status` (InternalError for 500)."""
        self.faults.fail_next(count, status, method, path_prefix)

    def delay(self, seconds: float, method: str | None = None, path_prefix: str = "") -> None:
        """Hold every matching request for `seconds` before answering (0 turns it off)."""
        self.faults.delay(seconds, method, path_prefix)

    def hold(self, method: str, path_prefix: str) -> Hold:
        """Hold the next matching write until the test releases it (see `Faults.hold`)."""
        return self.faults.hold(method, path_prefix)

    def get(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        """Return a stored object (see `ObjectsView.get`)."""
        return self.objects.get(group, version, plural, namespace, name)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object directly (see `ObjectsView.put`)."""
        return self.objects.put(obj)

    def set_status(
        self,
        group: str,
        version: str,
        plural: str,
        namespace: str,
        name: str,
        status: dict[str, Any],
    ) -> dict[str, Any]:
        """Replace an object's status directly (see `ObjectsView.set_status`)."""
        return self.objects.set_status(group, version, plural, namespace, name, status)

    def add_pod(
        self,
        namespace: str,
        name: str,
        node: str | None,
        requests: Mapping[str, str] | None = None,
        phase: str = "Running",
        labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Seed a Pod bound to `node` (see `ObjectsView.add_pod`)."""
        return self.objects.add_pod(namespace, name, node, requests, phase, labels)

    def add_node(
        self, name: str, cpu: str = "8", memory: str = "32Gi", **options: Any
    ) -> dict[str, Any]:
        """Seed a Node (see `ObjectsView.add_node`)."""
        return self.objects.add_node(name, cpu=cpu, memory=memory, **options)

    # Request handling -----------------------------------------------------------------------

    def _answer(
        self, method: str, raw_path: str, headers: Mapping[str, str], body: bytes
    ) -> HttpResponse:
        """Record, delay, maybe fail, then route one request."""
        split = urlsplit(raw_path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        record = RequestRecord(method, split.path, query)
        request = ApiRequest(method, split.path, query, headers, body)
        with self._records_lock:
            self._requests.append(record)
            token = headers.get("authorization") or headers.get("Authorization") or ""
            stamp = Stamped(time.monotonic(), method, split.path, token.split(" ")[-1])
            self._stamped.append(stamp)
            if method in MUTATING_METHODS and query.get("dryRun") != "All":
                self._writes.append(record)
        pause = self.faults.delay_for(method, split.path)
        if pause and self._stopping.wait(pause):
            return HttpResponse(503, ApiError(503, "server is shutting down").status_body())
        held = self.faults.hold_for(method, split.path, query.get("dryRun") == "All")
        if held is not None:
            held.arrived.set()
            held.released.wait()
        try:
            return self._handle(method, split.path, record, request)
        finally:
            if held is not None:
                held.answered.set()

    def _handle(
        self, method: str, path: str, record: RequestRecord, request: ApiRequest
    ) -> HttpResponse:
        """Fail as injected, or route one request."""
        failure = self.faults.injected_failure(method, path)
        if failure is not None:
            return HttpResponse(failure.code, failure.status_body())
        try:
            outcome = self._router.route(request)
        except ApiError as error:
            return HttpResponse(error.code, error.status_body())
        except Exception as error:  # a bug in the emulator: say so, answer like a real 500
            traceback.print_exc()
            detail = "".join(traceback.format_exception_only(error)).strip()
            return HttpResponse(500, ApiError(500, f"emulator error: {detail}").status_body())
        if outcome.changed:
            with self._records_lock:
                self._changes.append(record)
        return HttpResponse(outcome.code, outcome.body, outcome.events)
