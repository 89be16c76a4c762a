"""Plan benchmark: `dro plan` against rendering both refs and diffing the trees.

The repository: a real git repository in a temporary directory (bare, like a remote: `dro
reconcile` cannot push to a non-bare local one), holding the fleet of `bench/schedule.py`
(50 clusters, 1,000 Deployments, 20 ResourcePlacementPolicies) on `main`, an output branch
`dro/rendered` committed and pushed by `dro reconcile --once` (the placement history a
production repository has), and a branch `feature` with one commit that changes the weights of
one StaticWeight policy and the target regions of one Aggregated policy (replicas move), bumps
the image tag of 20 Deployments and adds one cluster, and changes nothing else.

- `dro plan`: `dro plan --base main --head feature -o markdown`, the whole command from a cold
  process: both refs scheduled from the output branch's decisions and observations, rendered,
  compared; placement changes with their reasons, water levels and manifest diffs.
- `render both + git diff`: what users do today with argocd-diff-preview-like tooling:
  `dro render --ref main`, `dro render --ref feature`, `git diff --no-index --stat`, each from a
  cold process, timed together. It gives a manifest diff only: no placement reasons, no water
  levels. Its `--state-dir` cache is filled once before the timed runs, so the baseline pays no
  clone (this favours the baseline).

The median and the minimum of `--runs` runs are reported; the target is a `dro plan` under 5 s
on 1,000 workloads × 50 clusters.

Run: `make bench` or `.venv/bin/python bench/plan.py [--clusters N] [--workloads N] [--runs N]`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import schedule as fleet_gen

TARGET_S = 5.0
BUMPED = 20
GIT_IDENTITY = ("-c", "user.name=bench", "-c", "user.email=bench@example.com")
DRO = Path(sys.executable).with_name("dro")

Doc = dict[str, Any]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *GIT_IDENTITY, "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def dro(*args: str, stdout: Path | None = None) -> None:
    """Run a `dro` command from a cold process; exit with its stderr if it fails."""
    with open(stdout or "/dev/null", "wb") as out:
        done = subprocess.run([str(DRO), *args], check=False, stdout=out, stderr=subprocess.PIPE)
    if done.returncode != 0:
        sys.exit(f"dro {' '.join(args)} exited {done.returncode}:\n{done.stderr.decode()}")


def rewrite_yaml(path: Path, change: Callable[[list[Doc]], None]) -> None:
    """Load every document of `path`, change them in place, write them back as
    `schedule.write_repo` does (the unchanged documents keep their bytes)."""
    docs = list(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
    change(docs)
    path.write_text(yaml.dump_all(docs, Dumper=yaml.CSafeDumper))


def feature_change(repo: Path, clusters: int, workloads: int) -> None:
    """The head's commit: move replicas through two policies, bump 20 image tags, add a
    cluster."""

    def policies(docs: list[Doc]) -> None:
        by_name = {d["metadata"]["name"]: d for d in docs}
        static = by_name["p02"]["spec"]["placement"]["replicaScheduling"]
        assert static["division"] == "StaticWeight", static
        for weight, new in zip(static["weights"], (1, 2, 3), strict=True):
            weight["weight"] = new
        aggregated = by_name["p01"]["spec"]
        assert aggregated["placement"]["replicaScheduling"]["division"] == "Aggregated"
        aggregated["targetClusters"][0]["values"] = [
            f"region=region-{(5 + k) % 10}" for k in range(3)
        ]

    rewrite_yaml(repo / "policies" / "bench.yaml", policies)

    stride = max(1, workloads // BUMPED)
    bumped = {f"w{i:05d}" for i in range(0, workloads, stride)}
    for path in sorted((repo / "workloads" / "bench").glob("*.yaml")):

        def bump(docs: list[Doc]) -> None:
            for doc in docs:
                if doc["metadata"]["name"] in bumped:
                    container = doc["spec"]["template"]["spec"]["containers"][0]
                    container["image"] = "registry.example/app:1.1"

        rewrite_yaml(path, bump)

    source = repo / "clusters" / "c0000.yaml"
    new_name = f"c{clusters:04d}"
    text = source.read_text()
    assert "name: c0000\n" in text, text
    (repo / "clusters" / f"{new_name}.yaml").write_text(
        text.replace("name: c0000\n", f"name: {new_name}\n")
    )


def build_repo(root: Path, clusters: int, workloads: int) -> Path:
    """The source repository with `main`, `dro/rendered` and `feature`: a bare repository (the
    remote, where `dro reconcile` pushes its output branch), filled from a work tree."""
    work, repo = root / "work", root / "repo.git"
    fleet_gen.write_repo(work, clusters, workloads)
    git(root, "init", "-q", "--bare", "-b", "main", str(repo))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", f"fleet: {clusters} clusters, {workloads} workloads")
    git(work, "push", "-q", str(repo), "main")
    reconcile = ("reconcile", "--once", "--repo", str(repo), "--ref", "main")
    dro(*reconcile, "--state-dir", str(root / "state"))
    branches = git(repo, "branch", "--format=%(refname:short)").split()
    if "dro/rendered" not in branches:
        sys.exit(f"dro reconcile did not create dro/rendered; branches: {branches}")
    git(work, "checkout", "-q", "-b", "feature")
    feature_change(work, clusters, workloads)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "feature: move replicas, bump 20 images, add a cluster")
    git(work, "push", "-q", str(repo), "feature")
    stat = git(repo, "diff", "--stat", "main", "feature").strip().splitlines()
    print(f"feature commit (main → feature): {stat[-1].strip()}")
    return repo


def timed(runs: int, once: Callable[[int], None]) -> list[float]:
    seconds = []
    for run in range(runs):
        started = time.perf_counter()
        once(run)
        seconds.append(time.perf_counter() - started)
    return seconds


def plan_args(repo: Path, output: str) -> list[str]:
    return ["plan", "--repo", str(repo), "--base", "main", "--head", "feature", "-o", output]


def check_markdown(path: Path) -> str:
    """The comment is non-empty and its summary shows changed workloads; return its size."""
    text = path.read_text()
    found = re.search(r"^\| workloads changed \| (\d+) \|$", text, re.MULTILINE)
    if not text.strip() or found is None or int(found.group(1)) == 0:
        sys.exit(f"dro plan printed no summary with changed workloads:\n{text[:2000]}")
    return f"{len(text):,} characters, {len(text.encode()):,} bytes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dro-bench-plan-") as tmp:
        root = Path(tmp)
        repo = build_repo(root, args.clusters, args.workloads)
        markdown = root / "plan.md"

        plan_seconds = timed(
            args.runs, lambda _run: dro(*plan_args(repo, "markdown"), stdout=markdown)
        )
        size = check_markdown(markdown)
        as_json = root / "plan.json"
        dro(*plan_args(repo, "json"), stdout=as_json)
        counts = json.loads(as_json.read_text())["counts"]

        cache = root / "render-state"
        stats: list[str] = []

        def render(ref: str, out: Path) -> None:
            dro(
                "render",
                "--repo",
                str(repo),
                "--ref",
                ref,
                "--state-dir",
                str(cache),
                "--out",
                str(out),
            )

        def baseline(run: int) -> None:
            a, b = root / f"A{run}", root / f"B{run}"
            render("main", a)
            render("feature", b)
            done = subprocess.run(
                ["git", "diff", "--no-index", "--stat=200", str(a), str(b)],
                check=False,
                capture_output=True,
                text=True,
            )
            if done.returncode not in (0, 1):
                sys.exit(f"git diff --no-index exited {done.returncode}: {done.stderr}")
            stats.append(done.stdout.strip().splitlines()[-1].strip() if done.stdout else "")

        render("main", root / "warm")  # fill the clone cache, untimed
        shutil.rmtree(root / "warm")
        baseline_seconds = timed(args.runs, baseline)

    rows = (
        ("dro plan (placement + manifests)", plan_seconds),
        ("render both + git diff (manifests only)", baseline_seconds),
    )
    reference = statistics.median(baseline_seconds)
    print(
        f"plan benchmark: {args.workloads} workloads × {args.clusters} clusters "
        f"(+1 in the head), {args.runs} runs each, cold processes"
    )
    print(f"{'command':<42}{'median s':>10}{'min s':>8}  ratio (baseline / this)")
    for name, seconds in rows:
        median = statistics.median(seconds)
        print(f"{name:<42}{median:>10.2f}{min(seconds):>8.2f}  {reference / median:>5.1f}× faster")
    met = statistics.median(plan_seconds) < TARGET_S
    print(f"target < {TARGET_S:.0f} s: {'met' if met else 'MISSED'}")
    print(
        f"dro plan -o json: {counts['workloadsChanged']} workloads changed, "
        f"{counts['manifestsChanged']} manifests changed; all counts: "
        + ", ".join(f"{key} {value}" for key, value in counts.items())
    )
    print(f"dro plan -o markdown: {size}")
    print(f"baseline git diff --no-index --stat: {stats[-1]}")
    print(f"whole benchmark: {time.perf_counter() - began:.1f}s")


if __name__ == "__main__":
    main()
