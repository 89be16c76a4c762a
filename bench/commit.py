"""Commit benchmark: dro's commit stage against `git fast-import` of the same tree.

The tree is what `dro render` makes of the render benchmark's fleet (100 clusters × 300
objects, about 30,000 files). dro writes it into a fresh repository with `commit.publish`
(libgit2, straight from memory); the baseline feeds the same files to `git fast-import`. Then one
workload changes and dro commits again: that second commit is the steady-state cost.

Run: `make bench` or `.venv/bin/python bench/commit.py [--clusters N] [--apps N]`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import render as render_bench

from reconciler import commit, load, render, schedule, validate


def rendered_tree(root: Path, clusters: int, apps: int) -> dict[str, bytes]:
    render_bench.write_dro_repo(root, clusters, apps)
    spec = validate.spec(load.from_directory(root))
    return render.tree(spec, schedule.place(spec))


def fast_import_stream(tree: dict[str, bytes]) -> bytes:
    chunks: list[bytes] = []
    for mark, data in enumerate(tree.values(), start=1):
        chunks.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
    message = b"baseline"
    chunks.append(b"commit refs/heads/main\ncommitter bench <bench@localhost> 0 +0000\n")
    chunks.append(b"data %d\n%s\n" % (len(message), message))
    for mark, path in enumerate(tree, start=1):
        chunks.append(b"M 100644 :%d %s\n" % (mark, path.encode()))
    chunks.append(b"\n")
    return b"".join(chunks)


def time_fast_import(tree: dict[str, bytes], where: Path) -> float:
    subprocess.run(["git", "init", "--quiet", "--bare", str(where)], check=True)
    stream = fast_import_stream(tree)
    start = time.perf_counter()
    subprocess.run(["git", "fast-import", "--quiet"], input=stream, cwd=where, check=True)
    return time.perf_counter() - start


def time_publish(
    tree: dict[str, bytes], remote: Path, state: Path, label: str, writers: commit.Writers
) -> float:
    start = time.perf_counter()
    result = commit.publish(
        str(remote),
        state,
        branch="dro/rendered",
        tree=tree,
        source_sha=label,
        commit_time=0,
        push=False,
        writers=writers,
    )
    elapsed = time.perf_counter() - start
    assert result.commit is not None, "nothing was committed"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--apps", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dro-bench-commit-") as tmp:
        root = Path(tmp)
        tree = rendered_tree(root / "repo", args.clusters, args.apps)
        subprocess.run(["git", "init", "--quiet", "--bare", str(root / "remote.git")], check=True)
        baseline = time_fast_import(tree, root / "fast-import.git")
        writers = commit.Writers()  # one process's, as `dro run` keeps them between passes
        first = time_publish(tree, root / "remote.git", root / "state", "first", writers)
        changed = next(path for path in tree if "/deployment-app000.yaml" in path)
        tree[changed] = tree[changed].replace(b"replicas:", b"replicas: 9\n# was:", 1)
        second = time_publish(tree, root / "remote.git", root / "state", "second", writers)
    print(f"commit benchmark: {len(tree)} files")
    print(f"{'step':<44}{'seconds':>10}")
    print(f"{'git fast-import (baseline)':<44}{baseline:>10.3f}")
    print(f"{'dro commit.publish, fresh repository':<44}{first:>10.3f}")
    print(f"{'dro commit.publish, one workload changed':<44}{second:>10.3f}")
    print(
        f"ratio to fast-import: {first / baseline:.2f}x (target <= 2x); "
        f"steady commit {second * 1000:.0f} ms (target < 100 ms)"
    )


if __name__ == "__main__":
    main()
