"""Re-balancing and cost benchmark: `dro simulate` on the seeded 7-day diurnal trace.

Generates the trace with `bench/traces/diurnal.py` (100 clusters in 4 time zones and 3
providers, 2,000 Deployments, one cluster drained and one added mid-trace; hourly steps) and
replays it with `dro simulate`'s own function (`simulate.run`) for the five default policies,
timed as one run (`--jobs`, default one per core), then `dro-nocost` (`pluginWeights.Cost: 0`).
Prints the README's re-balancing table (markdown), the forecast error, a floor under any
policy's cost (`costfloor.floor`: a linear-programming lower bound that keeps every cluster
under its limit and every workload on the clusters its policy selects), and issue 24's
targets, each PASS or FAIL with its figures:

- overload events (cluster-steps above 0.90) ≤ 50 % of the best baseline's;
- pending replica-steps ≤ the best baseline's;
- replicas moved without a scale change ≤ 1 % of replica-steps, and ≥ 30 % fewer than
  `dro-reactive` at no more overload;
- cost ≥ 15 % lower than `dro-nocost`, at no more pending;
- the 2-hour-ahead background forecast (days 3–7): MAPE ≤ 10 % and below seasonal-naive's;
- the five policies in < 5 minutes of wall time.

The baselines are `karmada-dynamic`, `karmada-static` and `least-loaded`. `--json FILE`
saves the run (`dro simulate -o json --timings`, plus `dro-nocost`); `--sweep` instead replays
`dro` alone once per value of `rebalance.threshold`, `rebalance.maxMovesPerPass`,
`prediction.horizon` and `prediction.band` (the trace's dro.yaml edited, all else as
generated). Then what
`rebalance.run` adds to a steady pass on `bench/schedule.py`'s largest fleet (`--no-large`
skips it).

Run: `.venv/bin/python bench/rebalance.py [--seed N] [--trace DIR] [--json FILE] [--sweep]
[--jobs N] [--no-large]`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import costfloor
import schedule as schedule_bench

from reconciler import load, schedule, simulate, validate
from reconciler.simulate import policies

HERE = Path(__file__).parent
START = 1_736_121_600.0  # 2025-01-06T00:00:00Z, the trace's start
BASELINES = ("karmada-dynamic", "karmada-static", "least-loaded")
SWEEP = {
    "threshold": ("rebalance", "threshold", ("0.05", "0.1", "0.2")),
    "maxMovesPerPass": ("rebalance", "maxMovesPerPass", ('"2%"', '"10%"', '"25%"')),
    "horizon": ("prediction", "horizon", ("1h", "2h", "4h")),
    "band": ("prediction", "band", ("0", "0.5", "1.65")),
}
"""Parameter → (dro.yaml section, key, values): the trace ships the middle value, and band 0."""


def generate(out: Path, seed: int) -> Path:
    """Write the 7-day trace to `out` (`bench/traces/diurnal.py`); its trace.yaml."""
    subprocess.run(
        [sys.executable, str(HERE / "traces" / "diurnal.py"), str(out), "--seed", str(seed)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return out / "trace.yaml"


def replay(trace: Path, names: tuple[str, ...], jobs: int) -> tuple[dict[str, Any], float]:
    """`dro simulate -o json --timings` for `names`, and its wall time in seconds."""
    started = time.perf_counter()
    result = simulate.run(trace, names, lambda line: print(line, file=sys.stderr), jobs=jobs)
    took = time.perf_counter() - started
    return simulate.document(result, timings=True), took


def _n(value: float) -> str:
    return f"{value:,.0f}"


def table(doc: dict[str, Any]) -> str:
    """The README's table: one row per policy."""
    lines = [
        "| policy | overload events (> 0.90) | peak water level | pending replica-steps "
        "| moved, no scale change | cost | processor s/step |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in doc["policies"]:
        lines.append(
            f"| {row['policy']} | {_n(row['overloadEvents'])} | {row['peakWaterLevel']:.2f} "
            f"| {_n(row['pendingReplicaSteps'])} | {_n(row['movedReplicas'])} "
            f"({row['movedPercent']:.2f} %) | {row['cost']:,.0f} | "
            f"{row.get('cpuSecondsPerStep', 0.0):.3f} |"
        )
    return "\n".join(lines)


def targets(doc: dict[str, Any], wall: float) -> list[tuple[bool, str]]:
    """Issue 24's targets on the run: (met, what was measured)."""
    rows = {r["policy"]: r for r in doc["policies"]}
    dro, reactive, nocost = rows["dro"], rows["dro-reactive"], rows.get("dro-nocost")
    base_over = min(rows[b]["overloadEvents"] for b in BASELINES)
    base_pending = min(rows[b]["pendingReplicaSteps"] for b in BASELINES)
    over, pending, moved = (
        dro["overloadEvents"],
        dro["pendingReplicaSteps"],
        dro["movedReplicas"],
    )
    out = [
        (
            over <= 0.5 * base_over,
            f"overload {over} = {_pct(over, base_over)} of the best baseline's {base_over} "
            "(≤ 50 %)",
        ),
        (
            pending <= base_pending,
            f"pending {pending} vs the best baseline's {base_pending} (≤)",
        ),
        (dro["movedPercent"] <= 1.0, f"moved {dro['movedPercent']:.2f} % of replica-steps (≤ 1 %)"),
        (
            moved <= 0.7 * reactive["movedReplicas"] and over <= reactive["overloadEvents"],
            f"moved {moved} = {_pct(moved, reactive['movedReplicas'])} of dro-reactive's "
            f"{reactive['movedReplicas']} (≤ 70 %), overload {over} vs "
            f"{reactive['overloadEvents']} (≤)",
        ),
    ]
    if nocost is not None:
        out.append(
            (
                dro["cost"] <= 0.85 * nocost["cost"] and pending <= nocost["pendingReplicaSteps"],
                f"cost {dro['cost']:,.0f} = {_pct(dro['cost'], nocost['cost'])} of dro-nocost's "
                f"{nocost['cost']:,.0f} (≤ 85 %), pending {pending} vs "
                f"{nocost['pendingReplicaSteps']} (≤)",
            )
        )
    found = doc["forecast"]
    mape, naive = found.get("mape"), found.get("seasonalNaiveMape")
    if mape is not None and naive is not None:
        out.append(
            (
                mape <= 0.10 and mape < naive,
                f"{found['aheadSeconds'] / 3600:g}-hour forecast MAPE {100 * mape:.1f} % "
                f"(≤ 10 %), seasonal-naive {100 * naive:.1f} % (<), "
                f"{found['clusterSteps']} cluster-steps",
            )
        )
    out.append((wall < 300.0, f"the five policies took {wall:.0f} s of wall time (< 300 s)"))
    return out


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f} %" if whole else "n/a"


