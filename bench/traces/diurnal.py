"""A seeded diurnal trace for `dro simulate`: a fleet in four time zones through days of load.

Writes a trace folder in the `kind: Trace` format (see the README's "Simulating" section):

    OUT_DIR/trace.yaml          the trace: start, step, steps, series files and events
    OUT_DIR/repo/               the source repo at step 0: dro.yaml, topology.yaml, clusters/,
                                policies/ (web: DynamicWeight, batch: Aggregated), workloads/
    OUT_DIR/usage.csv           background cpu and memory of every cluster at every step
    OUT_DIR/replicas.csv        desired replicas of each workload, at the steps where they change
    OUT_DIR/extra/<name>.yaml   the cluster that joins the fleet mid-trace

The default is the 7-day trace: 100 clusters in 4 regions whose local days are UTC−5, UTC,
UTC+5:30 and UTC+9, on 3 providers whose prices differ (gcp 12 % below aws, azure 12 % above),
64–256 cores with 4Gi per core. Their background load (what dro does not place) follows the
local day between 25 % and 75 % of cpu, with day-to-day changes, noise and bursts of +10–25 %
for an hour or two. 2,000 Deployments: web ones (80 %) follow their home region's day and
target their home region and the next one (DynamicWeight); bursty web ones (10 %) have flash
crowds too; batch ones (10 %) run one replica with rare bursts of 10–30 anywhere in the fleet
(Aggregated). Peak replicas are scaled so that at the fleet's tightest step the replicas ask for
`--tightness` (default 60 %) of the room left under the 0.85 cpu limit. One cluster is drained
for 12 hours from 45 % of the trace (then un-drained), one joins at 55 %.

`--small` is the preset for tests and the README: 8 clusters, 40 workloads, 2 days.
`--no-prediction` leaves `spec.prediction` out of dro.yaml (it is on by default, with the
trace's step, a 2-hour horizon and a 7-day window).

The same seed and options give the same bytes. Run:
`.venv/bin/python bench/traces/diurnal.py OUT_DIR [--seed N] [--days 7] [--step 1h] [--small]`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import NoReturn

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from diurnal_load import (
    CPU_PRICE,
    FULL,
    LIMIT,
    MEMORY_PRICE,
    MIB,
    PROVIDER_PRICE,
    PROVIDERS,
    REGION_PRICE,
    REGIONS,
    SMALL,
    START,
    START_TEXT,
    Preset,
    Trace,
    make_trace,
)

CONFIG = """\
apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {{name: dro}}
spec:
  kubernetesVersion: "1.32"
  waterLevelLimit: {{cpu: 0.85, memory: 0.9}}
  defaultPlacement:
    targetClusters: [{{selectorType: label, values: ["env=prod"]}}]
    replicaScheduling: {{type: Duplicated}}
  rebalance: {{threshold: 0.1, maxMovesPerPass: "10%", cooldown: 10m}}
{prediction}"""

PREDICTION = "  prediction: {{enabled: true, horizon: 2h, window: 7d, step: {step}}}\n"

TOPOLOGY = """\
apiVersion: multicluster.io/v1alpha1
kind: Topology
metadata: {name: fleet}
spec:
  defaults:
    sameZone: {latencyMs: 0.5, bandwidth: 25Gi, costPerGiB: 0}
    sameRegion: {latencyMs: 2, bandwidth: 10Gi, costPerGiB: 0.01}
    crossRegion: {latencyMs: 80, bandwidth: 1Gi, costPerGiB: 0.02}
    crossProvider: {latencyMs: 90, bandwidth: 500Mi, costPerGiB: 0.09}
