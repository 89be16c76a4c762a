"""Scale run: 10,000 clusters × 100,000 workloads through load, validate, schedule and render.

The fleet is bench/schedule.py's generator at that size (20 policies over 10 regions, 1–20
replicas each), written as a plain directory. One process runs the stages in order, as a pass
does, and reports each stage's time and the process's peak RSS when the stage ended (the peak
so far: the spec stays in memory for the stages after validate, as in a pass). Targets:
schedule < 30 s and peak RSS through schedule < 4 GiB.

Apply fan-out is modelled, not run at 10,000 clusters: the busiest cluster's rendered objects
(with their Namespaces, which the generated fleet leaves out) are applied by `apply.sync` to
3 emulated clusters at once (bench/apply.py's fleet: real HTTP on loopback, one worker per
cluster), a first pass and a steady one. The extrapolation scales the sample's wall time by
(clusters holding objects) / 3: the fan-out at the sample's throughput, every cluster as busy
as the busiest. The emulators and the clients share this process's GIL, so the sample's
throughput is a lower bound on dro's with `--parallel` workers against real API servers, and
the extrapolation an upper bound on the time.

By default the schedule stage keeps the verdicts a pass writes into the decision files: each
decision keeps, at its turn, what its file lists (`schedule.keptverdicts`), and the render
stage writes the files. `--without-diagnosis` schedules as `dro schedule` does, without them,
for comparison. The run exits 1 when a target is missed.

Run: `.venv/bin/python bench/scale.py [--clusters N] [--workloads N] [--without-diagnosis]
[--json]`. The stages' progress goes to stderr, the figures to stdout (`--json`: one JSON
document).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import schedule as fleet  # bench/schedule.py: the fleet generator

T = TypeVar("T")
GIB = 1024**3
TARGETS = {"schedule seconds": 30.0, "schedule peak GiB": 4.0}


def peak_gib() -> float:
    """This process's peak resident set so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def timed(stages: dict[str, dict[str, float]], name: str, work: Callable[[], T]) -> T:
    """Run one stage; record its seconds, the CPU seconds this process spent in it (on a
    shared machine the wall time counts others' work too) and the peak RSS when it ended."""
    started, cpu = time.perf_counter(), time.process_time()
    result = work()
    stages[name] = {
        "seconds": time.perf_counter() - started,
        "cpu seconds": time.process_time() - cpu,
        "peak GiB": peak_gib(),
    }
    figures = stages[name]
    print(
        f"  {name:<9} {figures['seconds']:8.1f} s  (cpu {figures['cpu seconds']:6.1f} s)"
        f"  peak {peak_gib():5.2f} GiB",
        file=sys.stderr,
        flush=True,
    )
    return result


def stages(
    clusters: int, workloads: int, *, diagnose: bool = True
) -> tuple[dict[str, dict[str, float]], list[Any]]:
    """Every stage's figures, and the busiest cluster's rendered objects (for the fan-out)."""
    from reconciler import load, render, schedule, validate
    from reconciler.yamlio import parse_documents

    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="dro-scale-") as tmp:
        root = Path(tmp) / "repo"
        timed(figures, "generate", lambda: fleet.write_repo(root, clusters, workloads))
        source = timed(figures, "load", lambda: load.from_directory(root))
    spec = timed(figures, "validate", lambda: validate.spec(source))
    placed = timed(figures, "schedule", lambda: schedule.place_and_project(spec, diagnose=diagnose))
    tree = timed(figures, "render", lambda: render.tree(spec, placed.decisions))
    per_cluster: dict[str, list[str]] = {}
    for path in tree:
        if path.startswith("clusters/"):
            per_cluster.setdefault(path.split("/")[1], []).append(path)
    figures["tree"] = {"files": float(len(tree)), "clusters holding objects": len(per_cluster)}
    busiest = max(per_cluster, key=lambda name: len(per_cluster[name]))
    objects = [
        doc.body
        for path in sorted(per_cluster[busiest])
        if path.endswith(".yaml")
        for doc in parse_documents(path, tree[path])
        if "kind" in doc.body and doc.body.get("metadata", {}).get("name")
    ]
    return figures, objects


def fan_out(objects: list[Any], holding: int) -> dict[str, float]:
    """The sample's sync throughput, and the fan-out of one pass extrapolated from it."""
    import apply as applybench  # bench/apply.py

    namespaces = sorted(
        {
            obj["metadata"]["namespace"]
            for obj in objects
            if obj.get("metadata", {}).get("namespace")
        }
    )
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces
    ] + objects
    sample = applybench.CLUSTERS
    with tempfile.TemporaryDirectory(prefix="dro-scale-apply-") as tmp:
        emulated = applybench.Fleet(Path(tmp), "scale")
        try:
            results = {
                "dro first": emulated.run(applybench.dro_sync(objects)),
                "dro steady": emulated.run(applybench.dro_sync(objects)),
            }
        finally:
            emulated.stop()
    first, steady = results["dro first"].seconds, results["dro steady"].seconds
    return {
        "objects on the busiest cluster": float(len(objects)),
        "sample clusters (in parallel)": float(sample),
        "sample first pass s": first,
        "sample steady pass s": steady,
        "steady writes in the sample": float(results["dro steady"].writes),
        "extrapolated first pass s": first * holding / sample,
        "extrapolated steady pass s": steady * holding / sample,
    }


def main(argv: list[str]) -> int:
    """Run the stages, model the fan-out, print the figures; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--without-diagnosis",
        action="store_true",
        help="schedule as `dro schedule` does, without the per-cluster verdicts",
    )
    arguments = parser.parse_args(argv)
    progress = f"{arguments.clusters} clusters × {arguments.workloads} workloads"
    print(progress, file=sys.stderr, flush=True)
    figures, objects = stages(
        arguments.clusters, arguments.workloads, diagnose=not arguments.without_diagnosis
    )
    holding = int(figures["tree"]["clusters holding objects"])
    model = fan_out(objects, holding)
    checked = {
        "schedule seconds": figures["schedule"]["seconds"],
        "schedule peak GiB": figures["schedule"]["peak GiB"],
    }
    missed = [name for name, limit in TARGETS.items() if checked[name] >= limit]
    if arguments.json:
        print(json.dumps({"stages": figures, "apply model": model, "missed": missed}, indent=2))
    else:
        for name, value in model.items():
            print(f"  {name:<34} {value:10.2f}")
        for name, limit in TARGETS.items():
            verdict = "MISSED" if name in missed else "ok"
            print(f"  {name:<34} {checked[name]:10.2f}   < {limit} {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
