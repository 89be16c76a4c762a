"""Guarded: uvicorn's HTTP/1.1 protocol (h11), held to `Limits` against hostile clients.

uvicorn parses requests with h11 and bounds the size of what it buffers before the headers end
(`h11_max_incomplete_event_size`), but it starts no timer before a request's headers arrive,
answers every malformed request 400 (431 and 501 included), and its `limit_concurrency` answers
503 to everyone once slow clients hold the connections. `GuardedProtocol` adds what Go's
`net/http` (`ReadHeaderTimeout`, `ReadTimeout`) and Kubernetes' API server (a cap on requests in
flight that never starves the health probes) add:

- **Deadlines, not idle timeouts.** A client has `header_timeout` from the moment it is
  accepted (or from the end of the previous answer on a kept-alive connection) to send its
  request line and headers, and `body_timeout` from then on to send the body: a client that
  sends one byte per second is cut off on time (408, then the connection is closed). Taking
  the answer has `body_timeout` too, counted while the answer waits for the client.
- **Bounded headers.** At most `max_header_bytes` are buffered before the headers end (431).
  A malformed request gets h11's status (400, or 501 for an unknown transfer coding; 400 when
  chunked is not the last coding, as RFC 9112 §6.3 asks).
- **Bounded connections.** At most `max_connections` are open at once. A new connection
  beyond that closes the one that has waited longest for its headers: that one is the likely
  slow client, and a probe, whose headers arrive in one packet, gets through. Only when every
  connection is past its headers is the new one answered 503 at once.
- **A client that goes away** (reset, closed, timed out) is one `http_client_gone` event with
  what it was doing, never a traceback. A client that half-closes after its request still gets
  its answer.
- **An answer sent before the body was read** (413, 503, …) is followed by a short, bounded
  drain before the close, as Go does, so the client reads the answer instead of a reset.

The size of a body is `bodylimit`'s; `listener` runs uvicorn with `protocol_for`.

Called by `cli.run`, `service.listener` and `service.server`.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import h11
import structlog
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

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


class Connections:
    """The open connections of one server: those waiting for their headers, oldest first, and
    those past them. Only the event loop's thread touches it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.waiting: dict[GuardedProtocol, float] = {}
        self.past_headers: set[GuardedProtocol] = set()

    def admit(self, connection: GuardedProtocol) -> bool:
        """Take a new connection, closing the one waiting longest for its headers when the
        cap is reached; False when every open connection is past its headers."""
        cap = self.limits.max_connections
        if len(self.waiting) + len(self.past_headers) >= cap:
            if not self.waiting:
                return False
            oldest, since = next(iter(self.waiting.items()))
            self.release(oldest)
            oldest.evict()
            log.warning(
                "http_connection_evicted",
                reason=f"{cap} connections open: closed the one waiting longest for its "
                f"headers ({time.monotonic() - since:.1f}s)",
            )
        self.waiting[connection] = time.monotonic()
        return True

    def headers_read(self, connection: GuardedProtocol) -> None:
        """The connection sent its headers: it can no longer be evicted."""
        if self.waiting.pop(connection, None) is not None:
            self.past_headers.add(connection)

    def waits(self, connection: GuardedProtocol) -> None:
        """The connection was answered and waits for its next request's headers."""
        if connection in self.past_headers:
            self.past_headers.discard(connection)
            self.waiting[connection] = time.monotonic()

    def release(self, connection: GuardedProtocol) -> None:
        """The connection is done."""
        self.waiting.pop(connection, None)
        self.past_headers.discard(connection)

    def __len__(self) -> int:
        return len(self.waiting) + len(self.past_headers)


class _Connection(h11.Connection):
    """h11's connection, remembering the error of a malformed request for its status."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        """h11's next event; a protocol error is kept in `last_error`, then raised."""
        try:
            return super().next_event()
        except h11.RemoteProtocolError as error:
            self.last_error = error
            raise


