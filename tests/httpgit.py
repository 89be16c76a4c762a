"""A git server over HTTP with Basic authentication, for tests of https-style credentials.

git's own `git http-backend` (the CGI program behind most self-hosted git servers) serves the
repositories under a folder; this server runs it per request after checking the
`Authorization` header, and answers 401 with a Basic challenge otherwise, as GitHub and GitLab
do. It binds 127.0.0.1 on a free port, in a thread of the test process, and stops at the end
of its `with` block.
"""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

BACKEND = "/usr/lib/git-core/git-http-backend"


@dataclass
class GitHTTP:
    """A running server: its port, and the Authorization headers it answered 401 to."""

    port: int
    refused: list[str] = field(default_factory=list)
    served: int = 0

    def url(self, name: str, userinfo: str = "") -> str:
        """The http URL of a repository, with `user:password@` when given."""
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}/{name}"


def _body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def _handler(base: Path, user: str, password: str, state: GitHTTP) -> type:
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            """Quiet: the test reads what it needs from `state`."""

        def _serve(self) -> None:
            body = _body(self) if self.command == "POST" else b""
            given = self.headers.get("Authorization", "")
            if given != expected:
                state.refused.append(given)
                self._answer(401, {"WWW-Authenticate": 'Basic realm="git"'}, b"")
                return
            parts = urlsplit(self.path)
            env = {
                "GIT_PROJECT_ROOT": str(base),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": parts.path,
                "QUERY_STRING": parts.query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": user,
                "REMOTE_ADDR": "127.0.0.1",
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            done = subprocess.run(
                [BACKEND], input=body, env=env, capture_output=True, check=True, timeout=60
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            headers, status = {}, 200
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(": ")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers[name] = value
            state.served += 1
            self._answer(status, headers, payload)

        def _answer(self, status: int, headers: dict[str, str], payload: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            """Discovery (`info/refs`)."""
            self._serve()

        def do_POST(self) -> None:
            """upload-pack (fetch) and receive-pack (push)."""
            self._serve()

    return Handler


@contextmanager
def serving(base: Path, *, user: str, password: str) -> Iterator[GitHTTP]:
    """Serve the bare repositories under `base` to `user:password` only, until the block ends."""
    state = GitHTTP(port=0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(base, user, password, state))
    httpd.daemon_threads = True
    state.port = int(httpd.server_address[1])
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
