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

With `--online N` the first N clusters are served by the project's Kubernetes API emulator
(`tests.kubeapi`, in this process, one server per cluster on 127.0.0.1, Nodes as large as the
cluster's declared capacity, the workloads' Namespace `bench` made by the clusters' admins, and
Deployments Healthy as soon as they are written), and `dro run`
gets `--kubeconfig` with a context per cluster: its passes observe, apply and survey drift
on them. Each pass is then also reported with the API writes the emulators received during it
(non-dry-run POST, PUT, PATCH and DELETE, from their own request record), its requests, and
the CPU seconds `dro run` used in it, and those this process used meanwhile (`emulators
cpu`: nearly all of them the emulators answering, which share its one interpreter). A
no-change pass must make 0 writes (target), and 0 commits. It reuses the connections of the
passes before it (no discovery) and reads each emulated cluster 7 times: its Nodes, Pods and
four workload kinds for observe, and the inventory; the drift survey and apply share those
reads. A cluster whose answers came back as before (the same digest of each LIST's items and
of the inventory) is neither parsed nor compared again: observe, the survey and apply give
their last results (`observe.live`, `live.steady`).

With `--watch-clusters`, `dro run` keeps each emulated cluster's lists current by watches
(`kube.watchcache`): a no-change pass then lists nothing, and reads only the inventory.

Run: `.venv/bin/python bench/incremental.py [--clusters N] [--workloads N] [--online N]
[--watch-clusters] [--json]`.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.kubeapi import KubeAPI  # the project's API emulator

SECRET = b"bench-webhook-secret"
SETTLE_LIMIT = 40
"""Passes allowed for settling: every added cluster starts Filling, and re-balancing fills
them under its churn budget, a few hundred replicas a pass on the largest fleet."""
TARGETS = {"no change": 0.3, "one workload": 0.5, "webhook to commit": 2.0}
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@dro.invalid"]


NODES = 4
"""Nodes per emulated cluster; together they hold the cluster's declared capacity."""


def capacity(i: int) -> dict[str, str]:
    """Cluster `i`'s capacity: 8 times bench/schedule.py's cpu, 2 TiB of memory."""
    return {"cpu": str(8 * (64 + 64 * (i % 4))), "memory": f"{8 * 256}Gi"}


def source(folder: Path, clusters: int, workloads: int, online: int = 0) -> tuple[Path, Path]:
    """The fleet in a work tree, committed and pushed to a bare `source.git`. Its clusters
    have 8 times bench/schedule.py's capacity, so that every workload fits and the fleet
    settles: an over-full fleet re-balances a little on every pass, and never idles. The
    first `online` clusters are reached through the kubeconfig context of their own name."""
    work, bare = folder / "work", folder / "source.git"
    fleet.write_repo(work, clusters, workloads)
    for i in range(clusters):
        doc = fleet.cluster_doc(i)
        spec = doc["spec"]
        assert isinstance(spec, dict)
        spec["capacity"] = capacity(i)
        if i < online:
            spec["kubeconfig"] = {"context": f"c{i:04d}"}
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


