"""`dro run` against unauthenticated, hostile clients, as black-box HTTP over real sockets.

These tests know only the listening port, the process's /proc entry and its log: they must
still pass when the service moves onto another HTTP server. One `dro run` serves them all,
with small limits so that they run fast: headers within 1s, a body within 2s, 8 connections,
2 webhooks at a time."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import rawhttp
from tests.conftest import make_source_repo
from tests.service import Service, wait_for

SECRET = b"hostile-secret"
HEADER_TIMEOUT, BODY_TIMEOUT, MAX_CONNECTIONS, WEBHOOKS = 1.0, 2.0, 8, 2
MB = 1024 * 1024


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("hostile")
    repo = make_source_repo(tmp / "src")
    (tmp / "secret").write_bytes(SECRET)
    running = Service(
        tmp,
        *("--repo", str(repo.bare), "--state-dir", str(tmp / "state")),
        *(
            "--interval",
            "10m",
            "--leader-elect=false",
            "--webhook-secret-file",
            str(tmp / "secret"),
        ),
        *(
            "--http-header-timeout",
            f"{HEADER_TIMEOUT:g}s",
            "--http-body-timeout",
            f"{BODY_TIMEOUT:g}s",
        ),
        *("--http-max-connections", str(MAX_CONNECTIONS)),
        *("--webhook-concurrency", str(WEBHOOKS)),
    )
    try:
        wait_for(lambda: running.metric("dro_reconcile_total", result="success"), "first pass")
        yield running
    finally:
        running.close()


def dro_pid(service: Service) -> int:
    return rawhttp.child_pid(service.process.pid)


def post(headers: dict[str, str], content: bytes = b"") -> bytes:
    return rawhttp.request("POST", "/webhook", headers, content)


# --- body limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("length", ["419430400", "-1"], ids=["400 MB declared", "minus one"])
def test_a_400_mb_upload_is_answered_at_once_and_never_read(service: Service, length: str) -> None:
    pid = dro_pid(service)
    peak_before = rawhttp.proc_status(pid, "VmHWM")
    with rawhttp.connect(service.port, timeout=10) as conn:
        conn.sendall(post({**rawhttp.signed(SECRET, b"x"), "Content-Length": length}))
        done, answer = rawhttp.closed_by_server(conn, 5.0)
        assert done, "answered on the headers alone, without waiting for a body"
        assert rawhttp.status(answer) == (413 if length.isdigit() else 400)
        sent = 0
        try:
            for _ in range(400):
                conn.sendall(b"y" * MB)
                sent += 1
        except OSError:
            pass
    assert sent < 64, f"the server kept reading: {sent} MB went in"
    grown = rawhttp.proc_status(pid, "VmHWM") - peak_before
    assert grown < 20 * 1024, f"peak RSS grew by {grown} kB"


def test_a_chunked_body_is_bounded_by_the_same_limit(service: Service) -> None:
    pid = dro_pid(service)
    peak_before = rawhttp.proc_status(pid, "VmHWM")
    chunk = f"{MB:x}\r\n".encode() + b"z" * MB + b"\r\n"
    headers = {**rawhttp.signed(SECRET, b"x"), "Transfer-Encoding": "chunked"}
    with rawhttp.connect(service.port, timeout=10) as conn:
        conn.sendall(post(headers))
        sent = 0
        try:
            for _ in range(400):
                conn.sendall(chunk)
                sent += 1
        except OSError:
            pass
        answer = rawhttp.read_all(conn)
    assert rawhttp.status(answer) in (413, 0), answer[:200]  # 0: the reset beat the answer
    assert sent < 90, f"the server kept reading: {sent} MB went in"
    grown = rawhttp.proc_status(pid, "VmHWM") - peak_before
    assert grown < 80 * 1024, f"peak RSS grew by {grown} kB (the limit is 25 MB)"


def test_a_small_chunked_webhook_is_read_and_verified(service: Service) -> None:
    content = json.dumps({"ref": "refs/heads/elsewhere", "after": "0" * 40}).encode()
    chunks = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (content[:9], content[9:]))
    headers = {**rawhttp.signed(SECRET, content), "Transfer-Encoding": "chunked"}
    answer = rawhttp.exchange(service.port, post(headers, chunks + b"0\r\n\r\n"))
    assert rawhttp.status(answer) == 200, answer
    assert "refs/heads/elsewhere" in rawhttp.body(answer), "the decoded body was verified"


MALFORMED = {
    "letters": ({"Content-Length": "abc"}, 400),
    "negative": ({"Content-Length": "-1"}, 400),
    "plus sign": ({"Content-Length": "+5"}, 400),
    "empty": ({"Content-Length": ""}, 400),
    "two numbers": ({"Content-Length": "1 2"}, 400),
    "beyond int64": ({"Content-Length": "99999999999999999999999"}, 400),
    "above the limit": ({"Content-Length": str(26 * MB)}, 413),
    "conflicting": ({"Content-Length": "5\r\nContent-Length: 7"}, 400),
    "conflicting in one": ({"Content-Length": "5, 7"}, 400),
    "length and chunked": ({"Content-Length": "5", "Transfer-Encoding": "chunked"}, 400),
    "chunked not last": ({"Transfer-Encoding": "chunked, gzip"}, 400),
    "unknown coding": ({"Transfer-Encoding": "gzip"}, 501),
}


@pytest.mark.parametrize(("headers", "expected"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_length_gets_400(
    service: Service, headers: dict[str, str], expected: int
) -> None:
    answer = rawhttp.exchange(service.port, post({**rawhttp.signed(SECRET, b"hello"), **headers}))
    assert rawhttp.status(answer) == expected, answer


@pytest.mark.parametrize("size", ["zz", "-5", "1" * 40])
def test_a_malformed_chunk_size_gets_400(service: Service, size: str) -> None:
    headers = {**rawhttp.signed(SECRET, b"x"), "Transfer-Encoding": "chunked"}
    answer = rawhttp.exchange(service.port, post(headers, f"{size}\r\nabc\r\n0\r\n\r\n".encode()))
    assert rawhttp.status(answer) == 400, answer


def test_headers_beyond_64_kib_get_431(service: Service) -> None:
    many = {f"X-Padding-{i}": "p" * 1000 for i in range(80)}
    answer = rawhttp.exchange(service.port, rawhttp.request("GET", "/healthz", many))
    assert rawhttp.status(answer) == 431, answer[:200]


# --- timeouts ---------------------------------------------------------------------------------


def test_a_client_sending_its_headers_slowly_is_cut_off_on_time(service: Service) -> None:
    with rawhttp.connect(service.port) as conn:
        seconds, answer = rawhttp.trickle(
            conn, b"GET /healthz HTTP/1.1\r\n" + b"X-Slow: a\r\n" * 100, every=0.05, limit=10
        )
    assert HEADER_TIMEOUT - 0.2 <= seconds <= HEADER_TIMEOUT + 1.0, seconds
    assert answer == b"" or rawhttp.status(answer) == 408, answer


def test_a_client_that_sends_nothing_is_cut_off_on_time(service: Service) -> None:
    with rawhttp.connect(service.port) as conn:
        began = time.monotonic()
        done, answer = rawhttp.closed_by_server(conn, 10)
        seconds = time.monotonic() - began
    assert done
    assert seconds <= HEADER_TIMEOUT + 1.0, seconds
    assert answer == b"" or rawhttp.status(answer) == 408, answer


def test_a_client_sending_its_body_slowly_is_cut_off_on_time(service: Service) -> None:
    content = b"{" + b" " * 10_000 + b"}"
    with rawhttp.connect(service.port) as conn:
        conn.sendall(post({**rawhttp.signed(SECRET, content), "Content-Length": str(len(content))}))
        seconds, answer = rawhttp.trickle(conn, content, every=0.05, limit=15)
    assert seconds <= BODY_TIMEOUT + 1.0, seconds
    assert answer == b"" or rawhttp.status(answer) == 408, answer


# --- concurrency ------------------------------------------------------------------------------


def test_probes_answer_while_slow_clients_hold_every_connection(service: Service) -> None:
    pid = dro_pid(service)
    threads_before = rawhttp.proc_status(pid, "Threads")
    slow = []
    try:
        for _ in range(3 * MAX_CONNECTIONS):
            conn = rawhttp.connect(service.port)
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: slow")  # never finished
            slow.append(conn)
        for path in ("/healthz", "/metrics"):
            began = time.monotonic()
            answer = rawhttp.exchange(service.port, rawhttp.request("GET", path, {}), timeout=3)
            assert rawhttp.status(answer) == 200, (path, answer[:200])
            assert time.monotonic() - began < 1.0, "answered at once, not after a slow client"
        threads = rawhttp.proc_status(pid, "Threads")
        assert threads <= threads_before + MAX_CONNECTIONS + 2, "one thread per client, capped"
    finally:
        for conn in slow:
            conn.close()


def test_webhooks_beyond_the_cap_get_503_and_probes_still_answer(tmp_path: Path) -> None:
    # its own service, with a body deadline far beyond the test: the held webhooks cannot
    # time out before the one beyond the cap is sent, however loaded the machine is
    (tmp_path / "secret").write_bytes(SECRET)
    running = Service(
        tmp_path,
        *("--repo", str(make_source_repo(tmp_path / "src").bare), "--interval", "10m"),
        *("--state-dir", str(tmp_path / "state"), "--leader-elect=false"),
        *("--webhook-secret-file", str(tmp_path / "secret"), "--http-body-timeout", "5m"),
        *("--webhook-concurrency", str(WEBHOOKS)),
    )
    content = b"{" + b" " * 100 + b"}"
    headers = {**rawhttp.signed(SECRET, content), "Content-Length": str(len(content))}
    slow = []
    try:
        for _ in range(WEBHOOKS):
            conn = rawhttp.connect(running.port)
            conn.sendall(post(headers, content[:10]))  # headers done, body pending
            slow.append(conn)
        held = "dro_webhook_requests_in_flight"
        wait_for(lambda: running.metric(held) == WEBHOOKS, "the webhooks to hold every slot")
        answer = rawhttp.exchange(running.port, post(headers, content))
        assert rawhttp.status(answer) == 503, answer
        assert b"\r\nretry-after: " in answer.lower()
        assert running.metric("dro_webhook_requests_total", result="busy") == 1
        probe = rawhttp.exchange(running.port, rawhttp.request("GET", "/healthz", {}))
        assert rawhttp.status(probe) == 200
        for conn in slow:
            rawhttp.reset(conn)
        wait_for(lambda: running.metric(held) == 0, "the slots of the clients that left")
        answer = rawhttp.exchange(running.port, post(headers, content))
        assert rawhttp.status(answer) == 200, "a slot is free again"
    finally:
        for conn in slow:
            conn.close()
        running.close()


# --- clients that go away ---------------------------------------------------------------------


def test_a_client_that_disconnects_is_one_log_line_not_a_traceback(service: Service) -> None:
    content = json.dumps({"ref": "refs/heads/main"}).encode()
    headers = {**rawhttp.signed(SECRET, content), "Content-Length": str(len(content))}
    cases = [
        b"GET /heal",  # in the request line
        b"POST /webhook HTTP/1.1\r\nContent-Length: 4",  # in the headers
        post(headers, content[:5]),  # in the body
        rawhttp.request("GET", "/metrics", {}),  # before the answer is read
    ]
    log_before = service.log.read_text()
    for data in cases:
        conn = rawhttp.connect(service.port)
        conn.sendall(data)
        rawhttp.reset(conn)
    # the reset cases are logged as they are noticed; the probe waits for each of them
    for data in cases:
        conn = rawhttp.connect(service.port)
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        rawhttp.read_all(conn, timeout=3)
        conn.close()
    wait_for(
        lambda: (
            service.log.read_text().count("http_client_gone")
            >= log_before.count("http_client_gone") + 3
        ),
        "the disconnects to be logged",
        timeout=5,
    )
    assert rawhttp.status(rawhttp.exchange(service.port, rawhttp.request("GET", "/healthz", {})))
    text = service.log.read_text()
    assert "Traceback" not in text
    assert all(line.startswith("{") for line in text.splitlines() if line), "one JSON event each"


def test_the_log_has_no_traceback_after_every_hostile_test(service: Service) -> None:
    text = service.log.read_text()
    assert "Traceback" not in text
    for line in text.splitlines():
        json.loads(line)
    assert dro_pid(service), "still running"
    assert Path(f"/proc/{dro_pid(service)}").exists()