"""


# --- the files ------------------------------------------------------------------------------


def _price(trace: Trace, c: int) -> dict[str, float]:
    factor = PROVIDER_PRICE[trace.provider[c]] * REGION_PRICE[trace.region[c]]
    return {"cpu": round(CPU_PRICE * factor, 5), "memory": round(MEMORY_PRICE * factor, 6)}


def cluster_doc(trace: Trace, c: int, t: int) -> dict[str, object]:
    """The Cluster file of cluster `c`, its `allocated` the background load of step `t`."""
    labels = {
        "env": "prod",
        "provider": PROVIDERS[trace.provider[c]],
        "region": REGIONS[trace.region[c]],
    }
    cores = int(trace.cpu[c])
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": trace.names[c], "labels": labels},
        "spec": {
            "capacity": {"cpu": str(cores), "memory": f"{cores * 4}Gi"},
            "allocated": {
                "cpu": f"{round(trace.background[t, c] * 1000)}m",
                "memory": f"{int(trace.background_mem[t, c]) // MIB}Mi",
            },
            "cost": _price(trace, c),
        },
    }


def policy_docs() -> list[dict[str, object]]:
    """Web workloads: DynamicWeight over their home region and the next one. Batch workloads:
    Aggregated, anywhere in the fleet."""
    docs: list[dict[str, object]] = []
    for h, region in enumerate(REGIONS):
        regions = [region, REGIONS[(h + 1) % len(REGIONS)]]
        docs.append(
            {
                "apiVersion": "multicluster.io/v1alpha1",
                "kind": "ResourcePlacementPolicy",
                "metadata": {"name": f"web-{region}"},
                "spec": {
                    "resourceSelector": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "namespace": "web",
                        "labelSelector": {"matchLabels": {"home": region}},
                    },
                    "targetClusters": [
                        {"selectorType": "label", "values": [f"region={r}" for r in regions]}
                    ],
                    "placement": {
                        "replicaScheduling": {"type": "Divided", "division": "DynamicWeight"},
                    },
                },
            }
        )
    docs.append(
        {
            "apiVersion": "multicluster.io/v1alpha1",
            "kind": "ResourcePlacementPolicy",
            "metadata": {"name": "batch"},
            "spec": {
                "resourceSelector": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": "batch",
                },
                "targetClusters": [{"selectorType": "label", "values": ["env=prod"]}],
                "placement": {"replicaScheduling": {"type": "Divided", "division": "Aggregated"}},
            },
        }
    )
    return docs


def namespace(trace: Trace, w: int) -> str:
    """`web` for web and bursty web workloads, `batch` for batch ones."""
    return "batch" if trace.kind[w] == "batch" else "web"


def workload_name(trace: Trace, w: int) -> str:
    """`web-0001`, `burst-0002`, `batch-0003`."""
    return f"{trace.kind[w]}-{w:04d}"


def deployment_doc(trace: Trace, w: int) -> dict[str, object]:
    """Workload `w` with its replicas at step 0."""
    name = workload_name(trace, w)
    labels = {"app": name, "home": REGIONS[trace.home[w]], "pattern": str(trace.kind[w])}
    requests = {"cpu": f"{round(trace.cpu_req[w] * 1000)}m", "memory": f"{int(trace.mem_req[w])}Mi"}
    container = {
        "name": "app",
        "image": "registry.example/app:1.0",
        "resources": {"requests": requests},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace(trace, w), "labels": labels},
        "spec": {
            "replicas": int(trace.desired[0, w]),
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def _dump(docs: list[dict[str, object]]) -> str:
    return yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=True, width=100)


def write_repo(root: Path, trace: Trace, step_text: str, prediction: bool) -> None:
    """The source repo at step 0 (the joining cluster's file goes to extra/, beside it)."""
    for folder in ("clusters", "policies", "workloads/web", "workloads/batch"):
        (root / folder).mkdir(parents=True)
    config = CONFIG.format(prediction=PREDICTION.format(step=step_text) if prediction else "")
    (root / "dro.yaml").write_text(config)
    (root / "topology.yaml").write_text(TOPOLOGY)
    for c, name in enumerate(trace.names[:-1]):
        (root / "clusters" / f"{name}.yaml").write_text(_dump([cluster_doc(trace, c, 0)]))
    (root / "policies" / "placement.yaml").write_text(_dump(policy_docs()))
    for ns in ("web", "batch"):
        mine = [w for w in range(len(trace.kind)) if namespace(trace, w) == ns]
        for chunk in range(0, len(mine), 100):
            docs = [deployment_doc(trace, w) for w in mine[chunk : chunk + 100]]
            path = root / "workloads" / ns / f"apps-{chunk // 100:02d}.yaml"
            path.write_text(_dump(docs))


def usage_csv(trace: Trace) -> str:
    """`step,cluster,resource,value` for every cluster in the fleet at every step: cpu in
    cores (to the millicore), memory in Mi."""
    steps, _ = trace.background.shape
    joiner, joins = trace.joined
    lines = ["step,cluster,resource,value"]
    cpu_text = np.char.mod("%.3f", np.round(trace.background, 3))
    mem_text = np.char.add(np.char.mod("%d", trace.background_mem // MIB), "Mi")
    for t in range(steps):
        for c, name in enumerate(trace.names):
            if c == joiner and t < joins:
                continue
            lines.append(f"{t},{name},cpu,{cpu_text[t, c]}")
            lines.append(f"{t},{name},memory,{mem_text[t, c]}")
    return "\n".join(lines) + "\n"


def prometheus_exports(trace: Trace, step_s: float) -> dict[str, str]:
    """The same usage as Prometheus range-query answers, one per resource (`cpu` in cores,
    `memory` in bytes), one series per line, labelled by `cluster`."""
    steps, _ = trace.background.shape
    joiner, joins = trace.joined
    stamps = [f"{START + t * step_s:.0f}" for t in range(steps)]
    texts = {
        "cpu": np.char.mod("%.3f", np.round(trace.background, 3)),
        "memory": np.char.mod("%d", trace.background_mem // MIB * MIB),
    }
    metric = {"cpu": "cluster:background_cpu_cores", "memory": "cluster:background_memory_bytes"}
    exports = {}
    for resource, text in texts.items():
        lines = []
        for c, name in enumerate(trace.names):
            first = joins if c == joiner else 0
            values = ",".join(f'[{stamps[t]},"{text[t, c]}"]' for t in range(first, steps))
            labels = json.dumps({"__name__": metric[resource], "cluster": name})
            lines.append(f'  {{"metric":{labels},"values":[{values}]}}')
        exports[resource] = (
            '{"status":"success","data":{"resultType":"matrix","result":[\n'
            + ",\n".join(lines)
            + "\n]}}\n"
        )
    return exports


def replicas_csv(trace: Trace) -> str:
    """`step,workload,replicas` at the steps where a workload's replicas change (step 0 is the
    repo's)."""
    keys = [
        f"{namespace(trace, w)}/Deployment/{workload_name(trace, w)}"
        for w in range(len(trace.kind))
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    desired = trace.desired[:, order]
    changed = np.argwhere(desired[1:] != desired[:-1])  # (step - 1, workload), step-major
    lines = ["step,workload,replicas"]
    lines += [f"{t + 1},{keys[order[w]]},{desired[t + 1, w]}" for t, w in changed.tolist()]
    return "\n".join(lines) + "\n"


def trace_yaml(trace: Trace, name: str, step_text: str, usage: str, command: str) -> str:
    """The trace document: the drain and its end, and the joining cluster, as events."""
    steps = trace.desired.shape[0]
    drained, since, until = trace.drained
    joiner, joins = trace.joined
    drain = "    - step: {}\n      clusters:\n        {}: {{drain: {}}}\n"
    events = [
        (since, drain.format(since, trace.names[drained], "true")),
        (joins, f"    - step: {joins}\n      add: [extra/{trace.names[joiner]}.yaml]\n"),
    ]
    if until < steps:
        events.append((until, drain.format(until, trace.names[drained], "false")))
    return (
        f"# Generated by `{command}`:\n# regenerate it rather than edit it.\n"
        "apiVersion: multicluster.io/v1alpha1\n"
        "kind: Trace\n"
        f"metadata: {{name: {name}}}\n"
        "spec:\n"
        "  source: repo\n"
        f'  start: "{START_TEXT}"\n'
        f"  step: {step_text}\n"
        f"  steps: {steps}\n"
        f"  usage:{usage}\n"
        "  replicas: {csv: replicas.csv}\n"
        "  events:\n" + "".join(text for _, text in sorted(events))
    )


def write(
    out: Path, trace: Trace, step_text: str, prediction: bool, prometheus: bool, command: str
) -> None:
    """The whole trace folder; usage as Prometheus exports instead of usage.csv if asked."""
    step_s = _seconds(step_text)
    name = f"diurnal-{trace.desired.shape[0] * step_s / 86400:g}d"
    write_repo(out / "repo", trace, step_text, prediction)
    joiner, joins = trace.joined
    (out / "extra").mkdir()
    (out / "extra" / f"{trace.names[joiner]}.yaml").write_text(
        _dump([cluster_doc(trace, joiner, joins)])
    )
    if prometheus:
        (out / "prometheus").mkdir()
        entries = []
        for resource, text in prometheus_exports(trace, step_s).items():
            (out / "prometheus" / f"{resource}.json").write_text(text)
            entries.append(
                f"{{file: prometheus/{resource}.json, resource: {resource}, clusterLabel: cluster}}"
            )
        usage = "\n    prometheus:\n" + "".join(f"      - {e}\n" for e in entries)
        usage = usage.rstrip("\n")
    else:
        (out / "usage.csv").write_text(usage_csv(trace))
        usage = " {csv: usage.csv}"
    (out / "replicas.csv").write_text(replicas_csv(trace))
    (out / "trace.yaml").write_text(trace_yaml(trace, name, step_text, usage, command))


_DURATION = re.compile(r"([0-9]+)(s|m|h|d)")


def _seconds(text: str) -> float:
    found = _DURATION.fullmatch(text)
    if not found:
        raise ValueError(f"not a duration: {text!r} (e.g. 10m, 1h)")
    return int(found[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[found[2]]


class _Parser(argparse.ArgumentParser):
    """argparse, exiting 1 on a usage error as every dro command does."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        description=__doc__.splitlines()[0], epilog="Writes OUT_DIR; a summary goes to stderr."
    )
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="a new or empty folder")
    parser.add_argument("--seed", type=int, default=7, help="seed of the trace (default 7)")
    parser.add_argument("--small", action="store_true", help="8 clusters, 40 workloads, 2 days")
    parser.add_argument("--days", type=float, help="length (default 7, or 2 with --small)")
    parser.add_argument("--step", default="1h", help="step of the trace (default 1h)")
    parser.add_argument(
        "--tightness",
        type=float,
        default=0.6,
        help="peak demand / room under the cpu limit (default 0.6)",
    )
    parser.add_argument(
        "--usage",
        choices=("csv", "prometheus"),
        default="csv",
        help="usage.csv, or Prometheus range-query exports in prometheus/ (default csv)",
    )
    parser.add_argument(
        "--prediction",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="spec.prediction in dro.yaml (default on)",
    )
    args = parser.parse_args(argv)
    preset = SMALL if args.small else FULL
    if args.days is not None:
        preset = Preset(preset.clusters, preset.workloads, args.days)
    try:
        step_s = _seconds(args.step)
    except ValueError as error:
        parser.error(str(error))
    if 86400 % step_s or step_s > 86400:
        parser.error(f"--step {args.step} does not divide a day")
    if round(preset.days * 86400 / step_s) < 2:
        parser.error("the trace needs at least 2 steps")
    if not 0 < args.tightness <= 1:
        parser.error("--tightness must be in (0, 1]")
    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"diurnal.py: {out} exists and is not an empty folder", file=sys.stderr)
        return 1
    started = time.perf_counter()
    trace = make_trace(preset, args.seed, step_s, args.tightness)
    out.mkdir(parents=True, exist_ok=True)
    write(out, trace, args.step, args.prediction, args.usage == "prometheus", _command(args))
    took = time.perf_counter() - started
    summary(out, trace, took)
    return 0


def _command(args: argparse.Namespace) -> str:
    """The command that makes this trace again, with OUT for its folder."""
    words = ["bench/traces/diurnal.py", "OUT"] + (["--small"] if args.small else [])
    words += ["--seed", str(args.seed)]
    if args.days is not None:
        words += ["--days", f"{args.days:g}"]
    if args.step != "1h":
        words += ["--step", args.step]
    if args.usage != "csv":
        words += ["--usage", args.usage]
    if args.tightness != 0.6:
        words += ["--tightness", f"{args.tightness:g}"]
    if not args.prediction:
        words.append("--no-prediction")
    return " ".join(words)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def summary(out: Path, trace: Trace, took: float) -> None:
    """What was written, on stderr."""
    steps, clusters = trace.background.shape
    level = trace.background / trace.cpu
    kinds = {k: int((trace.kind == k).sum()) for k in ("web", "burst", "batch")}
    sizes = ", ".join(
        f"{p.name}{'/' if p.is_dir() else ''} {_size(p) / 1e6:.2f} MB"
        for p in sorted(out.iterdir())
    )
    replicas = trace.desired.sum(axis=1)
    paragraphs = (
        f"{out}: {clusters - 1} clusters (+1 joining at step {trace.joined[1]}; "
        f"{trace.names[trace.drained[0]]} drained from step {trace.drained[1]} to "
        f"{trace.drained[2]}), {int(trace.cpu.sum())} cores; {len(trace.kind)} workloads "
        f"({kinds['web']} web, {kinds['burst']} bursty web, {kinds['batch']} batch); "
        f"{steps} steps.",
        f"Background cpu {level.mean():.0%} on average, {level.max():.0%} at most; "
        f"{int(replicas.min())}–{int(replicas.max())} replicas per step, asking for at most "
        f"{trace.tightness:.0%} of the room under the {LIMIT} cpu limit.",
        f"Wrote {sizes} in {took:.1f} s.",
    )
    for text in paragraphs:
        print(textwrap.fill(text, width=80, break_on_hyphens=False), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
