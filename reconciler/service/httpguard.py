"""HTTP guard: the connection handling under `server`, hardened against hostile clients.

The standard library's `ThreadingHTTPServer` trusts its clients: no deadline, one thread per
connection without a cap. This module keeps its request parsing and adds what Go's
`net/http` (`ReadHeaderTimeout`, `ReadTimeout`) and Kubernetes' API server (a cap on requests in
flight that never starves the health probes) add:

- **Deadlines, not idle timeouts.** A client has `header_timeout` from the moment it is
  accepted to send its request line and headers, and `body_timeout` from then on to send the
  body. Each read waits only for what is left of its deadline, so a client that sends one byte
  per second is cut off on time (408, then the connection is closed). Writing the answer has
  `body_timeout` too.
- **Bounded headers.** At most `max_header_bytes` are read before the headers end (431).
- **Bounded connections.** At most `max_connections` are open at once. A new connection
  beyond that closes the one that has waited longest for its headers: that one is the likely
  slow client, and a probe, whose headers arrive in one packet, gets through. Only when every
  connection is past its headers is the new one answered 503 at once.
- **A client that goes away** (reset, closed, timed out) is one `http_client_gone` event with
  what it was doing, never a traceback.
- **An answer sent before the body was read** (400, 413, 503, …) is followed by a short,
  bounded drain before the close, as Go does, so the client reads the answer instead of a reset.

`server` subclasses `GuardedHandler` with its endpoints; `GuardedServer` runs them.

Called by `cli.run` and `service.server`.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog

from reconciler.service import httpbody

log = structlog.get_logger("dro")

DRAIN_BYTES = 256 * 1024
"""After an early answer, at most this much of the unread body is read and dropped."""
DRAIN_SECONDS = 0.5
"""… for at most this long, before the connection is closed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What one connection may take from the server."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 128
    max_header_bytes: int = 64 * 1024
    max_body: int = 25 * 1024 * 1024
    """GitHub and GitLab cap a webhook payload at 25 MB."""


class DeadlinePassed(Exception):
    """The client did not send its headers or its body in time."""


class HeadersTooLarge(Exception):
    """The client sent more header bytes than `Limits.max_header_bytes`."""


class _DeadlineReader(io.RawIOBase):
    """Reads from a socket, each read waiting at most for what is left of the deadline of
    the current phase; in the header phase, up to a byte budget."""

    def __init__(self, connection: socket.socket, deadline: float, budget: int) -> None:
        self.connection = connection
        self.phase = "headers"
        self.deadline = deadline
        self.budget: int | None = budget
        self.received = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.budget is not None and self.budget <= 0:
            raise HeadersTooLarge()
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed(self.phase)
        self.connection.settimeout(left)
        try:
            count = self.connection.recv_into(buffer)
        except TimeoutError:
            raise DeadlinePassed(self.phase) from None
        if self.budget is not None:
            self.budget -= count
            if count == 0 and self.received:
                # the library would take what came as the whole header: it is not
                raise EOFError("the client closed the connection before the end of its headers")
        self.received += count
        return count

    def begin(self, phase: str, seconds: float) -> None:
        """Headers are read: the next reads belong to `phase`, within `seconds`."""
        self.phase, self.deadline, self.budget = phase, time.monotonic() + seconds, None


class _TimedWriter(io.RawIOBase):
    """Writes to a socket, each write allowed `seconds` in all."""

    def __init__(self, connection: socket.socket, seconds: float) -> None:
        self.connection = connection
        self.seconds = seconds

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.connection.settimeout(self.seconds)
        try:
            self.connection.sendall(data)
        except TimeoutError:
            # not a TimeoutError any more, which the library would log as a bad request
            raise ConnectionAbortedError(
                f"the client did not take the answer within {self.seconds:g}s"
            ) from None
        return len(data)


