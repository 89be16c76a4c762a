"""Incremental passes: whole passes of a real `dro run`, cold and warm, on one large repo.

The repo is bench/schedule.py's fleet (default 1,000 clusters × 10,000 Deployments under 20
policies) with room for every workload, committed to a bare repository that `dro run` reads
over file://. `dro run` runs as shipped (`--log-format json`, an hour's interval, a webhook
secret), offline: no cluster is reached, so the figures are load, validate, schedule, render
and commit. Each pass's time is the `seconds` of its `pass_ended` event, measured by `dro run`
itself.

- `full (cold)`: the first pass of the process, nothing cached: the baseline.
- `settle`: passes on the same source until one makes no commit (re-balancing moves
  replicas for some passes after the first placement; at most `SETTLE_LIMIT`). Their count
  is reported.
- `no change`: a signed push webhook for the same commit; the pass must make no commit.
  Target < 0.3 s.
- `one workload`: one Deployment's replicas changed and pushed; then the signed webhook.
  Reported: the pass, and the wall time from the webhook's POST to the new commit on the
  output branch. Targets < 0.5 s and < 2 s.

Run: `.venv/bin/python bench/incremental.py [--clusters N] [--workloads N] [--json]`.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import schedule as fleet  # bench/schedule.py: the fleet generator

SECRET = b"bench-webhook-secret"
SETTLE_LIMIT = 40
"""Passes allowed for settling: every added cluster starts Filling, and re-balancing fills
them under its churn budget, a few hundred replicas a pass on the largest fleet."""
TARGETS = {"no change": 0.3, "one workload": 0.5, "webhook to commit": 2.0}
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@dro.invalid"]


def source(folder: Path, clusters: int, workloads: int) -> tuple[Path, Path]:
    """The fleet in a work tree, committed and pushed to a bare `source.git`. Its clusters
    have 8 times bench/schedule.py's capacity, so that every workload fits and the fleet
    settles: an over-full fleet re-balances a little on every pass, and never idles."""
    work, bare = folder / "work", folder / "source.git"
    fleet.write_repo(work, clusters, workloads)
    for i in range(clusters):
        doc = fleet.cluster_doc(i)
        spec = doc["spec"]
        assert isinstance(spec, dict)
        spec["capacity"] = {"cpu": str(8 * (64 + 64 * (i % 4))), "memory": f"{8 * 256}Gi"}
        (work / "clusters" / f"c{i:04d}.yaml").write_text(json.dumps(doc))
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    commit(work, bare, "the fleet")
    return work, bare


def commit(work: Path, bare: Path, message: str) -> None:
    """Commit everything in `work` and push it to `bare`'s main."""
    subprocess.run([*GIT, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(work), "commit", "-qm", message], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", str(bare), "main"], check=True)


def head(bare: Path, branch: str) -> str | None:
    """The sha of `branch` in `bare`, or None."""
    found = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or None


def free_port() -> int:
    """A port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Dro:
    """`dro run` as a process; the `pass_ended` events of its log in a queue."""

    def __init__(self, folder: Path, bare: Path) -> None:
        secret = folder / "webhook-secret"
        secret.write_bytes(SECRET)
        self.port = free_port()
        command = [str(Path(sys.executable).with_name("dro")), "run", "--repo", f"file://{bare}"]
        command += ["--state-dir", str(folder / "state"), "--leader-elect=false"]
        command += ["--interval", "1h", "--listen", f"127.0.0.1:{self.port}"]
        command += ["--webhook-secret-file", str(secret), "--log-format", "json"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.ended: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # a service logs to its stdout, JSON per line
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and event.get("event") == "pass_ended":
                self.ended.put(event)

    def next_pass(self, timeout: float = 1800.0) -> dict[str, Any]:
        """The next `pass_ended` event."""
        return self.ended.get(timeout=timeout)

    def push_webhook(self, sha: str) -> float:
        """POST a signed GitHub push event for main at `sha`; the time it was sent."""
        body = json.dumps({"ref": "refs/heads/main", "after": sha}).encode()
        signature = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/webhook",
            data=body,
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "push",
                "X-GitHub-Delivery": f"bench-{time.monotonic_ns()}",
                "X-Hub-Signature-256": signature,
            },
        )
        sent = time.monotonic()
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()
        return sent

    def wait_ready(self) -> None:
        """Until the webhook endpoint answers (the server is up)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("dro run did not start listening")

    def stop(self) -> None:
        """SIGTERM, then wait."""
        self.process.terminate()
        self.process.wait(timeout=60)


def wait_for_change(bare: Path, branch: str, old: str | None, deadline: float) -> float:
    """Poll `branch` until it moves from `old`; the monotonic time it was seen moved."""
    while time.monotonic() < deadline:
        if head(bare, branch) != old:
            return time.monotonic()
        time.sleep(0.01)
    raise TimeoutError(f"{branch} did not move")


def measure(clusters: int, workloads: int) -> dict[str, Any]:
    """Every figure of the run, in seconds."""
    out = "dro/rendered"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        work, bare = source(folder, clusters, workloads)
        dro = Dro(folder, bare)
        try:
            figures: dict[str, Any] = {"full (cold)": dro.next_pass()["seconds"]}
            dro.wait_ready()
            sha = head(bare, "main")
            assert sha is not None
            settle = []
            for _ in range(SETTLE_LIMIT):
                before = head(bare, out)
                dro.push_webhook(sha)
                settle.append(dro.next_pass()["seconds"])
                if head(bare, out) == before:
                    break
            figures["settle passes"] = len(settle)
            figures["settle (each)"] = settle
            quiet = []
            for _ in range(3):
                before = head(bare, out)
                dro.push_webhook(sha)
                quiet.append(dro.next_pass()["seconds"])
                figures["no-change commits"] = int(head(bare, out) != before)
            figures["no change"] = sorted(quiet)[1]
            target = work / "workloads" / "bench" / "apps-0000.yaml"
            target.write_text(target.read_text().replace("replicas: 1\n", "replicas: 2\n", 1))
            commit(work, bare, "one workload scaled")
            changed = head(bare, "main")
            assert changed is not None
            before = head(bare, out)
            sent = dro.push_webhook(changed)
            seen = wait_for_change(bare, out, before, time.monotonic() + 1800)
            figures["one workload"] = dro.next_pass()["seconds"]
            figures["webhook to commit"] = seen - sent
        finally:
            dro.stop()
    return figures


def main(argv: list[str]) -> int:
    """Run, print the table (or JSON), exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1_000)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args(argv)
    figures = measure(arguments.clusters, arguments.workloads)
    baseline = figures["full (cold)"]
    missed = [name for name, limit in TARGETS.items() if figures[name] >= limit]
    if arguments.json:
        print(json.dumps({**figures, "missed": missed}, indent=2))
        return 1 if missed else 0
    print(f"dro run, {arguments.clusters} clusters × {arguments.workloads} workloads, offline")
    print(f"  full (cold)         {baseline:9.3f} s   baseline")
    print(f"  settle              {figures['settle passes']} passes: {figures['settle (each)']}")
    for name, limit in TARGETS.items():
        ratio = baseline / figures[name] if figures[name] else float("inf")
        verdict = "ok" if name not in missed else "MISSED"
        print(f"  {name:<19} {figures[name]:9.3f} s   {ratio:7.1f}× faster   < {limit} s {verdict}")
    print(f"  commits made by the no-change passes: {figures['no-change commits']}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
