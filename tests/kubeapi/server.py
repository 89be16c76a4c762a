"""HTTP transport: a threaded server on 127.0.0.1 that can stop listening and listen again."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class HttpResponse:
    """What the application answers: status code and JSON body; or a stream of JSON events,
    one per line, with None for an idle moment (the connection is then checked)."""

    code: int
    body: dict[str, Any]
    stream: Iterator[dict[str, Any] | None] | None = None


# (method, raw path with query, headers, body) -> response
Application = Callable[[str, str, Mapping[str, str], bytes], HttpResponse]


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that tracks its open connections so it can cut them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, application: Application, verbose: bool) -> None:
        self.application = application
        self.verbose = verbose
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__((LOOPBACK, port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that hang up (timeouts, refuse()); report anything else."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            return
        super().handle_error(request, client_address)

    def cut_connections(self) -> None:
        """Shut down every open client connection (keep-alive ones included)."""
        with self.connections_lock:
            open_connections = list(self.connections)
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """Reads a request, hands it to the application, writes the JSON answer."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        """Register the connection so it can be cut; send small answers without delay."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        """Forget the connection."""
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def _read_body(self) -> bytes:
        """Read a Content-Length or chunked request body."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        """Answer one request."""
        body = self._read_body()
        headers = dict(self.headers.items())
        response = self.server.application(self.command, self.path, headers, body)
        if response.stream is not None:
            self._stream(response.code, response.stream)
            return
        payload = json.dumps(response.body).encode()
        self.send_response(response.code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Audit-Id", "00000000-0000-0000-0000-000000000000")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _stream(self, code: int, events: Iterator[dict[str, Any] | None]) -> None:
        """Send events as chunks of one JSON line each until the stream ends or the client
        goes; then end the response (a watch's connection is not kept for another request)."""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Audit-Id", "00000000-0000-0000-0000-000000000000")
        self.end_headers()
        self.close_connection = True
        try:
            for event in events:
                if event is None:
                    if self._hung_up():
                        return
                    continue
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            return
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def _hung_up(self) -> bool:
        """Whether the client closed the connection (or it was cut)."""
        try:
            return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        """Log requests to stderr only when verbose."""
        if self.server.verbose:
            sys.stderr.write(f"kubeapi: {format % args}\n")


class Listener:
    """Owns the listening socket and serving thread; can refuse and re-accept on one port."""

    def __init__(self, application: Application, port: int = 0, verbose: bool = False) -> None:
        self._application = application
        self._verbose = verbose
        self.port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        """Tell whether connections are currently accepted."""
        return self._server is not None

    def listen(self) -> None:
        """Bind 127.0.0.1 (a free port the first time, the same port afterwards) and serve."""
        if self._server is not None:
            return
        server = _Server(self.port, self._application, self._verbose)
        self.port = server.server_address[1]
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"kubeapi-{self.port}",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread

    def close(self) -> None:
        """Stop listening, cut open connections and wait for the serving thread."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.cut_connections()
        if thread is not None:
            thread.join(timeout=5)
