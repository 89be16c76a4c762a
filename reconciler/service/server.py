"""Server: the HTTP side of `dro run`, one Starlette app on one uvicorn listener.

- `GET /healthz`: 200 while the process serves requests (liveness).
- `GET /readyz`: 200 while the runner is ready (`Runner.ready`), 503 otherwise, with the reason.
- `GET /metrics`: Prometheus' text format.
- `POST /webhook`: a GitHub or GitLab push event (`webhook.verify`). A bad or missing signature
  gets 401; a push to the source ref starts a pass (202; a follower stamps the request on
  the Lease for the leader); any other event gets 200 and is ignored. Without a webhook
  secret the endpoint answers 403: dro never acts on an unsigned request. A delivery whose id
  was served lately (`deliveries`) gets 200 and starts no second pass.

More routes (the REST API) are mounted beside these with `routes`; the built-in ones win on
their paths. An unknown path gets 404 and a wrong method 405 with `Allow`, both with a JSON
body `{"code", "message", "details"}`.

Every connection is held to `guarded.Limits` (deadlines for headers and body, a header size
limit, a cap on connections) and every body to `bodylimit`. Webhooks are read at most
`max_webhooks` at a time (beyond that 503 with `Retry-After`, before the body is read), so the
memory they can take is bounded; the probes and `/metrics` are never queued behind them.

Called by `cli.run`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus

import structlog
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from reconciler import service as runner
from reconciler.service import bodylimit, deliveries, guarded, listener, webhook

NotFound = Callable[[Request], Response | None]
"""Answers a request for a path nothing serves, or gives None for the API's 404."""

log = structlog.get_logger("dro")

MAX_WEBHOOKS = 4
"""Webhook requests read at once: with 25 MB bodies, at most 100 MB held by webhooks."""
RETRY_AFTER = 5
"""Seconds a client is asked to wait after a 503."""
BUILT_IN = {"/healthz": ("GET",), "/readyz": ("GET",), "/metrics": ("GET",), "/webhook": ("POST",)}


class Server:
    """The HTTP endpoints of one runner, served in a background thread."""

    def __init__(
        self,
        loop: runner.Runner,
        *,
        host: str,
        port: int,
        webhook_secret: bytes | None,
        limits: guarded.Limits | None = None,
        max_webhooks: int = MAX_WEBHOOKS,
        routes: Sequence[BaseRoute] = (),
        tls: listener.Tls | None = None,
        not_found: NotFound | None = None,
    ) -> None:
        """`not_found` may answer a 404 itself (the web view's page for a browser); when it
        gives None, or is not given, the answer is the API's `{code, message, details}`."""
        self.loop = loop
        self.not_found = not_found
        self.host = host
        self.webhook_secret = webhook_secret
        self.recent = deliveries.RecentDeliveries()
        self.max_webhooks = max_webhooks
        self.webhooks_reading = 0  # only the event loop's thread counts
        limits = limits or guarded.Limits()
        self.app = Starlette(
            routes=[*self._built_in(), *routes],
            middleware=[Middleware(bodylimit.BodyLimit, max_body=limits.max_body)],
            exception_handlers={
                HTTPException: self._http_error,
                bodylimit.TooLarge: _too_large,
            },
        )
        self.listener = listener.Listener(self.app, host=host, port=port, limits=limits, tls=tls)

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        return self.listener.port

    def start(self) -> None:
        """Serve in a background thread."""
        self.listener.start()
        scheme = self.listener.scheme
        log.info("serving", address=f"{self.host}:{self.port}", scheme=scheme)

    def close(self) -> None:
        """Stop serving and free the port."""
        self.listener.close()

    def _built_in(self) -> list[BaseRoute]:
        endpoints: dict[str, Callable[[Request], Awaitable[Response]]] = {
            "/healthz": _healthz,
            "/readyz": self._readyz,
            "/metrics": self._metrics,
            "/webhook": self._webhook,
        }
        routes: list[BaseRoute] = [
            Route(path, endpoint, methods=list(BUILT_IN[path]))
            for path, endpoint in endpoints.items()
        ]
        # every other method on a built-in path is 405, whatever `routes` adds
        routes += [Route(path, _NotAllowed(methods)) for path, methods in BUILT_IN.items()]
        return routes

    async def _http_error(self, request: Request, error: Exception) -> Response:
        """A 404 that `not_found` answers itself, else the API's answer (`_http_error`)."""
        missing = isinstance(error, HTTPException) and error.status_code == 404
        page = self.not_found(request) if missing and self.not_found is not None else None
        return page if page is not None else await _http_error(request, error)

    async def _readyz(self, _request: Request) -> Response:
        ready, why = self.loop.ready()
        return _text(200 if ready else 503, why + "\n")

    async def _metrics(self, _request: Request) -> Response:
        body = self.loop.metrics.exposition()
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def _webhook(self, request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        settled = self.precheck(headers)
        if settled is not None:
            return _text(*settled, close=True)
        if self.webhooks_reading >= self.max_webhooks:
            self.loop.metrics.webhooks.labels(result="busy").inc()
            log.info("http_refused", status=503, reason="too many webhooks at once")
            return _text(503, "too many webhooks at once; retry later\n", close=True)
        self.webhooks_reading += 1
        self.loop.metrics.webhooks_in_flight.inc()
        try:  # the slot is held until the body is verified and dropped
            try:
                body = await request.body()
            except bodylimit.TooLarge as refused:
                return _text(413, f"{refused}\n", close=True)
            except ClientDisconnect:
                return _text(400, "the client went away\n", close=True)  # sent to no one
            status, text = await run_in_threadpool(self.receive, headers, body)
            return _text(status, text)
        finally:
            self.webhooks_reading -= 1
            self.loop.metrics.webhooks_in_flight.dec()

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


async def _healthz(_request: Request) -> Response:
    return _text(200, "ok\n")


def _text(status: int, text: str, *, close: bool = False) -> Response:
    """A plain-text answer; `close` when the request's body was not read (the connection
    cannot serve another request), and `Retry-After` on a 503."""
    headers = {"Retry-After": str(RETRY_AFTER)} if status == 503 else {}
    if close:
        headers["Connection"] = "close"
    return Response(text, status_code=status, media_type="text/plain", headers=headers)


class _NotAllowed:
    """An ASGI app (so that its route takes every method) answering 405 with `Allow`."""

    def __init__(self, methods: Sequence[str]) -> None:
        self.allowed = ", ".join([*methods, "HEAD"] if "GET" in methods else methods)

    async def __call__(self, _scope: Scope, _receive: Receive, _send: Send) -> None:
        raise HTTPException(405, headers={"Allow": self.allowed})


async def _http_error(request: Request, error: Exception) -> Response:
    """404, 405 and other HTTP errors of the routing, as `{code, message, details}`."""
    assert isinstance(error, HTTPException)
    status = error.status_code
    path = request.url.path
    headers = dict(error.headers or {})
    if status == 404:
        code, message = "NOT_FOUND", f"nothing is served at {path}"
    elif status == 405:
        allowed = headers.get("Allow", "")
        code = "METHOD_NOT_ALLOWED"
        message = f"{request.method} is not allowed on {path}; allowed: {allowed}"
    else:
        code, message = HTTPStatus(status).name, str(error.detail)
    body = {"code": code, "message": message, "details": {}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _too_large(_request: Request, error: Exception) -> Response:
    """A body that grew past the limit while a route read it."""
    body = {"code": "PAYLOAD_TOO_LARGE", "message": str(error), "details": {}}
    return JSONResponse(body, status_code=413, headers={"Connection": "close"})
