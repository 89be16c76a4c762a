"""Server: the HTTP side of `dro run`, on one port.

- `GET /healthz`: 200 while the process serves requests (liveness).
- `GET /readyz`: 200 while the runner is ready (`Runner.ready`), 503 otherwise, with the reason.
- `GET /metrics`: Prometheus' text format.
- `POST /webhook`: a GitHub or GitLab push event (`webhook.verify`). A bad or missing signature
  gets 401; a push to the source ref starts a pass (202; a follower stamps the request on
  the Lease for the leader); any other event gets 200 and is ignored. Without a webhook
  secret the endpoint answers 403: dro never acts on an unsigned request. A delivery whose id
  was served lately (`deliveries`) gets 200 and starts no second pass.

Every connection is held to `httpguard.Limits` (deadlines for headers and body, a body and
header size limit, a cap on connections). Webhooks are read at most `max_webhooks` at a time
(beyond that 503 with `Retry-After`, before the body is read), so the memory they can take is
bounded; the probes and `/metrics` are never queued behind them.

Called by `cli.run`.
"""

from __future__ import annotations

import threading

import structlog

from reconciler import service as runner
from reconciler.service import deliveries, httpbody, httpguard, webhook

log = structlog.get_logger("dro")

MAX_WEBHOOKS = 4
"""Webhook requests read at once: with 25 MB bodies, at most 100 MB held by webhooks."""


class Server:
    """The HTTP endpoints of one runner, served in a background thread."""

    def __init__(
        self,
        loop: runner.Runner,
        *,
        host: str,
        port: int,
        webhook_secret: bytes | None,
        limits: httpguard.Limits | None = None,
        max_webhooks: int = MAX_WEBHOOKS,
    ) -> None:
        self.loop = loop
        self.host = host
        self.webhook_secret = webhook_secret
        self.recent = deliveries.RecentDeliveries()
        self.webhook_slots = threading.BoundedSemaphore(max_webhooks)
        self.httpd = httpguard.GuardedServer(
            (host, port), _handler_for(self), limits or httpguard.Limits()
        )
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

    def receive(self, headers: dict[str, str], body: bytes) -> tuple[int, str]:
        """The answer to one webhook request and its body."""
        meter = self.loop.metrics.webhooks
        settled = self.precheck(headers)
        if settled is not None or self.webhook_secret is None:
            return settled or (403, "webhook disabled\n")
        try:
            event = webhook.verify(headers, body, self.webhook_secret, self.loop.settings.ref)
        except webhook.Rejected as rejected:
            return self._rejected(rejected)
        log.info(
            "webhook_received",
            provider=event.provider,
            kind=event.kind,
            ref=event.ref,
            after=event.after,
            pusher=event.pusher,
            delivery=event.delivery,
            starts_pass=event.starts_pass,
        )
        if not event.starts_pass:
            meter.labels(result="ignored").inc()
            return 200, event.why + "\n"
        claim = f"{event.provider}:{event.delivery}" if event.delivery else None
        if claim is not None and not self.recent.claim(claim):
            meter.labels(result="duplicate").inc()
            log.info("webhook_duplicate", provider=event.provider, delivery=event.delivery)
            return 200, f"duplicate delivery {event.delivery}: already served, no second pass\n"
        if not self.loop.trigger(f"{event.provider} push {event.after or ''}".strip()):
            if claim is not None:
                self.recent.release(claim)  # the sender's retry must be served
            meter.labels(result="unforwarded").inc()
            return 503, "this replica is not the leader and could not reach the Lease\n"
        meter.labels(result="triggered").inc()
        return 202, "pass triggered\n"

    def precheck(self, headers: dict[str, str]) -> tuple[int, str] | None:
        """The answer to a webhook request that its headers alone settle, before its body
        is read; None when the body must be read."""
        if self.webhook_secret is None:
            self.loop.metrics.webhooks.labels(result="disabled").inc()
            return 403, "webhook disabled: start dro run with --webhook-secret-file\n"
        try:
            webhook.check_headers(headers, self.webhook_secret)
        except webhook.Rejected as rejected:
            return self._rejected(rejected)
        return None

    def _rejected(self, rejected: webhook.Rejected) -> tuple[int, str]:
        self.loop.metrics.webhooks.labels(result="rejected").inc()
        log.warning("webhook_rejected", status=rejected.status, reason=rejected.reason)
        return rejected.status, rejected.reason + "\n"


def _handler_for(server: Server) -> type[httpguard.GuardedHandler]:
    class Handler(httpguard.GuardedHandler):
        def do_GET(self) -> None:  # noqa: N802 (the library's name)
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self.answer(200, "ok\n")
            elif path == "/readyz":
                ready, why = server.loop.ready()
                self.answer(200 if ready else 503, why + "\n")
            elif path == "/metrics":
                body = server.loop.metrics.exposition()
                self.answer(200, body, "text/plain; version=0.0.4; charset=utf-8")
            else:
                self.answer(404, "not found\n")

        def do_POST(self) -> None:  # noqa: N802 (the library's name)
            if self.path.split("?", 1)[0] != "/webhook":
                self.refuse(404, "not found\n")
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            settled = server.precheck(headers)
            if settled is not None:
                self.refuse(*settled)
                return
            if not server.webhook_slots.acquire(blocking=False):
                server.loop.metrics.webhooks.labels(result="busy").inc()
                self.refuse(503, "too many webhooks at once; retry later\n")
                return
            try:  # the slot is held until the answer is sent and the body dropped
                body = self.read_body()
                self.answer(*server.receive(headers, body))
            except httpbody.Refused as refused:
                self.refuse(refused.status, refused.reason + "\n")
            finally:
                server.webhook_slots.release()

    return Handler
