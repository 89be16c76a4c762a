"""Listener: uvicorn serving dro's ASGI app in a background thread, over HTTP or HTTPS.

`Listener` binds the socket at once (a busy port is the caller's `OSError`), reads the
certificate at once (a bad one is the caller's `ssl.SSLError`), and runs `uvicorn.Server` on
its own event loop in a thread, signal handlers off (`dro run` has its own), with
`guarded.GuardedProtocol` for every connection. A TLS handshake has the header deadline too
(uvicorn leaves asyncio's 60s). uvicorn's log records become dro's events:
nothing of uvicorn's reaches stdout, which carries only dro's JSON events.

`plain_http_refusal` is the rule for plain HTTP: fine on loopback, or for the probes, metrics
and signed webhooks anywhere; the REST API's bearer tokens need TLS on any other address,
unless the operator says TLS ends in front of dro.

Called by `cli.run` and `service.server`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import uvicorn
from uvicorn.config import Config

from reconciler.service.guarded import Connections, Limits, protocol_for

log = structlog.get_logger("dro")

SHUTDOWN_SECONDS = 3.0
"""At `close`, requests in progress have this long to finish before they are cancelled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tls:
    """A certificate (chain) and its private key, PEM files, to serve HTTPS."""

    cert_file: Path
    key_file: Path


def plain_http_refusal(
    host: str, tls: bool, api_enabled: bool, allow_plain_http: bool
) -> str | None:
    """Why `dro run` must not serve on `host` without TLS, or None when it may: the REST API
    carries bearer tokens, so plain HTTP is for loopback only, unless the operator says that
    TLS ends before dro (an Ingress) with `--allow-plain-http`. Without the API, the probes,
    metrics and signed webhooks are served as they always were."""
    if tls or not api_enabled or allow_plain_http or is_loopback(host):
        return None
    return (
        f"--listen {host}: the REST API would take bearer tokens over plain HTTP; set "
        "--tls-cert-file and --tls-key-file, listen on 127.0.0.1, or pass --allow-plain-http "
        "when TLS ends in front of dro (an Ingress)"
    )


def is_loopback(host: str) -> bool:
    """Whether `host` (an address, or `localhost`) is this machine's loopback only."""
    bare = host.strip("[]")
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


class Listener:
    """uvicorn serving `app` on `host:port` within `Limits`, in a background thread with its
    own event loop. The socket is bound at once, so a busy port is an `OSError` here; a bad
    certificate or key is an `OSError` or `ssl.SSLError` here too."""

    def __init__(
        self, app: Any, *, host: str, port: int, limits: Limits, tls: Tls | None = None
    ) -> None:
        self.host = host.strip("[]")
        self.tls = tls
        self.connections = Connections(limits)
        self.config = Config(
            app,
            http=protocol_for(self.connections),
            ws="none",
            lifespan="off",
            interface="asgi3",
            log_config=None,
            access_log=False,
            server_header=False,
            headers=[("server", "dro")],
            timeout_graceful_shutdown=int(SHUTDOWN_SECONDS),
            ssl_certfile=str(tls.cert_file) if tls else None,
            ssl_keyfile=str(tls.key_file) if tls else None,
        )
        self.config.load()  # the certificate is read now: its errors are the caller's
        _route_logs()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say so,
        # else a kept-alive client waits ~40 ms for each answer's body (delayed ACK)
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((self.host, port))
            self.socket.listen(128)  # a burst waits in the accept queue, not refused
        except OSError:
            self.socket.close()
            raise
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self._serve, name="dro-http", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        return int(self.socket.getsockname()[1])

    @property
    def scheme(self) -> str:
        """`https` with a certificate, else `http`."""
        return "https" if self.tls else "http"

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        create_server = loop.create_server
        seconds = self.connections.limits.header_timeout

        async def with_handshake_deadline(*args: Any, **kwargs: Any) -> asyncio.Server:
            # uvicorn passes no handshake timeout (asyncio's default is 60s): a client that
            # stops in the middle of its TLS handshake has the header deadline instead
            if kwargs.get("ssl") is not None:
                kwargs["ssl_handshake_timeout"] = seconds
            return await create_server(*args, **kwargs)

        loop.create_server = with_handshake_deadline  # type: ignore[method-assign]
        with asyncio.Runner(loop_factory=lambda: loop) as runner:
            runner.run(self.server.serve(sockets=[self.socket]))

    def start(self) -> None:
        """Serve in the background; returns once connections are accepted."""
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise OSError("the HTTP server did not start")
            time.sleep(0.01)

    def close(self) -> None:
        """Stop serving, let requests in progress finish (a few seconds at most), free the
        port, and end the thread."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout=SHUTDOWN_SECONDS + 5)
        # the worker threads of the sync handlers end when told the loop is gone, a moment
        # after it: wait for them, so that nothing of this server outlives close()
        for worker in threading.enumerate():
            if getattr(worker, "loop", None) is self._loop and worker.is_alive():
                worker.join(timeout=SHUTDOWN_SECONDS)
        self.socket.close()


class _ToEvents(logging.Handler):
    """uvicorn's own log records as dro's events: a failing handler with its traceback;
    its line for a malformed request is dropped (`GuardedProtocol.refuse` says more)."""

    def emit(self, record: logging.LogRecord) -> None:
        """One event for a warning or worse."""
        message = record.getMessage()
        if record.levelno < logging.WARNING or message.startswith("Invalid HTTP request"):
            return
        if record.exc_info:
            log.error("http_handler_failed", detail=message, exc_info=record.exc_info)
        else:
            log.warning("http_server_warning", detail=message)


def _route_logs() -> None:
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logger = logging.getLogger(name)
        logger.propagate = False
        logger.handlers = [_ToEvents()] if name != "uvicorn.access" else []