_CODINGS = re.compile(rb"^transfer-encoding:[ \t]*(.*?)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol within `Limits` (`protocol_for` binds a `Connections`)."""

    connections_of: Connections

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = self.connections_of.limits
        self.conn = _Connection(h11.SERVER, self.limits.max_header_bytes)
        self.phase = "headers"
        self.head = bytearray()  # what came of the current request's headers
        self.settled = False  # closed on purpose: nothing to report when it goes
        self.draining = 0  # bytes still dropped after an early answer
        self.seen: object = None  # the request cycle whose headers were taken into account
        self.first = True
        self.timer: asyncio.TimerHandle | None = None
        self.write_timer: asyncio.TimerHandle | None = None

    # --- the connection's life ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admit the connection (or answer 503 at once) and start its header deadline."""
        super().connection_made(_Lingering(transport, self))  # type: ignore[arg-type]
        if not self.connections_of.admit(self):
            log.warning("http_busy", reason=f"{self.limits.max_connections} connections open")
            self.answer_raw(503, "too many connections; retry later\n", retry_after=1)
            return
        self.arm(self.limits.header_timeout, self.headers_late)

    def data_received(self, data: bytes) -> None:
        """Feed h11, keeping the header bytes; then follow the request's phase."""
        if self.draining:
            self.draining = max(0, self.draining - len(data))
            if not self.draining:
                self.transport.close()
            return
        if self.phase == "headers" and len(self.head) <= self.limits.max_header_bytes:
            self.head += data[: self.limits.max_header_bytes + 1 - len(self.head)]
        super().data_received(data)
        self.follow()

    def eof_received(self) -> bool | None:  # type: ignore[override]
        """A client that half-closes after a whole request still gets its answer."""
        cycle = self.cycle
        if (
            self.seen is cycle
            and cycle is not None
            and not cycle.response_complete
            and self.conn.their_state is h11.DONE
        ):
            cycle.keep_alive = False  # answer, then close
            return True
        return None

    def on_response_complete(self) -> None:
        """The answer is sent: the next request's headers have their own deadline. An answer
        sent before the body was read ends the connection (after a short drain): the rest of
        the body is not waited for."""
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.settled = True
            self.transport.close()
        super().on_response_complete()
        if self.transport.is_closing():
            return
        self.follow()
        if self.seen is self.cycle:  # no pipelined request: wait for the next one
            self.phase, self.first = "headers", False
            self.head.clear()
            self.connections_of.waits(self)
            self.arm(self.limits.header_timeout, self.headers_late)

    def shutdown(self) -> None:
        """The server stops: the close is dro's, not the client's."""
        self.settled = True
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection; a client that left in the middle is one event."""
        self.disarm()
        if self.write_timer is not None:
            self.write_timer.cancel()
        self.connections_of.release(self)
        if not self.settled:
            cycle = self.cycle
            if self.phase == "headers" and self.head:
                self.gone("disconnected", _why(exc, "before the end of its headers"))
            elif cycle is not None and self.seen is cycle and not cycle.response_complete:
                phase = "body" if self.conn.their_state is h11.SEND_BODY else "answer"
                self.phase = phase
                self.gone("disconnected", _why(exc, f"in the {phase}"))
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client stopped taking the answer: it has `body_timeout` to go on."""
        super().pause_writing()
        if self.write_timer is None:
            self.write_timer = self.loop.call_later(self.limits.body_timeout, self.write_late)

    def resume_writing(self) -> None:
        """The client takes the answer again."""
        super().resume_writing()
        if self.write_timer is not None:
            self.write_timer.cancel()
            self.write_timer = None

    def send_400_response(self, msg: str) -> None:
        """A malformed request: h11's status for it (400, 431, 501), one event, the close."""
        error = self.conn.last_error if isinstance(self.conn, _Connection) else None
        status = error.error_status_hint if error is not None else 400
        reason = str(error) if error is not None else msg
        if status == 501 and _chunked_not_last(bytes(self.head)):
            status, reason = 400, "chunked is not the last transfer coding"
        if status == 431:
            reason = "the request headers are too large"
        self.refuse(status, reason)

    # --- deadlines ----------------------------------------------------------------------------

    def follow(self) -> None:
        """A new request's headers arrived: it may no longer be evicted, and its body has
        `body_timeout` from now."""
        cycle = self.cycle
        if cycle is None or cycle is self.seen or self.settled:
            return
        self.seen = cycle
        self.head.clear()
        scope = cycle.scope
        size = len(scope["raw_path"]) + len(scope["query_string"]) + 16
        if size + sum(len(k) + len(v) + 4 for k, v in scope["headers"]) > (
            self.limits.max_header_bytes
        ):  # h11 bounds only headers that arrive in more than one read
            self.refuse(431, "the request headers are too large")
            return
        self.connections_of.headers_read(self)
        self.phase = "body"
        self.arm(self.limits.body_timeout, self.body_late)

    def headers_late(self) -> None:
        """The header deadline passed: 408 (a kept-alive connection that sent nothing more
        is simply closed)."""
        self.timer = None
        if self.first or self.head:
            seconds = self.limits.header_timeout
            self.gone("timeout", f"no complete headers within {seconds:g}s")
            self.answer_raw(408, "the request headers took too long\n")
        else:
            self.settled = True
            self.transport.close()

    def body_late(self) -> None:
        """The body deadline passed: 408 when the body is still incomplete."""
        self.timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.settled:
            return
        self.gone("timeout", f"no complete body within {self.limits.body_timeout:g}s")
        self.answer_raw(408, "the request body took too long\n")

    def write_late(self) -> None:
        """The client did not take the answer in time."""
        self.write_timer = None
        self.phase = "answer"
        self.gone("timeout", f"the answer was not taken within {self.limits.body_timeout:g}s")
        self.settled = True
        self.transport.abort()

    def arm(self, seconds: float, then: Any) -> None:
        """Run `then` in `seconds` unless re-armed or disarmed before."""
        self.disarm()
        self.timer = self.loop.call_later(seconds, then)

    def disarm(self) -> None:
        """Cancel the deadline."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    # --- answers ------------------------------------------------------------------------------

    def refuse(self, status: int, reason: str) -> None:
        """Answer a request that cannot be served, then close."""
        log.info("http_refused", status=status, reason=reason.strip(), **self.where())
        self.answer_raw(status, reason + "\n")

    def answer_raw(self, status: int, text: str, retry_after: int | None = None) -> None:
        """Write a whole answer outside h11 (the request may be unreadable), then close:
        the request in progress, if any, sees the client gone."""
        self.settled = True
        self.disarm()
        body = text.encode()
        phrase = HTTPStatus(status).phrase
        head = (
            f"HTTP/1.1 {status} {phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n"
        )
        if retry_after is not None:
            head += f"retry-after: {retry_after}\r\n"
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if cycle.response_started:  # too late for a status: only the close is left
                body, head = b"", ""
            cycle.disconnected = True
            cycle.message_event.set()
        if head:
            self.transport.write(head.encode() + b"\r\n" + body)
        self.transport.close()

    def evict(self) -> None:
        """Closed to make room for a new connection (`Connections.admit` says so)."""
        self.settled = True
        self.disarm()
        self.transport.abort()

    def gone(self, outcome: str, detail: str) -> None:
        """One event for a client that went away or was cut off."""
        log.info("http_client_gone", outcome=outcome, detail=detail, **self.where())

    def where(self) -> dict[str, str]:
        """The client, the phase and the request, for an event."""
        where = {"phase": self.phase}
        if self.client:
            where["client"] = f"{self.client[0]}:{self.client[1]}"
        if self.seen is not None and self.scope is not None:
            where["request"] = f"{self.scope['method']} {self.scope['path']}"[:200]
        return where

    def linger(self) -> bool:
        """Whether closing now would drop a body still being sent: then drain a little of it
        first, so that the client reads the answer rather than a reset."""
        if self.conn.their_state is not h11.SEND_BODY or self.draining:
            return False
        self.draining = DRAIN_BYTES
        self.flow.resume_reading()
        self.loop.call_later(DRAIN_SECONDS, self.transport.close)
        return True


class _Lingering:
    """The transport as uvicorn sees it: `close` after an early answer drains a little of the
    body first (`GuardedProtocol.linger`); everything else is the transport's own."""

    def __init__(self, transport: Any, protocol: GuardedProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._lingered = False

    def close(self) -> None:
        """Close, after a short drain when the client is still sending a body."""
        if not self._lingered and not self._transport.is_closing():
            self._lingered = True
            if self._transport.can_write_eof() and self._protocol.linger():
                self._transport.write_eof()
                return
        self._transport.close()

    def is_closing(self) -> bool:
        """Whether the close has begun, drain included."""
        return bool(self._lingered or self._transport.is_closing())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def protocol_for(connections: Connections) -> type[GuardedProtocol]:
    """The protocol class uvicorn instantiates per connection, bound to `connections`."""
    return type("Guarded", (GuardedProtocol,), {"connections_of": connections})


def _chunked_not_last(head: bytes) -> bool:
    codings = [
        c.strip().lower() for value in _CODINGS.findall(head) for c in value.split(b",") if c
    ]
    return b"chunked" in codings and codings[-1] != b"chunked"


def _why(exc: Exception | None, where: str) -> str:
    if exc is None:
        return f"the client closed the connection {where}"
    return f"{type(exc).__name__}: {exc} ({where})"
