"""`dro simulate` speed on a synthetic 7-day trace: 100 clusters × 2,000 workloads, hourly.

The trace comes from `bench/rebalance.py`'s seeded generator, scaled up: 100 clusters in four
time zones with diurnal background load and bursts (twice the generator's capacity, for twice
its workloads per cluster), 2,000 Deployments following their home region's day, 10 % batch;
a price per provider, and one cluster drained from day 4. It is
built in memory as a `simulate.trace.Trace` (the series as arrays, as `simulate.series` would
read them from CSV), and replayed for every policy by `simulate.replay_trace`, the function
`dro simulate` runs. Printed: the table, and the time per policy and per step. The target
(issue 24): the five policies in under 5 minutes on this machine.

Run: `.venv/bin/python bench/simulate.py [--seed N] [--days N] [--clusters N] [--workloads N]
[--policies a,b] [--jobs N] [--plot FILE]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from types import MappingProxyType

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import rebalance as generator

MIB = float(2**20)
PRICES = {"aws": 0.034, "gcp": 0.031, "azure": 0.027}  # per core-hour; memory per GiB-hour /8


def build(seed: int, days: int, clusters: int, workloads: int):  # type: ignore[no-untyped-def]
    from reconciler import load, validate
    from reconciler.simulate import trace as traces
    from reconciler.simulate.trace import ClusterChange, Event

    generator.CLUSTERS, generator.WORKLOADS, generator.STEP_S = clusters, workloads, 3600
    steps = days * 24
    made = generator.make_trace(seed, steps)
    for array in (made.cpu, made.memory, made.background, made.background_mem):
        np.multiply(
            array, 2, out=array
        )  # twice the room: the generator sizes 10 workloads per cluster, this 20
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generator.write_source(root, made, "dro", 0, None)
        spec = validate.spec(load.from_directory(root))
    providers = list(PRICES)
    priced = []
    for cluster in spec.clusters:
        provider = providers[int(cluster.name[1:3]) % len(providers)]
        price = PRICES[provider]
        labels = MappingProxyType({**cluster.labels, "provider": provider})
        cost = MappingProxyType({"cpu": price, "memory": price / 8})
        priced.append(dataclasses.replace(cluster, labels=labels, cost=cost))
    spec = dataclasses.replace(spec, clusters=tuple(priced))
    usage = {
        name: {
            "cpu": made.background[:, c].copy(),
            "memory": made.background_mem[:, c] * MIB,
        }
        for c, name in enumerate(made.names)
    }
    replicas = {
        f"bench/Deployment/w{w:03d}": made.desired[:, w].astype(np.int64) for w in range(workloads)
    }
    drained = made.names[clusters // 2]
    return traces.Trace(
        path=Path("synthetic.yaml"),
        name=f"synthetic-{clusters}x{workloads}-{days}d",
        spec=spec,
        start=generator.START,
        step=3600.0,
        steps=steps,
        joins={c.name: 0 for c in spec.clusters},
        events=(Event(step=3 * 24, clusters={drained: ClusterChange(drain=True)}),),
        usage=usage,
        replicas=replicas,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--policies", default=None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--plot", type=Path, help="also draw the water levels to FILE.svg|png")
    args = parser.parse_args()
    from reconciler import simulate
    from reconciler.cli import simulate as cli_simulate
    from reconciler.review import tables

    started = time.perf_counter()
    trace = build(args.seed, args.days, args.clusters, args.workloads)
    built = time.perf_counter() - started
    print(f"trace built in {built:.1f} s", file=sys.stderr)
    began = time.perf_counter()
    result = simulate.replay_trace(
        trace,
        simulate.choose(args.policies),
        lambda line: print(line, file=sys.stderr),
        jobs=args.jobs,
    )
    took = time.perf_counter() - began
    tables.render(cli_simulate.grid(result, timings=True), sys.stdout)
    print(
        f"\nreplay of {len(result.rows)} policies × {trace.steps} steps: {took:.0f} s "
        f"(target < 300 s for five); per policy: "
        + ", ".join(f"{n} {t['seconds']:.0f} s" for n, t in result.timings.items())
    )
    if args.plot:
        simulate.plot(result, args.plot)
    cpu = sum(t["cpuSecondsPerStep"] * trace.steps for t in result.timings.values())
    print(
        f"processor time of the replays: {cpu:.0f} s in all ("
        + ", ".join(f"{n} {t['cpuSecondsPerStep']:.3f} s/step" for n, t in result.timings.items())
        + "); the machine's load average at the end: "
        + " ".join(f"{x:.1f}" for x in os.getloadavg())
    )


if __name__ == "__main__":
    main()
