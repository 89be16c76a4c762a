"""The web view's pages on a large output branch: each must render in < 500 ms on the server.

The fleet is bench/schedule.py's generator (default 1,000 clusters × 10,000 Deployments under 20
policies), committed to a bare repository; `dro reconcile --once` writes its output branch
(decision files with every cluster's verdict, status files, the rendered tree). The view's
routes then serve that branch from uvicorn on loopback, in this process.

- baseline, `branch read cold`: a fresh `branchdata.Reader` builds its first snapshot (every
  decision and status file parsed, each workload's labels read from its rendered manifest).
  This is what the first request after a new output-branch tip costs once; the parsed blobs are
  kept, so the next tip re-reads only the files that pass changed.
- `next tip`: a commit that changes one workload's rendered manifest; the fleet page is asked
  for at once (it is answered from the last tip's snapshot while the new tip is read in the
  background), then the re-read is waited for and timed.
- each page, warm (the snapshot of the tip is kept): the median of `REPEATS` requests, and the
  slowest. Target: the slowest < 0.5 s.

Run: `.venv/bin/python bench/web.py [--clusters N] [--workloads N] [--json]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pygit2
import schedule as fleet
import uvicorn
from starlette.applications import Starlette

from reconciler.web import branchdata, pages

TARGET = 0.5
REPEATS = 5
BRANCH = "dro/rendered"
DRO = str(Path(sys.executable).parent / "dro")


def source(root: Path, clusters: int, workloads: int) -> Path:
    """The generated fleet committed to a bare repository's main."""
    work, bare = root / "work", root / "source.git"
    fleet.write_repo(work, clusters, workloads)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@dro.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "bench fleet"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


@contextmanager
def serving(reader: branchdata.Reader) -> Iterator[str]:
    """The view's routes under uvicorn on loopback; the base URL."""
    app = Starlette(routes=pages.build(reader, None, tls=False))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def fetch(url: str) -> tuple[float, int, int]:
    """(seconds, status, bytes) of one GET."""
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
        return time.perf_counter() - began, answer.status, len(body)


