"""`dro run` as a real process for tests: started under `timeout` so it stops by itself,
bound to 127.0.0.1, watched through its own endpoints, and killed by its PID."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from reconciler.service import webhook

DRO = str(Path(sys.executable).parent / "dro")


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(condition: Callable[[], object], what: str, timeout: float = 30.0) -> object:
    """Poll `condition` until it returns something true; its value. Fails naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


class Service:
    """One `dro run` process and its HTTP endpoints."""

    def __init__(self, workdir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log = workdir / f"dro-run-{self.port}.log"
        self._out = self.log.open("wb")
        command = ["timeout", "600", DRO, "run", "--listen", f"127.0.0.1:{self.port}", *args]
        self.process = subprocess.Popen(
            command,
            cwd=workdir,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        wait_for(self.healthy, f"dro run on port {self.port} to answer /healthz")

    def get(self, path: str) -> tuple[int, str]:
        """GET a path; (status, body), (0, "") while nothing listens."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
        except OSError:
            if self.process.poll() is not None:
                raise AssertionError(f"dro run exited:\n{self.log.read_text()}") from None
            return 0, ""

    def healthy(self) -> bool:
        """Whether /healthz answers 200."""
        return self.get("/healthz")[0] == 200

    def metric(self, name: str, **labels: str) -> float:
        """One sample of /metrics (0 when absent)."""
        wanted = name + (
            "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else ""
        )
        for line in self.get("/metrics")[1].splitlines():
            if line.startswith(wanted + " "):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def push_event(self, secret: bytes, ref: str = "refs/heads/main") -> int:
        """POST a GitHub push event signed with `secret`; the HTTP status."""
        body = json.dumps({"ref": ref, "after": "0" * 40, "pusher": {"name": "test"}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/webhook",
            data=body,
            headers={
                "X-Hub-Signature-256": webhook.github_signature(secret, body),
                "X-GitHub-Event": "push",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    def events(self) -> list[dict[str, object]]:
        """The JSON events it logged so far."""
        found = []
        for line in self.log.read_text().splitlines():
            if line.startswith("{"):
                found.append(json.loads(line))
        return found

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait; its exit code."""
        os.killpg(self.process.pid, signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL, as a node failure or an OOM kill would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def close(self) -> None:
        """Make sure it is gone."""
        if self.process.poll() is None:
            self.kill()
        self._out.close()