class Emulated:
    """The emulated clusters: one `tests.kubeapi` server each, and one kubeconfig."""

    def __init__(self, folder: Path, clusters: int) -> None:
        self.kubeconfig = folder / "kubeconfig"
        self.servers: list[KubeAPI] = []
        for i in range(clusters):
            server = KubeAPI(rollouts=True).start()
            self.servers.append(server)
            cpu, memory = capacity(i)["cpu"], capacity(i)["memory"]
            for node in range(NODES):
                server.add_node(
                    f"node-{node}",
                    cpu=str(int(cpu) // NODES),
                    memory=f"{int(memory.removesuffix('Gi')) // NODES}Gi",
                    pods="100000",
                )
            server.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
            server.kubeconfig(self.kubeconfig, context=f"c{i:04d}")

    def counts(self) -> tuple[int, int]:
        """(writes, requests) received by all the servers so far."""
        writes = sum(len(server.writes) for server in self.servers)
        return writes, sum(len(server.requests) for server in self.servers)

    def stop(self) -> None:
        """Stop every server."""
        for server in self.servers:
            server.stop()


class Dro:
    """`dro run` as a process; the `pass_ended` events of its log in a queue, each with
    `idle` set when the pass said it was idle (`pass_idle`)."""

    def __init__(
        self, folder: Path, bare: Path, kubeconfig: Path | None = None, watch: bool = False
    ) -> None:
        secret = folder / "webhook-secret"
        secret.write_bytes(SECRET)
        self.port = free_port()
        command = [str(Path(sys.executable).with_name("dro")), "run", "--repo", f"file://{bare}"]
        command += ["--state-dir", str(folder / "state"), "--leader-elect=false"]
        command += ["--interval", "1h", "--listen", f"127.0.0.1:{self.port}"]
        command += ["--webhook-secret-file", str(secret), "--log-format", "json"]
        if kubeconfig is not None:
            command += ["--kubeconfig", str(kubeconfig)]
        if watch:
            command += ["--watch-clusters"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.ended: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        idle = False
        for line in self.process.stdout:  # a service logs to its stdout, JSON per line
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "pass_idle":
                idle = True
            elif event.get("event") == "pass_ended":
                self.ended.put({**event, "idle": idle})
                idle = False

    def next_pass(self, timeout: float = 1800.0) -> dict[str, Any]:
        """The next `pass_ended` event."""
        return self.ended.get(timeout=timeout)

    def cpu(self) -> float:
        """The CPU seconds (user and system) the process has used so far (Linux's /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

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


class Passes:
    """Each pass of the run: its name, its seconds, whether it committed and was idle, and
    (online) the API writes and requests the emulators received during it."""

    def __init__(self, dro: Dro, bare: Path, emulated: Emulated | None) -> None:
        self.dro, self.bare, self.emulated = dro, bare, emulated
        self.seen = (0, 0)
        self.rows: list[dict[str, Any]] = []
        self.used = 0.0
        self.served = time.process_time()

    def ended(self, name: str, before: str | None) -> dict[str, Any]:
        """The next pass's row, `before` being the output branch's sha when it started."""
        event = self.dro.next_pass()
        used, self.used = self.used, self.dro.cpu()
        row: dict[str, Any] = {
            "pass": name,
            "seconds": event["seconds"],
            "cpu": round(self.used - used, 3),
            "committed": head(self.bare, OUT) != before,
            "idle": event["idle"],
        }
        if self.emulated is not None:
            counts = self.emulated.counts()
            served, self.served = self.served, time.process_time()
            row["emulators cpu"] = round(self.served - served, 3)
            row["writes"] = counts[0] - self.seen[0]
            row["requests"] = counts[1] - self.seen[1]
            self.seen = counts
        self.rows.append(row)
        return row

    def webhook(self, name: str, sha: str) -> dict[str, Any]:
        """A signed webhook for `sha`, and the pass it starts."""
        before = head(self.bare, OUT)
        self.dro.push_webhook(sha)
        return self.ended(name, before)


OUT = "dro/rendered"


def measure(clusters: int, workloads: int, online: int = 0, watch: bool = False) -> dict[str, Any]:
    """Every figure of the run, in seconds; online, the API writes of each pass too; `watch`:
    `dro run --watch-clusters`."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        work, bare = source(folder, clusters, workloads, online)
        emulated = Emulated(folder, online) if online else None
        dro = Dro(folder, bare, emulated.kubeconfig if emulated is not None else None, watch)
        passes = Passes(dro, bare, emulated)
        try:
            figures: dict[str, Any] = {"full (cold)": passes.ended("full (cold)", None)["seconds"]}
            dro.wait_ready()
            sha = head(bare, "main")
            assert sha is not None
            settle = []
            for _ in range(SETTLE_LIMIT):
                row = passes.webhook("settle", sha)
                settle.append(row["seconds"])
                if not row["committed"]:
                    break
            figures["settle passes"] = len(settle)
            figures["settle (each)"] = settle
            quiet = [passes.webhook("no change", sha) for _ in range(3)]
            figures["no-change commits"] = sum(row["committed"] for row in quiet)
            figures["no-change idle"] = sum(row["idle"] for row in quiet)
            figures["no change"] = sorted(row["seconds"] for row in quiet)[1]
            if emulated is not None:
                figures["no-change writes"] = sum(row["writes"] for row in quiet)
            target = work / "workloads" / "bench" / "apps-0000.yaml"
            target.write_text(target.read_text().replace("replicas: 1\n", "replicas: 2\n", 1))
            commit(work, bare, "one workload scaled")
            changed = head(bare, "main")
            assert changed is not None
            before = head(bare, OUT)
            sent = dro.push_webhook(changed)
            seen = wait_for_change(bare, OUT, before, time.monotonic() + 1800)
            figures["one workload"] = passes.ended("one workload", before)["seconds"]
            figures["webhook to commit"] = seen - sent
            figures["passes"] = passes.rows
        finally:
            dro.stop()
            if emulated is not None:
                emulated.stop()
    return figures


def count(text: str) -> int:
    """A whole number, 0 or more (`--online`)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative: give 0 or more clusters")
    return value


def main(argv: list[str]) -> int:
    """Run, print the table (or JSON), exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--clusters", type=int, default=1_000)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument(
        "--online",
        type=count,
        default=0,
        metavar="N",
        help="serve the first N clusters by the API emulator, and count its writes",
    )
    parser.add_argument(
        "--watch-clusters",
        action="store_true",
        help="run dro with --watch-clusters: its lists kept current by watches",
    )
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args(argv)
    online = min(arguments.online, arguments.clusters)
    figures = measure(arguments.clusters, arguments.workloads, online, arguments.watch_clusters)
    baseline = figures["full (cold)"]
    missed = [name for name, limit in TARGETS.items() if figures[name] >= limit]
    if figures.get("no-change writes", 0):
        missed.append("no-change writes")
    if figures["no-change commits"]:
        missed.append("no-change commits")
    if arguments.json:
        print(json.dumps({**figures, "missed": missed}, indent=2))
        return 1 if missed else 0
    where = f"online: {online} emulated clusters" if online else "offline"
    if arguments.watch_clusters:
        where += ", --watch-clusters"
    print(f"dro run, {arguments.clusters} clusters × {arguments.workloads} workloads, {where}")
    print(f"  full (cold)         {baseline:9.3f} s   baseline")
    print(f"  settle              {figures['settle passes']} passes: {figures['settle (each)']}")
    for name, limit in TARGETS.items():
        ratio = baseline / figures[name] if figures[name] else float("inf")
        verdict = "ok" if name not in missed else "MISSED"
        print(f"  {name:<19} {figures[name]:9.3f} s   {ratio:7.1f}× faster   < {limit} s {verdict}")
    print(f"  commits made by the no-change passes: {figures['no-change commits']}")
    print(f"  no-change passes that were idle: {figures['no-change idle']} of 3")
    if online:
        verdict = "ok" if "no-change writes" not in missed else "MISSED"
        writes = figures["no-change writes"]
        print(f"  API writes by the no-change passes: {writes}   = 0 {verdict}")
        print("  pass            seconds  dro cpu  emulators cpu  writes  requests  commit  idle")
        for row in figures["passes"]:
            print(
                f"  {row['pass']:<14} {row['seconds']:8.3f} {row['cpu']:8.3f} "
                f"{row['emulators cpu']:14.3f} {row['writes']:7d} {row['requests']:9d}  "
                f"{'yes' if row['committed'] else 'no':<6}  {'yes' if row['idle'] else 'no'}"
            )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
