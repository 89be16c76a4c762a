"""REST API load benchmark: 2,000 reads per second and 200 writes per minute on loopback, held
for `--seconds`, against GET /healthz at the same read rate on the same server.

The server is `dro run` itself, in its own process, with the REST API on (RS256 Bearer tokens)
over plain HTTP on loopback, writing to a bare git repository on this machine through its git
store: each write is validated, committed and pushed to `main` there. dro has no clusters to
apply to, and makes one pass at start.

The load is open-loop: requests start on a fixed schedule whatever the answers do, over a pool
of keep-alive connections; a request that finds no free connection waits (that wait is in its
latency, and counted as queued). Reads are GETs of one of 50 seeded policies (every tenth a
list); writes alternate a POST of a new propagation policy and a PATCH of the last one. Latency
is from the scheduled start to the last byte of the answer; p50/p90/p99 for each kind. Errors are
answers other than 200/201 plus failed connections.

Afterwards every successful write must be exactly one commit: the commits the store made since
the run began are compared with the shas the writes were answered with (none lost, none
duplicated, none extra). The run fails (exit 1) otherwise, or when a rate was not held within
`--tolerance`.

Run: `.venv/bin/python bench/api.py [--seconds 60] [--reads-per-second 2000]
[--writes-per-minute 200]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AUDIENCE = "dro-bench"
SEEDED = 50
READ_CONNECTIONS = 32
WRITE_CONNECTIONS = 4
PP = "/api/v1/propagationpolicies"


# --- the server process -------------------------------------------------------------------

CLUSTER = """apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata:
  name: {name}
spec:
  kubeconfig:
    context: {name}
  capacity: {{cpu: "64", memory: 256Gi, pods: "1000"}}