def edited(trace: Path, into: Path, section: str, key: str, value: str) -> Path:
    """A copy of the trace folder whose dro.yaml sets `section.key: value`."""
    shutil.copytree(trace.parent, into)
    dro_yaml = into / "repo" / "dro.yaml"
    text = dro_yaml.read_text()
    line = re.search(rf"^  {section}: \{{(.*)\}}$", text, re.MULTILINE)
    if line is None:
        raise SystemExit(f"{dro_yaml}: no one-line `{section}:` to edit")
    fields = dict(f.strip().split(": ", 1) for f in line.group(1).split(","))
    fields[key] = value
    body = ", ".join(f"{k}: {v}" for k, v in fields.items())
    dro_yaml.write_text(text[: line.start()] + f"  {section}: {{{body}}}" + text[line.end() :])
    return into / "trace.yaml"


def sweep(trace: Path, jobs: int) -> None:
    """`dro` alone per value of each swept parameter (see the module docstring), `jobs` runs
    at a time (forked processes)."""
    print("| parameter | value | overload | pending | moved, no scale change | cost | MAPE |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [
            (name, value, edited(trace, Path(tmp) / f"{name}-{i}", section, key, value))
            for name, (section, key, values) in SWEEP.items()
            for i, value in enumerate(values)
        ]
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max(1, jobs), mp_context=context) as pool:
            rows = pool.map(_swept, [(name, value, path) for name, value, path in runs])
            for row in rows:
                print(row, flush=True)


