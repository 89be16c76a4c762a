"""HTTP request bodies: how long a body is, and reading it without trusting the client.

`framing` reads the headers of a request and says how its body is delimited, or refuses it
before a byte of it is read, as RFC 9112 §6 asks and as Go's `net/http` does:

- `Content-Length` must be one decimal number of at most 19 digits (it fits an int64);
  `abc`, `-1`, `+5`, an empty value or two different values get 400. A length above the
  limit gets 413, and the body is never read.
- `Transfer-Encoding: chunked` is read chunk by chunk: a chunk that would take the body past
  the limit gets 413 before it is read, so at most the limit is ever held. Any other
  transfer coding gets 501; chunked that is not the last coding, or `Transfer-Encoding`
  together with `Content-Length` (a request-smuggling shape), gets 400.
- Without either, a request has no body.

`read` then reads the body that `framing` allowed. Its caller (`httpguard`) bounds the time.

Called by `service.httpguard` and `service.server`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from email.message import Message

MAX_LENGTH_DIGITS = 19
"""An int64 has 19 digits; a longer Content-Length cannot be a real body (Go refuses it too)."""
MAX_CHUNK_LINE = 4096
"""A chunk-size line, extensions included, beyond this is malformed."""
MAX_TRAILERS = 32
"""Trailer fields after the last chunk, read and dropped; more is malformed."""


class Refused(Exception):
    """The request cannot be read: `status` is the HTTP answer, `reason` its body."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Framing:
    """How a request's body is delimited: `length` bytes, or chunked (`length` is None)."""

    length: int | None
    chunked: bool = False

    @property
    def empty(self) -> bool:
        """Whether the request has no body at all."""
        return not self.chunked and not self.length


NO_BODY = Framing(length=0)


def framing(headers: Message, limit: int) -> Framing:
    """How the body of a request with `headers` is delimited; raises `Refused` (400, 411,
    413 or 501) when it is malformed or longer than `limit` bytes."""
    encodings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        if lengths:
            raise Refused(400, "both Transfer-Encoding and Content-Length are set")
        codings = [c.strip().lower() for value in encodings for c in value.split(",")]
        if codings[-1] != "chunked":
            if "chunked" in codings:
                raise Refused(400, "chunked is not the last transfer coding")
            raise Refused(501, f"transfer coding {codings[-1]!r} is not supported")
        if codings != ["chunked"]:
            raise Refused(501, "only the chunked transfer coding is supported")
        return Framing(length=None, chunked=True)
    if not lengths:
        return NO_BODY
    values = {v.strip() for value in lengths for v in value.split(",")}
    if len(values) != 1:
        raise Refused(400, "conflicting Content-Length values")
    (text,) = values
    if not text.isascii() or not text.isdigit() or len(text) > MAX_LENGTH_DIGITS:
        raise Refused(400, "Content-Length is not a length")
    length = int(text)
    if length > limit:
        raise Refused(413, f"the body is larger than {limit} bytes")
    return Framing(length=length)


def read(stream: io.BufferedIOBase, frame: Framing, limit: int) -> bytes:
    """The body `frame` describes, from `stream`; raises `Refused` when a chunked body is
    malformed or outgrows `limit`, and `EOFError` when the client stops sending early."""
    if frame.chunked:
        return _read_chunked(stream, limit)
    return _exactly(stream, frame.length or 0)


def _exactly(stream: io.BufferedIOBase, count: int) -> bytes:
    data = stream.read(count) if count else b""
    if len(data) != count:
        raise EOFError(f"the client sent {len(data)} of {count} bytes and stopped")
    return data


def _read_chunked(stream: io.BufferedIOBase, limit: int) -> bytes:
    body = bytearray()
    while True:
        size = _chunk_size(_line(stream))
        if size == 0:
            break
        if len(body) + size > limit:
            raise Refused(413, f"the body is larger than {limit} bytes")
        body += _exactly(stream, size)
        if _line(stream) != b"":
            raise Refused(400, "a chunk is longer than its size says")
    for _ in range(MAX_TRAILERS + 1):
        if _line(stream) == b"":
            return bytes(body)
    raise Refused(400, f"more than {MAX_TRAILERS} trailer fields")


def _line(stream: io.BufferedIOBase) -> bytes:
    line = stream.readline(MAX_CHUNK_LINE + 1)
    if len(line) > MAX_CHUNK_LINE:
        raise Refused(400, "a chunk line is too long")
    if not line.endswith(b"\n"):
        raise EOFError("the client stopped in the middle of a chunked body")
    return line.rstrip(b"\r\n")


def _chunk_size(line: bytes) -> int:
    digits = line.split(b";", 1)[0].strip()
    if not digits or len(digits) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in digits):
        raise Refused(400, "a chunk size is not hexadecimal")
    return int(digits, 16)
