"""The listener of `dro run` in process: routes mounted beside the built-in ones, JSON 404 and
405, HTTPS with a certificate made here and checked by a real client, the rule for plain HTTP,
kept-alive connections held to the header deadline, and a stop that leaves no thread behind."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from structlog.testing import capture_logs

from reconciler import service as runner
from reconciler.service import guarded, listener, metrics, server
from reconciler.settings import Settings
from tests import rawhttp
from tests.service import DRO, wait_for

SECRET = b"listener-secret"
HEADER_TIMEOUT = 0.5


def make_runner() -> runner.Runner:
    loop = runner.Runner(Settings(repo="unused"), runner.RunOptions(), metrics.Metrics())
    loop.leading.set()
    return loop


async def echo(request: Request) -> Response:
    return JSONResponse({"method": request.method, "body": (await request.body()).decode()})


async def shadow(_request: Request) -> Response:
    return Response("not the built-in one\n")


def started(limits: guarded.Limits | None = None, **options: object) -> server.Server:
    http = server.Server(
        make_runner(),
        host="127.0.0.1",
        port=0,
        webhook_secret=SECRET,
        limits=limits or guarded.Limits(header_timeout=HEADER_TIMEOUT, body_timeout=2.0),
        **options,  # type: ignore[arg-type]
    )
    http.start()
    return http


@pytest.fixture
def served() -> Iterator[server.Server]:
    routes = [
        Route("/api/v1/echo", echo, methods=["GET", "POST"]),
        Route("/healthz", shadow, methods=["GET", "POST"]),  # the built-in one wins
    ]
    http = started(routes=routes)
    try:
        yield http
    finally:
        http.close()


# --- routes -----------------------------------------------------------------------------------


def test_mounted_routes_answer_beside_the_built_in_ones(served: server.Server) -> None:
    base = f"http://127.0.0.1:{served.port}"
    with httpx.Client(base_url=base, timeout=5) as client:
        answer = client.post("/api/v1/echo", content=b"hello")
        assert (answer.status_code, answer.json()) == (200, {"method": "POST", "body": "hello"})
        assert client.get("/healthz").text == "ok\n", "the built-in route wins on its path"
        refused = client.post("/healthz")
        assert refused.status_code == 405, "a mounted route cannot take a built-in path"
        assert refused.headers["allow"] == "GET, HEAD"
        assert refused.json() == {
            "code": "METHOD_NOT_ALLOWED",
            "message": "POST is not allowed on /healthz; allowed: GET, HEAD",
            "details": {},
        }
        missing = client.get("/api/v1/nothing")
        assert missing.status_code == 404
        assert missing.json() == {
            "code": "NOT_FOUND",
            "message": "nothing is served at /api/v1/nothing",
            "details": {},
        }
        wrong = client.get("/webhook")
        assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST")
        assert "server" not in answer.headers or answer.headers["server"] == "dro"


def test_a_mounted_route_reading_a_body_beyond_the_limit_gets_413(served: server.Server) -> None:
    big = b"{" * (26 * 1024 * 1024)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it is read
        for at in range(0, len(big), 1024 * 1024):
            yield big[at : at + 1024 * 1024]

    with httpx.Client(timeout=10) as client:
        try:
            answer = client.post(f"http://127.0.0.1:{served.port}/api/v1/echo", content=chunks())
        except httpx.TransportError:  # the close beat the answer: the server stopped reading
            return
    assert answer.status_code == 413
    assert answer.json()["code"] == "PAYLOAD_TOO_LARGE"


def test_a_failing_route_is_500_and_one_event_not_uvicorn_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def broken(_request: Request) -> Response:
        raise RuntimeError("a bug in a route")

    http = started(routes=[Route("/api/v1/broken", broken)])
    try:
        with capture_logs() as events:
            with httpx.Client(timeout=5) as client:
                answer = client.get(f"http://127.0.0.1:{http.port}/api/v1/broken")
            assert answer.status_code == 500
            wait_for(lambda: [e for e in events if e["event"] == "http_handler_failed"], "event")
    finally:
        http.close()
    (failed,) = [e for e in events if e["event"] == "http_handler_failed"]
    assert failed["log_level"] == "error"
    assert failed["exc_info"][1].args == ("a bug in a route",)
    printed = capsys.readouterr()
    assert "Exception in ASGI application" not in printed.out + printed.err
    assert "Traceback" not in printed.out + printed.err


# --- connections ------------------------------------------------------------------------------


def test_a_kept_alive_connection_has_the_header_deadline_for_its_next_request(
    served: server.Server,
) -> None:
    with rawhttp.connect(served.port) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: dro\r\n\r\n")
        first = b""
        while not first.endswith(b"\r\n\r\nok\n"):
            first += conn.recv(65536)
        assert rawhttp.status(first) == 200
        assert b"connection: close" not in first.lower(), "kept alive"
        seconds, answer = rawhttp.trickle(
            conn, b"GET /healthz HTTP/1.1\r\n" + b"X-Slow: a\r\n" * 100, every=0.05, limit=5
        )
    assert seconds <= HEADER_TIMEOUT + 1.0, seconds
    assert rawhttp.status(answer) == 408, answer


def test_answers_on_a_kept_alive_connection_do_not_wait_for_a_delayed_ack(
    served: server.Server,
) -> None:
    # with Nagle on, the body waits for the ACK of the headers: ~40 ms each on Linux
    seconds = []
    with rawhttp.connect(served.port) as conn:
        for _ in range(21):
            began = time.monotonic()
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: dro\r\n\r\n")
            answer = b""
            while not answer.endswith(b"\r\n\r\nok\n"):
                answer += conn.recv(65536)
            seconds.append(time.monotonic() - began)
    assert sorted(seconds)[10] < 0.03, sorted(seconds)


def test_a_client_that_half_closes_after_its_request_gets_the_answer(
    served: server.Server,
) -> None:
    with rawhttp.connect(served.port) as conn:
        conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: dro\r\n\r\n")
        conn.shutdown(socket.SHUT_WR)
        answer = rawhttp.read_all(conn)
    assert rawhttp.status(answer) == 200
    assert b"dro_build_info" in answer


def test_an_early_answer_is_read_before_the_close(served: server.Server) -> None:
    # 256 KiB of a body the server will not read are on their way when it answers 413: the
    # short drain before the close lets the client read the answer instead of a reset
    head = rawhttp.request("POST", "/api/v1/echo", {"Content-Length": str(30 * 1024 * 1024)})
    with rawhttp.connect(served.port) as conn:
        conn.sendall(head + b"x" * (256 * 1024))
        answer = rawhttp.read_all(conn)
    assert rawhttp.status(answer) == 413, answer[:200]


def test_an_answer_sent_before_the_body_ends_the_connection() -> None:
    # a GET that announces a body it sends slowly: answered, then closed, not kept waiting
    http = started(guarded.Limits(header_timeout=30, body_timeout=30))
    try:
        with rawhttp.connect(http.port) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: dro\r\nContent-Length: 1000000\r\n\r\n")
            conn.sendall(b"x" * 10)
            began = time.monotonic()
            answer = rawhttp.read_all(conn, timeout=5)  # until the server's FIN
            assert time.monotonic() - began < 2.5, "closed at once, not at a deadline"
            assert rawhttp.status(answer) == 200
    finally:
        http.close()


def test_close_stops_the_thread_and_frees_the_port() -> None:
    before = {t.ident for t in threading.enumerate()}
    http = started()
    port = http.port
    content = b'{"ref": "refs/heads/elsewhere"}'
    signed = rawhttp.signed(SECRET, content)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
        assert client.get("/healthz").status_code == 200
        assert client.post("/webhook", content=content, headers=signed).status_code == 200
    idle = rawhttp.connect(port)  # an open connection does not hold the stop
    began = time.monotonic()
    http.close()
    assert time.monotonic() - began < listener.SHUTDOWN_SECONDS + 1
    idle.close()
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert [t.name for t in left] == [], "the server's thread and its workers are gone"
    with pytest.raises(ConnectionRefusedError):
        rawhttp.connect(port).close()


# --- TLS --------------------------------------------------------------------------------------


def make_certificate(folder: Path, name: str = "dro") -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made with the openssl CLI."""
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"),
            *("-nodes", "-days", "2", "-subj", "/CN=dro-test"),
            *("-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_https_with_a_mounted_certificate_is_verified_by_a_real_client(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path)
    http = started(tls=listener.Tls(cert_file=cert, key_file=key))
    try:
        trusted = ssl.create_default_context(cafile=str(cert))
        with httpx.Client(verify=trusted, timeout=5) as client:
            answer = client.get(f"https://127.0.0.1:{http.port}/healthz")
            assert (answer.status_code, answer.text) == (200, "ok\n")
            assert client.get(f"https://localhost:{http.port}/metrics").status_code == 200
        other, _ = make_certificate(tmp_path, "other")
        stranger = ssl.create_default_context(cafile=str(other))
        with (
            httpx.Client(verify=stranger, timeout=5) as client,
            pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
        ):
            client.get(f"https://127.0.0.1:{http.port}/healthz")
        plain = rawhttp.exchange(http.port, rawhttp.request("GET", "/healthz", {}), timeout=3)
        assert rawhttp.status(plain) == 0, "no plain HTTP answer on the TLS port"
    finally:
        http.close()


def test_a_tls_handshake_that_stalls_is_cut_off_at_the_header_deadline(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path)
    http = started(tls=listener.Tls(cert_file=cert, key_file=key))
    try:
        with rawhttp.connect(http.port) as conn:
            conn.sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello
            began = time.monotonic()
            done, _ = rawhttp.closed_by_server(conn, 10)
            seconds = time.monotonic() - began
        assert done
        assert seconds <= HEADER_TIMEOUT + 1.0, seconds
    finally:
        http.close()


CASES = {
    "no API, any address": ("0.0.0.0", False, False, False, False),
    "API on loopback": ("127.0.0.1", False, True, False, False),
    "API on IPv6 loopback": ("[::1]", False, True, False, False),
    "API on localhost": ("localhost", False, True, False, False),
    "API with TLS": ("0.0.0.0", True, True, False, False),
    "API behind an Ingress": ("0.0.0.0", False, True, True, False),
    "API in plain HTTP on all addresses": ("0.0.0.0", False, True, False, True),
    "API in plain HTTP on a pod address": ("10.1.2.3", False, True, False, True),
    "API in plain HTTP on a name": ("dro.example", False, True, False, True),
}


@pytest.mark.parametrize(
    ("host", "tls", "api", "allow", "refused"), CASES.values(), ids=CASES.keys()
)
def test_plain_http_is_refused_only_for_the_api_off_loopback(
    host: str, tls: bool, api: bool, allow: bool, refused: bool
) -> None:
    said = listener.plain_http_refusal(host, tls, api_enabled=api, allow_plain_http=allow)
    assert (said is not None) == refused, said
    if said is not None:
        assert "\n" not in said
        assert all(flag in said for flag in ("--tls-cert-file", "--allow-plain-http"))


def run_dro(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *("timeout", "60", DRO, "run", "--listen", "127.0.0.1:0", "--repo", "."),
            *("--leader-elect=false", *args),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_a_bad_tls_setting_is_one_line_and_exit_1(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path)
    _, other_key = make_certificate(tmp_path, "other")
    cases = {
        ("--tls-cert-file", str(cert)): "--tls-cert-file needs --tls-key-file too",
        ("--tls-cert-file", "nope.crt", "--tls-key-file", str(key)): "nope.crt: No such file",
        ("--tls-cert-file", str(key), "--tls-key-file", str(key)): "not a PEM certificate",
        ("--tls-cert-file", str(cert), "--tls-key-file", str(cert)): "not a PEM private key",
        ("--tls-cert-file", str(cert), "--tls-key-file", str(other_key)): "does not match",
    }
    for args, said in cases.items():
        done = run_dro(tmp_path, *args)
        assert done.returncode == 1, done.stderr
        assert said in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout == ""
