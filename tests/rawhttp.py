"""HTTP over raw sockets, for tests that speak to `dro run` the way a hostile client would:
malformed lengths, bodies that never end, one byte at a time, resets. Nothing here knows how
the server is built; it sees only bytes on 127.0.0.1 and the process's /proc entry."""

from __future__ import annotations

import select
import socket
import struct
import time
from pathlib import Path

from reconciler.service import webhook


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    """A TCP connection to 127.0.0.1:`port`."""
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send `data`, then read until the server closes (or `timeout`); what it sent back."""
    with connect(port, timeout) as conn:
        conn.sendall(data)
        return read_all(conn, timeout)


def read_all(conn: socket.socket, timeout: float = 5.0) -> bytes:
    """Read until EOF, a reset or `timeout`; the bytes received."""
    received = bytearray()
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        received += chunk
    return bytes(received)


def status(response: bytes) -> int:
    """The status code of a raw response; 0 when there is none."""
    parts = response.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return 0
    return int(parts[1])


def body(response: bytes) -> str:
    """The body of a raw response."""
    return response.partition(b"\r\n\r\n")[2].decode(errors="replace")


def request(method: str, path: str, headers: dict[str, str], content: bytes = b"") -> bytes:
    """A raw HTTP/1.1 request, headers written exactly as given, asking the server to close
    the connection after its answer (`exchange` reads until the close)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: dro", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + content


def signed(secret: bytes, content: bytes, event: str = "push") -> dict[str, str]:
    """The headers GitHub sends with `content`."""
    return {
        "X-GitHub-Event": event,
        "X-Hub-Signature-256": webhook.github_signature(secret, content),
        "Content-Type": "application/json",
    }


def reset(conn: socket.socket) -> None:
    """Close with a TCP reset, as a client that crashes or times out does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def closed_by_server(conn: socket.socket, within: float) -> tuple[bool, bytes]:
    """Wait up to `within` seconds for the server to answer or close; (closed, what it sent)."""
    readable, _, _ = select.select([conn], [], [], within)
    if not readable:
        return False, b""
    return True, read_all(conn, 2.0)


def trickle(conn: socket.socket, data: bytes, every: float, limit: float) -> tuple[float, bytes]:
    """Send `data` one byte each `every` seconds until the server answers or closes; the
    seconds that took and what the server sent. Fails after `limit` seconds."""
    began = time.monotonic()
    for byte in data:
        done, answer = closed_by_server(conn, every)
        if done:
            return time.monotonic() - began, answer
        try:
            conn.sendall(bytes([byte]))
        except OSError:
            return time.monotonic() - began, b""
        if time.monotonic() - began > limit:
            break
    raise AssertionError(f"the server still read a byte every {every}s after {limit}s")


def child_pid(pid: int) -> int:
    """The process `timeout` started (tests run `dro run` under `timeout`)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(children[0])


def proc_status(pid: int, field: str) -> int:
    """A number from /proc/PID/status: VmRSS, VmHWM (kB) or Threads."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)