def paths(snapshot: branchdata.Snapshot, first_pass: str) -> dict[str, str]:
    """The pages measured: each kind, on the largest inputs the fleet has."""
    busiest = max(snapshot.clusters, key=lambda c: c.workloads)
    widest = max(snapshot.workloads, key=lambda w: len(w.decision.clusters))
    some = snapshot.workloads[len(snapshot.workloads) // 2]
    label = next(iter(some.labels.items()), ("app", "x"))
    pages_ = -(-len(snapshot.clusters) // 50)
    return {
        "fleet": "/",
        "fleet, last page": f"/?page={pages_}",
        "fleet, filtered": "/?q=c00",
        "cluster (busiest)": f"/clusters/{busiest.name}",
        "workloads": "/workloads",
        "workloads, filtered": f"/workloads?namespace={some.key.namespace}"
        f"&label={label[0]}%3D{label[1]}&policy={some.policy}",
        "workload (widest)": "/workloads/" + str(widest.key),
        "workload, verdicts page 5": "/workloads/" + str(some.key) + "?page=5",
        "decision file": "/files/" + widest.path,
        "changes": "/changes",
        "change (one manifest)": f"/changes/{snapshot.tip}",
        "change (first pass: all)": f"/changes/{first_pass}",
        "change, all, page 50": f"/changes/{first_pass}?page=50",
    }


def next_tip(root: Path, bare: Path, snapshot: branchdata.Snapshot) -> None:
    """A commit on the output branch that changes one workload's labels (its rendered
    manifest), made with git's plumbing: the next tip a pass would bring, in small."""
    some = snapshot.workloads[len(snapshot.workloads) // 2]
    path = f"clusters/{some.decision.clusters[0].cluster}/{some.key.namespace}/"
    path += f"{some.key.file_stem}.yaml"
    env = {**os.environ, "GIT_INDEX_FILE": str(root / "bench-index")}
    git = ["git", "--git-dir", str(bare), "-c", "user.name=bench", "-c", "user.email=b@b"]

    def run(*args: str, given: bytes | None = None) -> str:
        done = subprocess.run([*git, *args], input=given, env=env, check=True, capture_output=True)
        return done.stdout.decode().strip()

    run("read-tree", BRANCH)
    text = run("show", f"{BRANCH}:{path}").replace("labels:\n", "labels:\n    bench: changed\n", 1)
    blob = run("hash-object", "-w", "--stdin", given=text.encode())
    run("update-index", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree")
    commit = run("commit-tree", tree, "-p", BRANCH, "-m", "bench: one workload's labels")
    run("update-ref", f"refs/heads/{BRANCH}", commit)


def peak_gib() -> float:
    """Peak RSS of this process, GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 * 1024)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--workloads", type=int, default=10000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dro-bench-web-") as tmp:
        root = Path(tmp)
        print(
            f"bench/web.py: {args.clusters} clusters × {args.workloads} workloads", file=sys.stderr
        )
        bare = source(root, args.clusters, args.workloads)
        began = time.perf_counter()
        subprocess.run(
            [DRO, "reconcile", "--once", "--repo", str(bare), "--state-dir", str(root / "state")],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "DRO_LOG_FORMAT": "json"},
        )
        reconciled = time.perf_counter() - began
        reader = branchdata.Reader(lambda: pygit2.Repository(str(bare)), BRANCH)
        began = time.perf_counter()
        snapshot = reader.snapshot()
        cold = time.perf_counter() - began
        rows: list[dict[str, Any]] = []
        with serving(reader) as base:
            next_tip(root, bare, snapshot)
            began = time.perf_counter()
            stale, _, _ = fetch(base + "/")  # answered from the last tip's snapshot
            renewed = reader.settled()  # the background read of the new tip, waited for
            moved = time.perf_counter() - began
            assert renewed.tip != snapshot.tip
            for name, path in paths(renewed, snapshot.tip).items():
                first, status, size = fetch(base + path)
                times = [fetch(base + path)[0] for _ in range(REPEATS)]
                rows.append(
                    {
                        "page": name,
                        "path": path,
                        "status": status,
                        "bytes": size,
                        "first": first,
                        "median": statistics.median(times),
                        "slowest": max(times),
                    }
                )
    ok = all(r["status"] == 200 and r["slowest"] < TARGET for r in rows)
    result = {
        "clusters": args.clusters,
        "workloads": args.workloads,
        "reconcile_seconds": reconciled,
        "cold_read_seconds": cold,
        "next_tip_read_seconds": moved,
        "page_during_reread_seconds": stale,
        "peak_rss_gib": peak_gib(),
        "pages": rows,
        "ok": ok,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if ok else 1
    print(
        f"web view, {args.clusters} clusters × {args.workloads} workloads (server side, loopback)"
    )
    print(f"output branch written by dro reconcile --once in {reconciled:.1f} s")
    print(f"baseline: branch read cold (first snapshot)   {cold:8.3f} s")
    print(f"next tip (one manifest changed): read again in   {moved:8.3f} s, in the background;")
    print(f"  the fleet page meanwhile, from the last tip:    {stale:8.3f} s")
    head = f"{'page':<28} {'first s':>8} {'median s':>9} {'slowest s':>10} {'KiB':>7}"
    print(f"{head}  target < {TARGET} s")
    for r in rows:
        mark = "ok" if r["status"] == 200 and r["slowest"] < TARGET else "MISSED"
        print(
            f"{r['page']:<28} {r['first']:>8.3f} {r['median']:>9.3f} {r['slowest']:>10.3f} "
            f"{r['bytes'] / 1024:>7.0f}  {mark}"
        )
    print(f"peak RSS of this process: {result['peak_rss_gib']:.2f} GiB")
    print("held" if ok else "NOT held: see the rows above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