"""


def source_repo(folder: Path) -> Path:
    """A bare repository `source.git` whose `main` holds two clusters (east, west): the remote
    `dro run` reads and the API writes to."""
    work, bare = folder / "work", folder / "source.git"
    (work / "clusters").mkdir(parents=True)
    for name in ("east", "west"):
        (work / "clusters" / f"{name}.yaml").write_text(CLUSTER.format(name=name))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@dro.invalid"]
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "two clusters"], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", str(bare), "main"], check=True)
    return bare


def free_port() -> int:
    """A port free on loopback now (dro run binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_dro(folder: Path, bare: Path, key_file: Path, port: int) -> subprocess.Popen[bytes]:
    """`dro run` as shipped, its REST API on over plain HTTP on loopback; no clusters to apply
    to, one pass at start and none after (the interval is an hour)."""
    dro = Path(sys.executable).with_name("dro")
    command = [str(dro), "run", "--repo", str(bare), "--ref", "main", "--leader-elect=false"]
    command += ["--listen", f"127.0.0.1:{port}", "--state-dir", str(folder / "state")]
    command += ["--interval", "1h", "--api-jwt-key-file", str(key_file)]
    command += ["--api-audience", AUDIENCE]
    # the audit events go to dro's stdout: keep them off the figures
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# --- the load generator -------------------------------------------------------------------


@dataclass
class Sample:
    """The answers of one kind of request."""

    started: float = field(default_factory=time.perf_counter)
    finished: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    queued: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


class Connection:
    """One keep-alive HTTP/1.1 connection, written by hand so the client costs little."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(head + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self.reader.readexactly(length) if length else b""
        return int(status_line.split()[1]), payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer = None


def request_head(method: str, path: str, token: str | None, body: bytes, media: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if body:
        lines += [f"Content-Type: {media}", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def call(
    pool: asyncio.Queue[Connection], sample: Sample, due: float, head: bytes, body: bytes = b""
) -> tuple[int, bytes]:
    if pool.empty():
        sample.queued += 1
    connection = await pool.get()
    try:
        status, payload = await connection.request(head, body)
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        connection.close()
        sample.errors += 1
        return 0, b""
    finally:
        pool.put_nowait(connection)
    sample.finished = time.perf_counter()
    sample.latencies.append(sample.finished - due)
    sample.statuses[status] = sample.statuses.get(status, 0) + 1
    if status not in (200, 201):
        sample.errors += 1
    return status, payload


async def paced(
    rate: float, seconds: float, start: float, fire: Callable[[int, float], Any]
) -> None:
    """Start `fire(i, due)` at `rate` per second from `start` for `seconds`, open-loop."""
    total = int(rate * seconds)
    tasks: set[asyncio.Task[Any]] = set()
    sent = 0
    while sent < total:
        now = time.perf_counter()
        due_count = min(total, int((now - start) * rate) + 1)
        while sent < due_count:
            task = asyncio.ensure_future(fire(sent, start + sent / rate))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            sent += 1
        await asyncio.sleep(max(0.0, start + sent / rate - time.perf_counter()))
    if tasks:
        await asyncio.gather(*tasks)


def pool_of(port: int, size: int) -> asyncio.Queue[Connection]:
    pool: asyncio.Queue[Connection] = asyncio.Queue()
    for _ in range(size):
        pool.put_nowait(Connection(port))
    return pool


def policy_body(name: str, clusters: list[str]) -> bytes:
    return json.dumps(
        {"name": name, "resourceType": "Deployment", "targetClusters": clusters}
    ).encode()


async def seed(port: int, token: str) -> None:
    pool = pool_of(port, 4)
    sample = Sample()
    for index in range(SEEDED):
        body = policy_body(f"seed-{index}", ["east"])
        head = request_head("POST", PP, token, body, "application/json")
        await call(pool, sample, time.perf_counter(), head, body)
    assert sample.errors == 0, f"seeding failed: {sample.statuses}"
    while not pool.empty():
        pool.get_nowait().close()


async def baseline(port: int, rate: float, seconds: float) -> Sample:
    pool, sample = pool_of(port, READ_CONNECTIONS), Sample()
    head = request_head("GET", "/healthz", None, b"", "")

    async def fire(_: int, due: float) -> None:
        await call(pool, sample, due, head)

    await paced(rate, seconds, time.perf_counter(), fire)
    while not pool.empty():
        pool.get_nowait().close()
    return sample


async def api_load(
    port: int, token: str, reads: float, writes_per_minute: float, seconds: float
) -> tuple[Sample, Sample, list[str]]:
    read_pool, write_pool = pool_of(port, READ_CONNECTIONS), pool_of(port, WRITE_CONNECTIONS)
    read_sample, write_sample = Sample(), Sample()
    written: list[str] = []
    one = [request_head("GET", f"{PP}/seed-{i}", token, b"", "") for i in range(SEEDED)]
    listing = request_head("GET", PP, token, b"", "")

    async def read(index: int, due: float) -> None:
        head = listing if index % 10 == 9 else one[index % SEEDED]
        await call(read_pool, read_sample, due, head)

    async def write(index: int, due: float) -> None:
        name = f"bench-{index // 2}"
        if index % 2 == 0:
            body = policy_body(name, ["east", "west"])
            head = request_head("POST", PP, token, body, "application/json")
        else:
            body = json.dumps({"targetClusters": ["west"]}).encode()
            head = request_head(
                "PATCH", f"{PP}/{name}", token, body, "application/merge-patch+json"
            )
        status, payload = await call(write_pool, write_sample, due, head, body)
        if status in (200, 201):
            written.append(json.loads(payload)["commit"])

    start = time.perf_counter()
    await asyncio.gather(
        paced(reads, seconds, start, read),
        paced(writes_per_minute / 60.0, seconds, start, write),
    )
    for pool in (read_pool, write_pool):
        while not pool.empty():
            pool.get_nowait().close()
    return read_sample, write_sample, written


def commits_of(bare: Path) -> list[str]:
    """The commits on the source branch, oldest first: what the API's writes pushed."""
    listed = subprocess.run(
        ["git", "-C", str(bare), "rev-list", "--reverse", "main"],
        check=True,
        capture_output=True,
        text=True,
    )
    return listed.stdout.split()


# --- the report -----------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def row(label: str, target: float, seconds: float, sample: Sample) -> tuple[str, bool, float]:
    done = len(sample.latencies)
    # answers over the time from the phase's start to its last answer: a server that falls
    # behind stretches the phase, and the rate it held shows it
    achieved = done / max(seconds, sample.finished - sample.started)
    ms = [1000 * value for value in sample.latencies]
    line = (
        f"{label:<22} {target:>8.1f} {achieved:>9.1f} {done:>8} {sample.errors:>6} "
        f"{sample.queued:>7} {percentile(ms, 0.5):>8.2f} {percentile(ms, 0.9):>8.2f} "
        f"{percentile(ms, 0.99):>8.2f}"
    )
    return line, sample.errors == 0, achieved


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--reads-per-second", type=float, default=2000.0)
    parser.add_argument("--writes-per-minute", type=float, default=200.0)
    parser.add_argument("--tolerance", type=float, default=0.05, help="rate shortfall allowed")
    args = parser.parse_args(argv)
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {
        "sub": "bench",
        "aud": AUDIENCE,
        "exp": now + 3600 + int(3 * args.seconds),
        "iat": now,
    }
    token = jwt.encode(
        {**claims, "scope": "policies:read policies:write"}, private, algorithm="RS256"
    )
    with tempfile.TemporaryDirectory(prefix="dro-bench-api-") as tmp:
        folder = Path(tmp)
        key_file = folder / "key.pem"
        key_file.write_bytes(
            private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        bare, port = source_repo(folder), free_port()
        server = start_dro(folder, bare, key_file, port)
        try:
            if not asyncio.run(answering(port, server)):
                print("bench/api.py: dro run did not start", file=sys.stderr)
                return 1
            return asyncio.run(measure(port, bare, token, args))
        finally:
            server.terminate()
            server.wait(timeout=30)


async def answering(port: int, server: subprocess.Popen[bytes]) -> bool:
    """Whether `dro run` answers GET /healthz within 60 s (False when it exits first)."""
    deadline = time.monotonic() + 60
    head = request_head("GET", "/healthz", None, b"", "")
    while time.monotonic() < deadline and server.poll() is None:
        connection = Connection(port)
        try:
            status, _ = await connection.request(head)
            if status == 200:
                return True
        except OSError:
            pass
        finally:
            connection.close()
        await asyncio.sleep(0.1)
    return False


async def measure(port: int, bare: Path, token: str, args: argparse.Namespace) -> int:
    seconds, reads, writes = args.seconds, args.reads_per_second, args.writes_per_minute
    await seed(port, token)
    before = commits_of(bare)
    print(f"baseline: GET /healthz at {reads:.0f}/s for {seconds:.0f}s …", file=sys.stderr)
    health = await baseline(port, reads, seconds)
    print(
        f"API: {reads:.0f} reads/s and {writes:.0f} writes/min for {seconds:.0f}s …",
        file=sys.stderr,
    )
    read_sample, write_sample, written = await api_load(port, token, reads, writes, seconds)
    after = commits_of(bare)
    made = after[len(before) :]

    print(f"REST API on loopback, {seconds:.0f} s per phase, git store (`dro run`)")
    print(
        f"{'':<22} {'target/s':>8} {'achieved':>9} {'answers':>8} {'errors':>6} {'queued':>7}"
        f" {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}"
    )
    ok = True
    for label, target, sample in (
        ("baseline GET /healthz", reads, health),
        ("API reads", reads, read_sample),
        ("API writes", writes / 60.0, write_sample),
    ):
        line, clean, achieved = row(label, target, seconds, sample)
        print(line)
        held = achieved >= target * (1 - args.tolerance)
        ok = ok and clean and held
    lost = sorted(set(written) - set(made))
    extra = sorted(set(made) - set(written))
    duplicated = len(made) - len(set(made))
    print(
        f"commits: {len(made)} made for {len(written)} successful writes; "
        f"lost {len(lost)}, extra {len(extra)}, duplicated {duplicated}"
    )
    ok = ok and not lost and not extra and not duplicated and len(made) == len(written)
    print("held" if ok else "NOT held: see the rows above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
