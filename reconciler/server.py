"""Server: the HTTP side of `dro run`, on one port.

- `GET /healthz`: 200 while the process serves requests (liveness).
- `GET /readyz`: 200 while the runner is ready (`Runner.ready`), 503 otherwise, with the reason.
- `GET /metrics`: Prometheus' text format.
- `POST /webhook`: a GitHub or GitLab push event (`webhook.verify`). A bad or missing signature
  gets 401; a push to the source ref starts a pass (202; a follower stamps the request on
  the Lease for the leader); any other event gets 200 and is ignored. Without a webhook
  secret the endpoint answers 403: dro never acts on an unsigned request.

Requests are served on their own threads, so a slow pass never blocks a probe.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog

from reconciler import runner, webhook

log = structlog.get_logger("dro")

MAX_BODY = 25 * 1024 * 1024
"""GitHub caps a webhook payload at 25 MB; anything larger is refused unread."""


class Server:
    """The HTTP endpoints of one runner, served in a background thread."""

    def __init__(
        self, loop: runner.Runner, *, host: str, port: int, webhook_secret: bytes | None
    ) -> None:
        self.loop = loop
        self.host = host
        self.webhook_secret = webhook_secret
        handler = _handler_for(self)
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()
        log.info("serving", address=f"{self.host}:{self.port}")

    def close(self) -> None:
        """Stop serving and free the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def webhook(self, headers: dict[str, str], body: bytes) -> tuple[int, str]:
        """The answer to one webhook request."""
        meter = self.loop.metrics.webhooks
        if self.webhook_secret is None:
            meter.labels(result="disabled").inc()
            return 403, "webhook disabled: start dro run with --webhook-secret-file\n"
        try:
            event = webhook.verify(headers, body, self.webhook_secret, self.loop.settings.ref)
        except webhook.Rejected as rejected:
            meter.labels(result="rejected").inc()
            log.warning("webhook_rejected", status=rejected.status, reason=rejected.reason)
            return rejected.status, rejected.reason + "\n"
        log.info(
            "webhook_received",
            provider=event.provider,
            kind=event.kind,
            ref=event.ref,
            after=event.after,
            pusher=event.pusher,
            starts_pass=event.starts_pass,
        )
        if not event.starts_pass:
            meter.labels(result="ignored").inc()
            return 200, event.why + "\n"
        if not self.loop.trigger(f"{event.provider} push {event.after or ''}".strip()):
            meter.labels(result="unforwarded").inc()
            return 503, "this replica is not the leader and could not reach the Lease\n"
        meter.labels(result="triggered").inc()
        return 202, "pass triggered\n"


def _handler_for(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "dro"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._send(200, "ok\n")
            elif path == "/readyz":
                ready, why = server.loop.ready()
                self._send(200 if ready else 503, why + "\n")
            elif path == "/metrics":
                body = server.loop.metrics.exposition()
                self._send(200, body, "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._send(404, "not found\n")

        def do_POST(self) -> None:
            if self.path.split("?", 1)[0] != "/webhook":
                self._send(404, "not found\n")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(413, "payload too large\n")
                return
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, text = server.webhook(headers, body)
            self._send(status, text)

        def _send(self, status: int, body: str | bytes, kind: str = "text/plain") -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None  # probes every few seconds would flood the log; events say enough

    return Handler