class Connections:
    """The open connections of one server: those still sending their headers, oldest first,
    and those past them."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._waiting: dict[socket.socket, float] = {}
        self._past_headers: set[socket.socket] = set()

    def admit(self, connection: socket.socket) -> bool:
        """Take a new connection, closing the one waiting longest for its headers when the
        cap is reached; False when every open connection is past its headers."""
        with self._lock:
            if len(self._waiting) + len(self._past_headers) >= self.cap:
                if not self._waiting:
                    return False
                oldest = next(iter(self._waiting))
                waited = time.monotonic() - self._waiting.pop(oldest)
                _hang_up(oldest)
                log.warning(
                    "http_connection_evicted",
                    reason=f"{self.cap} connections open: closed the one waiting longest "
                    f"for its headers ({waited:.1f}s)",
                )
            self._waiting[connection] = time.monotonic()
            return True

    def headers_read(self, connection: socket.socket) -> None:
        """The connection sent its headers: it can no longer be evicted."""
        with self._lock:
            if self._waiting.pop(connection, None) is not None:
                self._past_headers.add(connection)

    def release(self, connection: socket.socket) -> None:
        """The connection is done."""
        with self._lock:
            self._waiting.pop(connection, None)
            self._past_headers.discard(connection)

    def count(self) -> int:
        """How many connections are open."""
        with self._lock:
            return len(self._waiting) + len(self._past_headers)


def _hang_up(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its own thread
        connection.shutdown(socket.SHUT_RDWR)  # its thread's read returns at once


class GuardedServer(ThreadingHTTPServer):
    """A threading HTTP server that enforces `Limits` on every connection."""

    daemon_threads = True
    request_queue_size = 128
    """The accept queue: a burst waits here for the accept loop, not refused by the OS."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: Callable[..., BaseHTTPRequestHandler],
        limits: Limits,
    ) -> None:
        self.limits = limits
        self.connections = Connections(limits.max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Admit the connection (or answer 503 at once), then serve it on its own thread."""
        if not self.connections.admit(request):
            log.warning("http_busy", reason=f"{self.limits.max_connections} requests in flight")
            _answer_busy(request)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection, then close it."""
        self.connections.release(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A bug in a handler: one event with its traceback, not a print to stderr."""
        log.exception("http_handler_failed", client=_client(client_address))


def _answer_busy(connection: socket.socket) -> None:
    text = b"too many connections; retry later\n"
    head = (
        "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nRetry-After: 1\r\n"
        f"Connection: close\r\nContent-Length: {len(text)}\r\n\r\n"
    )
    try:
        connection.settimeout(0.5)
        connection.sendall(head.encode() + text)
    except OSError:
        pass


def _client(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


class GuardedHandler(BaseHTTPRequestHandler):
    """Request parsing of the standard library, within `Limits`; subclasses add `do_GET`
    and the like, and read a body with `read_body`."""

    server: GuardedServer
    server_version = "dro"
    framing: httpbody.Framing = httpbody.NO_BODY

    def setup(self) -> None:
        """Readers and writers with deadlines, instead of the library's unbounded ones."""
        limits = self.server.limits
        self.connection = self.request
        self._body_read = False
        self._reader = _DeadlineReader(
            self.connection, time.monotonic() + limits.header_timeout, limits.max_header_bytes
        )
        self.rfile = io.BufferedReader(self._reader)
        self.wfile = _TimedWriter(self.connection, limits.body_timeout)  # type: ignore[assignment]

    def handle(self) -> None:
        """One request; a client that times out or goes away is one event, no traceback."""
        try:
            super().handle()
        except DeadlinePassed as late:
            self._gone("timeout", f"no complete {late} within the deadline")
            self.refuse(408, f"the request {late} took too long\n", drain=False)
        except HeadersTooLarge:
            self._gone("refused", "headers too large")
            self.refuse(431, "the request headers are too large\n", drain=False)
        except (OSError, EOFError) as error:
            self._gone("disconnected", f"{type(error).__name__}: {error}")

    def parse_request(self) -> bool:
        """The library's parsing, then the body's framing; refuses a malformed one."""
        if not super().parse_request():
            return False
        self.close_connection = True  # one request per connection: nothing is kept open
        try:
            self.framing = httpbody.framing(self.headers, self.server.limits.max_body)
        except httpbody.Refused as refused:
            self.refuse(refused.status, refused.reason + "\n")
            return False
        self.server.connections.headers_read(self.connection)
        self._reader.begin("body", self.server.limits.body_timeout)
        return True

    def read_body(self) -> bytes:
        """The request's body, within the limits; raises `httpbody.Refused` (answer it with
        `refuse`), or `EOFError`/`DeadlinePassed` when the client stops (handled above)."""
        body = httpbody.read(self.rfile, self.framing, self.server.limits.max_body)
        self._body_read = True
        return body

    def answer(self, status: int, body: str | bytes, kind: str = "text/plain") -> None:
        """Send a complete response."""
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        if status == 503:
            self.send_header("Retry-After", "5")
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, status: int, reason: str, *, drain: bool = True) -> None:
        """Answer without reading the body, then drain a little of it so that the client
        sees the answer rather than a reset."""
        log.info("http_refused", status=status, reason=reason.strip(), **self._where())
        try:
            if not getattr(self, "request_version", None):
                self.request_version = "HTTP/1.0"  # the request line was never read
            self.answer(status, reason)
            if drain and not self._body_read and not self.framing.empty:
                self._drain()
        except OSError:
            pass
        self.close_connection = True

    def _drain(self) -> None:
        self.connection.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + DRAIN_SECONDS
        scratch = bytearray(16384)
        left = DRAIN_BYTES
        while left > 0 and (wait := deadline - time.monotonic()) > 0:
            self.connection.settimeout(wait)
            try:
                count = self.connection.recv_into(scratch)
            except OSError:
                return
            if not count:
                return
            left -= count

    def _gone(self, outcome: str, what: str) -> None:
        log.info("http_client_gone", outcome=outcome, detail=what, **self._where())

    def _where(self) -> dict[str, str]:
        where = {"client": _client(self.client_address), "phase": self._reader.phase}
        command = getattr(self, "command", None)
        if command:
            where["request"] = f"{command} {self.path.split('?', 1)[0]}"[:200]
        return where

    def log_error(self, format: str, *args: Any) -> None:
        """The library's own errors (a malformed request line, 431) as one event."""
        log.info("http_bad_request", detail=(format % args)[:300], **self._where())

    def version_string(self) -> str:
        """`Server: dro`, without the Python version a scanner would look for."""
        return self.server_version

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """No access log: probes every few seconds would flood it; events say enough."""
        return None

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: probes every few seconds would flood it; events say enough."""
        return None