def _swept(run: tuple[str, str, Path]) -> str:
    """One sweep run's table row."""
    name, value, path = run
    doc, _ = replay(path, ("dro",), 1)
    (row,) = doc["policies"]
    mape = doc["forecast"].get("mape")
    return (
        f"| {name} | {value.strip(chr(34))} | {_n(row['overloadEvents'])} "
        f"| {_n(row['pendingReplicaSteps'])} | {_n(row['movedReplicas'])} "
        f"({row['movedPercent']:.2f} %) | {row['cost']:,.0f} "
        f"| {'-' if mape is None else f'{100 * mape:.1f} %'} |"
    )


def rebalance_overhead(clusters: int, workloads: int) -> list[tuple[float, float, int]]:
    """Three steady passes: (seconds in `rebalance.run`, seconds of the pass, moved workloads)."""
    from reconciler.schedule import rebalance

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        schedule_bench.write_repo(root, clusters, workloads)
        spec = validate.spec(load.from_directory(root))
    previous = {d.key: d for d in schedule.place(spec, diagnose=False)}
    original, spent = rebalance.run, [0.0]

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] = time.perf_counter() - started

    rebalance.run = timed
    try:
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            steady = schedule.place(spec, previous, diagnose=False, now=START)
            took = time.perf_counter() - started
            runs.append((spent[0], took, sum(1 for d in steady if d.moves)))
    finally:
        rebalance.run = original
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7, help="seed of the trace (default 7)")
    parser.add_argument("--trace", type=Path, help="an existing trace.yaml (default: generate)")
    parser.add_argument("--json", type=Path, help="save the run's JSON document here")
    parser.add_argument("--sweep", action="store_true", help="the parameter sweep instead")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="policies at once")
    parser.add_argument("--no-large", action="store_true", help="skip the 1,000-cluster part")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace or generate(Path(tmp) / "trace", args.seed)
        if args.sweep:
            sweep(trace, args.jobs)
            return
        doc, wall = replay(trace, policies.POLICIES, args.jobs)
        extra, _ = replay(trace, policies.OPTIONAL, args.jobs)
        floor, overfull = costfloor.floor(trace)
    doc["policies"] += extra["policies"]
    if args.json is not None:
        args.json.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(table(doc))
    found = doc["forecast"]
    print(f"\nforecast ({found['aheadSeconds'] / 3600:g} h ahead, days 3-7): {found}")
    nocost = extra["policies"][0]["cost"]
    print(
        f"cost floor (linear programme: every cluster under 0.85, every workload on its "
        f"policy's clusters, {overfull} steps that did not fit): {floor:,.0f}, "
        f"{100 * (nocost - floor) / nocost:.2f} % below dro-nocost (target 15 %)"
    )
    print(f"five policies: {wall:.0f} s wall\n")
    for ok, text in targets(doc, wall):
        print(f"{'PASS' if ok else 'FAIL'}  dro {text}")
    if not args.no_large:
        clusters, workloads = schedule_bench.SIZES[-1]
        runs = rebalance_overhead(clusters, workloads)
        spent, took, moved = sorted(runs)[1]  # the median: a full GC may land in any one run
        print(
            f"\nre-balancing adds {spent:.2f} s to a steady pass (target ≤ 0.5 s) on {clusters} "
            f"clusters × {workloads} workloads: the pass takes {took:.2f} s, {moved} workloads "
            f"moved (3 passes: {', '.join(f'{r[0]:.2f}/{r[1]:.2f} s' for r in runs)})"
        )


if __name__ == "__main__":
    main()
