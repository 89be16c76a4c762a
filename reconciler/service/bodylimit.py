"""Body limit: an ASGI middleware that holds every request body to a size, as Go's
`http.MaxBytesReader` does, before and while it is read.

h11 (under `listener`) already refuses a malformed `Content-Length` or transfer coding, and
reads chunked bodies; what it does not know is how much dro takes:

- A `Content-Length` above the limit gets 413 on the headers alone; the body is never read.
- A body without a length (chunked) is counted as it arrives: the read that takes it past the
  limit raises `TooLarge` (the server answers 413), so at most the limit is ever held.
- `Transfer-Encoding` together with `Content-Length`, a request-smuggling shape that h11
  resolves by ignoring the length, gets 400 (RFC 9112 §6.1 allows a server to refuse it).

Early answers close the connection (`Connection: close`): the unread body is not waited for.

Called by `service.server`.
"""

from __future__ import annotations

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = structlog.get_logger("dro")

MAX_LENGTH_DIGITS = 19
"""An int64 has 19 digits; a longer Content-Length cannot be a real body (Go refuses it too)."""


class TooLarge(Exception):
    """The body grew past the limit while it was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is larger than {limit} bytes")
        self.limit = limit


class BodyLimit:
    """Wraps an ASGI app: its requests' bodies are at most `max_body` bytes."""

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse on the headers when they settle it; else count the body as it is read."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = refusal(scope["headers"], self.max_body)
        if refused is not None:
            status, reason = refused
            client = scope.get("client")
            log.info(
                "http_refused",
                status=status,
                reason=reason,
                request=f"{scope['method']} {scope['path']}"[:200],
                **({"client": f"{client[0]}:{client[1]}"} if client else {}),
            )
            await answer(send, status, reason + "\n")
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise TooLarge(self.max_body)
            return message

        await self.app(scope, bounded, send)


def refusal(headers: list[tuple[bytes, bytes]], limit: int) -> tuple[int, str] | None:
    """The status and reason of a request whose headers alone refuse it, or None."""
    lengths = [v for k, v in headers if k == b"content-length"]
    if any(k == b"transfer-encoding" for k, _ in headers) and lengths:
        return 400, "both Transfer-Encoding and Content-Length are set"
    if not lengths:
        return None
    text = lengths[0].strip()  # h11 let it through: digits, one value
    if len(text) > MAX_LENGTH_DIGITS:
        return 400, "Content-Length is not a length"
    if int(text) > limit:
        return 413, f"the body is larger than {limit} bytes"
    return None


async def answer(send: Send, status: int, text: str, retry_after: int | None = None) -> None:
    """A plain-text answer that closes the connection."""
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(text.encode())).encode()),
        (b"connection", b"close"),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text.encode()})
