"""The soak test's processes: a `git daemon` that can go down and come back, API emulators
that record what they answered, and `dro run` instances with their logs (see `tests/soak.py`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.kubeapi import KubeAPI
from tests.kubeapi.server import HttpResponse
from tests.service import Service, free_port, wait_for

CLUSTER_TIMEOUT = 1.0
"""`--cluster-timeout`; an injected delay is longer than this, so requests time out."""
SLOW = 1.5
LEASE_SECONDS = 2.0
"""`--lease-duration` of the two replicas: the shortest `dro run` accepts."""
INVENTORY_NAMESPACE = "dro-system"
INVENTORY_NAME = "dro-inventory"
OUTPUT_BRANCH = "dro/rendered"
INJECTED = "soak: injected fault"
Event = dict[str, Any]


def when(event: Mapping[str, Any]) -> float:
    """The wall-clock time of a logged event (its ISO `timestamp`), in seconds."""
    return datetime.fromisoformat(str(event["timestamp"])).timestamp()


# --- processes ------------------------------------------------------------------------------


class GitDaemon:
    """A `git daemon` on 127.0.0.1 serving `base`, that can be stopped and started again on
    the same port (as a git server that goes down and comes back)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        """The git:// URL of a repository under `base`."""
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        """Serve (push enabled), and wait until the port answers."""
        command = [
            *("timeout", "900", "git", "daemon", "--reuseaddr", "--listen=127.0.0.1"),
            *(f"--port={self.port}", f"--base-path={self.base}", "--export-all"),
            *("--enable=receive-pack", str(self.base)),
        ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        process = self.process

        def answers() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"git daemon exited with {process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                return False

        wait_for(answers, f"git daemon on port {self.port}", timeout=15)

    def stop(self) -> None:
        """Kill it and every connection it serves (its process group), by PID."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    @property
    def up(self) -> bool:
        """Whether it runs."""
        return self.process is not None


@dataclass(frozen=True, slots=True)
class Noted:
    """One request an emulator noted: arrival time, what, and how it was answered."""

    cluster: str
    at: float
    method: str
    path: str
    dry_run: bool
    status: int
    delayed: bool
    """Held by an injected delay longer than the client's timeout: the client gave up."""
    injected: bool
    """Answered with an injected failure."""
    user: str = ""
    """Who sent it (`sender`)."""


@dataclass(frozen=True, slots=True)
class Written:
    """One write an emulator received (a mutating request without dryRun): when it arrived,
    who sent it (the bearer token of the sender's kubeconfig user, as an API server's audit
    log names the user), what, and the answer."""

    cluster: str
    at: float
    user: str
    method: str
    path: str
    status: int


MUTATING = ("POST", "PUT", "PATCH", "DELETE")


def user_kubeconfig(api: KubeAPI, path: Path, context: str, user: str) -> Path:
    """Add `api` to the kubeconfig at `path` as `context`, its user's token `user`, so that
    the emulator's log tells which process sent each request."""
    api.kubeconfig(path, context=context)
    config = yaml.safe_load(path.read_text())
    for entry in config["users"]:
        if entry["name"] == f"{context}-user":
            entry["user"]["token"] = user
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def sender(headers: Mapping[str, str]) -> str:
    """The bearer token a request was sent with (header names in any case)."""
    found = {name.lower(): value for name, value in headers.items()}
    return found.get("authorization", "").removeprefix("Bearer ")


class RecordingAPI(KubeAPI):
    """A `KubeAPI` that notes every DELETE and every request that failed or was held, and
    every write with its sender (`written`)."""

    def __init__(self, cluster: str, **options: Any) -> None:
        super().__init__(**options)
        self.cluster = cluster
        self.noted: list[Noted] = []
        self.written: list[Written] = []
        self._noted_lock = threading.Lock()
        self._gate: tuple[str, threading.Event] | None = None
        self.waiting = 0
        """Writes held at the gate (`hold_writes`) right now."""

    def hold_writes(self, user: str) -> threading.Event:
        """Hold every write `user` sends, before it is handled, until the returned event is
        set: its sender then waits for an answer, so a test can stop it at a known point."""
        released = threading.Event()
        self._gate = (user, released)
        return released

    def _hold(self, method: str, query: str, headers: Mapping[str, str]) -> None:
        gate = self._gate
        if gate is None or method not in MUTATING or "dryRun=All" in query:
            return
        if sender(headers) != gate[0]:
            return
        with self._noted_lock:
            self.waiting += 1
        gate[1].wait(timeout=60)
        with self._noted_lock:
            self.waiting -= 1

    def _answer(
        self, method: str, raw_path: str, headers: Mapping[str, str], body: bytes
    ) -> HttpResponse:
        arrived = time.time()
        path, _, query = raw_path.partition("?")
        self._hold(method, query, headers)
        delayed = self.faults.delay_for(method, path) > CLUSTER_TIMEOUT
        response = super()._answer(method, raw_path, headers, body)
        if method in MUTATING and "dryRun=All" not in query:
            write = Written(self.cluster, arrived, sender(headers), method, path, response.code)
            with self._noted_lock:
                self.written.append(write)
        injected = response.code >= 400 and response.body.get("message") == INJECTED
        if method == "DELETE" or response.code >= 500 or delayed or injected:
            noted = Noted(
                self.cluster,
                arrived,
                method,
                path,
                "dryRun=All" in query,
                response.code,
                delayed,
                injected,
                sender(headers),
            )
            with self._noted_lock:
                self.noted.append(noted)
        return response


def dro_child(service: Service) -> int:
    """The PID of the `dro` process itself (`Service.process` is its `timeout` wrapper)."""
    pid = service.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, f"expected one child of the timeout wrapper, got {children}"
    return int(children[0])


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """VmRSS of a process (or another field of its status: RssAnon, RssFile), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for PID {pid}")


class Tail:
    """The JSON events of one log file, read as it grows; counts of ended passes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.events: list[Event] = []
        self.results: Counter[str] = Counter()
        self.sources: dict[int, set[str]] = {}
        """Pass number → the source commits its (sub-)passes loaded."""
        self.ended: dict[int, str] = {}
        """Pass number → its result."""

    def poll(self) -> list[Event]:
        """Read what was appended since the last poll; the new events."""
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        new = []
        for line in lines:
            if not line.startswith(b"{"):
                continue
            event = json.loads(line)
            new.append(event)
            name, number = event.get("event"), event.get("pass")
            if name == "source_loaded":
                self.sources.setdefault(number, set()).add(event["source"])
            elif name == "pass_ended":
                self.ended[number] = event["result"]
                self.results[event["result"]] += 1
        self.events += new
        return new

    @property
    def passes(self) -> int:
        """Passes that ended so far."""
        return len(self.ended)


@dataclass
class Instance:
    """One `dro run` process of the soak run and how it ended."""

    service: Service
    tail: Tail
    started: float
    ended: float | None = None
    end: str | None = None
    """"killed" (SIGKILL), "terminated" (SIGTERM) or None while it runs."""
    exit_code: int | None = None
    name: str = ""
    """Its identity: the Lease holder's name and its kubeconfig user's token."""
    stops: list[tuple[float, float]] = field(default_factory=list)
    """(SIGSTOP, SIGCONT) times: paused past its Lease."""


class LeaseAPI(KubeAPI):
    """The emulator that holds the Lease, noting each holder from the Lease writes it
    accepted: (time, holderIdentity), "" when released."""

    def __init__(self) -> None:
        super().__init__()
        self.holders: list[tuple[float, str]] = []
        self._holders_lock = threading.Lock()

    def _answer(
        self, method: str, raw_path: str, headers: Mapping[str, str], body: bytes
    ) -> HttpResponse:
        response = super()._answer(method, raw_path, headers, body)
        if method in ("POST", "PUT") and "/leases" in raw_path and response.code < 300:
            holder = str((response.body.get("spec") or {}).get("holderIdentity") or "")
            with self._holders_lock:
                if not self.holders or self.holders[-1][1] != holder:
                    self.holders.append((time.time(), holder))
        return response

    def holder(self) -> str:
        """The Lease's holder now ("" when none)."""
        lease = self.get("coordination.k8s.io", "v1", "leases", "default", "dro")
        return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
