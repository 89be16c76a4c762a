"""STCI benchmark: data locality on against off, on the same data-heavy synthetic fleet.

The fleet: 100 clusters over 3 providers × 10 regions × 2 zones (labels `provider`, `region`,
`zone`; 96–352 cpu, 10–40 % already allocated), a `topology.yaml` with dro's tier defaults and
a few measured links, 300 DataSets (a primary and 0–2 replicas, 100Gi–50Ti) and 2,000
Deployments (1–12 replicas, 100m–2 cpu). Each Deployment reads 1–3 data sets (popular ones
more often) at 10Gi/d–5Ti/d, heavy-tailed, and about 20 % also write one; it declares this in
its `multicluster.io/data` annotation. Six ResourcePlacementPolicies divide them
(DynamicWeight and Aggregated, over every cluster or over `env=prod`, water-level limit 0.9).

Both variants are generated once, from the same seed, and run in the same process:

- `STCI off`: the same files without the annotation, so no workload uses data;
- `STCI on`: the files as generated.

Each is validated (`validate.spec`) and placed (`schedule.place_and_project`), then measured
with the same accesses (the annotations of the `on` variant) and `stci.data_costs`. The traffic
model: a workload's data traffic is split across the clusters its replicas run on, in
proportion to their replicas, so its cross-domain bytes per day are
Σ_c replicas_c / replicas × bytes_per_day[w, c], and its egress cost likewise with
egress_per_day. A workload that is not placed at all moves no data (the unschedulable counts
are reported beside); "data read/written locally" is the share of all placed workloads' data
rate that crosses no domain. The spread of water levels is the standard deviation, across
clusters, of the RWL each cluster is left at (`Placement.water_levels`), for cpu and memory.

Targets (from the issue): ≥ 50 % fewer cross-domain bytes, and an RWL standard deviation
(cpu) no more than 10 % worse.

Run: `make bench` or `.venv/bin/python bench/stci.py [--clusters N --workloads N --datasets N
--seed N]`.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reconciler import load, schedule, validate
from reconciler.domain import ResourceKey, Spec
from reconciler.schedule import Placement, stci
from reconciler.schedule.fleet import Fleet

PROVIDERS = 3
REGIONS = 10
ZONES = 2
CPU = ("100m", "250m", "500m", "1", "2")
MEMORY = ("256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
POLICIES = (
    ("DynamicWeight", True),
    ("Aggregated", True),
    ("DynamicWeight", False),
    ("Aggregated", False),
    ("DynamicWeight", True),
    ("Aggregated", False),
)
"""(division, targets env=prod) per policy; `False` targets every cluster."""
GI = 2**30
TI = 2**40
DATA_ANNOTATION = "multicluster.io/data"
Doc = dict[str, Any]


def gib(amount: float) -> str:
    """A quantity in whole Gi (at least 1)."""
    return f"{max(1, round(amount / GI))}Gi"


@dataclass(frozen=True, slots=True)
class Generated:
    """The generated documents, by folder."""

    clusters: list[Doc]
    topology: Doc
    datasets: list[Doc]
    deployments: list[Doc]
    policies: list[Doc]


def cluster_doc(i: int, rng: random.Random) -> Doc:
    provider = f"p{i % PROVIDERS}"
    region = f"{provider}-r{(i // PROVIDERS) % REGIONS}"
    zone = f"{region}-{'ab'[(i // (PROVIDERS * REGIONS)) % ZONES]}"
    cpu = 96 + 64 * rng.randrange(5)
    memory = cpu * 4
    used = rng.uniform(0.1, 0.4)
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {
            "name": f"c{i:03d}",
            "labels": {
                "provider": provider,
                "region": region,
                "zone": zone,
                "env": "staging" if i % 10 == 9 else "prod",
            },
        },
        "spec": {
            "capacity": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "5000"},
            "allocated": {"cpu": str(round(cpu * used)), "memory": f"{round(memory * used)}Gi"},
            "largestNodeFree": {"cpu": "16", "memory": "64Gi"},
        },
    }


def topology_doc(names: Sequence[str], rng: random.Random) -> Doc:
    links = []
    for _ in range(min(10, len(names) // 2)):
        a, b = rng.sample(list(names), 2)
        links.append(
            {
                "from": a,
                "to": b,
                "latencyMs": rng.choice((5, 20, 60)),
                "bandwidth": f"{rng.choice((2, 5, 10))}Gi",
                "costPerGiB": rng.choice((0.0, 0.01, 0.02)),
            }
        )
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "fleet"},
        "spec": {"links": links},  # dro's tier defaults for every other pair
    }


def dataset_doc(j: int, names: Sequence[str], rng: random.Random) -> Doc:
    holders = rng.sample(list(names), 1 + rng.randrange(3))
    size = math.exp(rng.uniform(math.log(100 * GI), math.log(50 * TI)))  # log-uniform
    locations = [{"cluster": holders[0], "role": "primary"}] + [
        {"cluster": name, "role": "replica"} for name in holders[1:]
    ]
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "DataSet",
        "metadata": {"name": f"ds-{j:03d}"},
        "spec": {
            "size": gib(size),
            "changeRate": f"{gib(size * rng.uniform(0.01, 0.1))}/d",
            "locations": locations,
        },
    }


def access_annotation(datasets: int, rng: random.Random) -> str:
    """1–3 reads (popular data sets more often), ~20 % also write one."""
    weights = [1.0 / (1 + j) ** 0.6 for j in range(datasets)]
    read: list[int] = []
    for _ in range(1 + rng.randrange(3)):
        pick = rng.choices(range(datasets), weights)[0]
        if pick not in read:
            read.append(pick)
    parts = []
    for j in read:
        rate = min(5 * TI, 10 * GI * rng.paretovariate(1.1))  # heavy tail, 10Gi/d–5Ti/d
        parts.append(f"ds-{j:03d}:read:{gib(rate)}/d")
    if rng.random() < 0.2:
        j = rng.randrange(datasets)
        parts.append(f"ds-{j:03d}:write:{gib(GI * rng.uniform(1, 200))}/d")
    return ", ".join(parts)


def deployment_doc(i: int, datasets: int, rng: random.Random) -> Doc:
    labels = {"app": f"w{i:05d}", "group": f"g{i % len(POLICIES)}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"w{i:05d}",
            "namespace": "bench",
            "labels": labels,
            "annotations": {DATA_ANNOTATION: access_annotation(datasets, rng)},
        },
        "spec": {
            "replicas": 1 + rng.randrange(12),
            "selector": {"matchLabels": {"app": labels["app"]}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example/app:1.0",
                            "resources": {
                                "requests": {"cpu": rng.choice(CPU), "memory": rng.choice(MEMORY)}
                            },
                        }
                    ]
                },
            },
        },
    }


def policy_doc(g: int) -> Doc:
    strategy, prod = POLICIES[g]
    spec: Doc = {
        "resourceSelector": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": "bench",
            "labelSelector": {"matchLabels": {"group": f"g{g}"}},
        },
        "placement": {
            "replicaScheduling": {"type": "Divided", "division": strategy},
            "waterLevelLimit": {"cpu": 0.9},
        },
    }
    if prod:
        spec["targetClusters"] = [{"selectorType": "label", "values": ["env=prod"]}]
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ResourcePlacementPolicy",
        "metadata": {"name": f"p{g}"},
        "spec": spec,
    }


def generate(clusters: int, workloads: int, datasets: int, seed: int) -> Generated:
    rng = random.Random(seed)
    cluster_docs = [cluster_doc(i, rng) for i in range(clusters)]
    names = [str(doc["metadata"]["name"]) for doc in cluster_docs]
    return Generated(
        clusters=cluster_docs,
        topology=topology_doc(names, rng),
        datasets=[dataset_doc(j, names, rng) for j in range(datasets)],
        deployments=[deployment_doc(i, datasets, rng) for i in range(workloads)],
        policies=[policy_doc(g) for g in range(len(POLICIES))],
    )


def without_data(doc: Doc) -> Doc:
    """The Deployment without its `multicluster.io/data` annotation."""
    meta = dict(doc["metadata"])
    meta.pop("annotations", None)
    return {**doc, "metadata": meta}


def write_repo(root: Path, fleet: Generated, *, data: bool) -> None:
    for folder in ("clusters", "datasets", "policies", "workloads/bench"):
        (root / folder).mkdir(parents=True)
    dump = yaml.CSafeDumper
    for doc in fleet.clusters:
        name = doc["metadata"]["name"]
        (root / "clusters" / f"{name}.yaml").write_text(yaml.dump(doc, Dumper=dump))
    for doc in fleet.datasets:
        name = doc["metadata"]["name"]
        (root / "datasets" / f"{name}.yaml").write_text(yaml.dump(doc, Dumper=dump))
    (root / "topology.yaml").write_text(yaml.dump(fleet.topology, Dumper=dump))
    (root / "policies" / "bench.yaml").write_text(yaml.dump_all(fleet.policies, Dumper=dump))
    docs = fleet.deployments if data else [without_data(d) for d in fleet.deployments]
    per_file = 100
    for start in range(0, len(docs), per_file):
        path = root / "workloads" / "bench" / f"apps-{start // per_file:04d}.yaml"
        path.write_text(yaml.dump_all(docs[start : start + per_file], Dumper=dump))


@dataclass(frozen=True, slots=True)
class Outcome:
    bytes_per_day: float
    egress_per_day: float
    local_share: float
    rwl_std: Mapping[str, float]
    rwl_mean: Mapping[str, float]
    rwl_max: Mapping[str, float]
    unschedulable: int
    placed_replicas: int
    seconds: float


def run(root: Path) -> tuple[Spec, Placement, float]:
    """Validate `root` and place it: (spec, placement, scheduling seconds)."""
    spec = validate.spec(load.from_directory(root))
    started = time.perf_counter()
    placement = schedule.place_and_project(spec, diagnose=False)
    return spec, placement, time.perf_counter() - started


def measure(placement: Placement, seconds: float, costs: Costs) -> Outcome:
    """The traffic model of the module docstring, and the spread of water levels."""
    bytes_, egress = costs.data.bytes_per_day, costs.data.egress_per_day
    moved = price = local = total_rate = 0.0
    unschedulable = placed = 0
    for decision in placement.decisions:
        if decision.unschedulable:
            unschedulable += 1
        counts = [(costs.columns[p.cluster], p.replicas or 0) for p in decision.clusters]
        replicas = sum(n for _, n in counts)
        if not replicas:
            continue
        placed += replicas
        row = costs.rows[decision.key]
        rate = float(costs.data.rate[row])
        for column, n in counts:
            share = n / replicas
            moved += share * float(bytes_[row, column])
            price += share * float(egress[row, column])
            local += share * (rate - float(bytes_[row, column]))
        total_rate += rate
    levels = placement.water_levels
    by_resource = {r: [levels[c][r] for c in levels if r in levels[c]] for r in ("cpu", "memory")}
    return Outcome(
        bytes_per_day=moved,
        egress_per_day=price,
        local_share=local / total_rate if total_rate else 0.0,
        rwl_std={r: statistics.pstdev(v) for r, v in by_resource.items()},
        rwl_mean={r: statistics.fmean(v) for r, v in by_resource.items()},
        rwl_max={r: max(v) for r, v in by_resource.items()},
        unschedulable=unschedulable,
        placed_replicas=placed,
        seconds=seconds,
    )


@dataclass(frozen=True, slots=True)
class Costs:
    """STCI's matrices, with the row of each workload and the column of each cluster."""

    data: stci.DataCosts
    rows: Mapping[ResourceKey, int]
    columns: Mapping[str, int]


def costs_of(spec: Spec) -> Costs:
    """STCI's matrices for the `on` variant's declared accesses."""
    fleet = Fleet(clusters=spec.clusters)
    keys = [w.key for w in spec.workloads]
    accesses = [spec.data_access.get(k, ()) for k in keys]
    data = stci.data_costs(fleet, spec.links, spec.data_sets, accesses)
    return Costs(data=data, rows={k: i for i, k in enumerate(keys)}, columns=fleet.index)


def change(off: float, on: float) -> str:
    if off == 0:
        return "n/a"
    return f"{100 * (on - off) / off:+.1f}%"


def table(off: Outcome, on: Outcome) -> list[tuple[str, str, str, str]]:
    rows = [
        (
            "cross-domain TiB/day",
            f"{off.bytes_per_day / TI:,.1f}",
            f"{on.bytes_per_day / TI:,.1f}",
            change(off.bytes_per_day, on.bytes_per_day),
        ),
        (
            "egress $/day",
            f"{off.egress_per_day:,.0f}",
            f"{on.egress_per_day:,.0f}",
            change(off.egress_per_day, on.egress_per_day),
        ),
        (
            "data read/written locally",
            f"{100 * off.local_share:.1f}%",
            f"{100 * on.local_share:.1f}%",
            f"{100 * (on.local_share - off.local_share):+.1f} pt",
        ),
    ]
    for r in ("cpu", "memory"):
        rows.append(
            (
                f"RWL std ({r})",
                f"{off.rwl_std[r]:.4f}",
                f"{on.rwl_std[r]:.4f}",
                change(off.rwl_std[r], on.rwl_std[r]),
            )
        )
        rows.append(
            (
                f"RWL mean / max ({r})",
                f"{off.rwl_mean[r]:.3f} / {off.rwl_max[r]:.3f}",
                f"{on.rwl_mean[r]:.3f} / {on.rwl_max[r]:.3f}",
                "",
            )
        )
    rows += [
        ("unschedulable workloads", str(off.unschedulable), str(on.unschedulable), ""),
        ("replicas placed", f"{off.placed_replicas:,}", f"{on.placed_replicas:,}", ""),
        ("schedule time", f"{off.seconds:.2f}s", f"{on.seconds:.2f}s", ""),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--datasets", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    fleet = generate(args.clusters, args.workloads, args.datasets, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        for variant, data in (("off", False), ("on", True)):
            write_repo(Path(tmp) / variant, fleet, data=data)
        _, placed_off, took_off = run(Path(tmp) / "off")
        spec_on, placed_on, took_on = run(Path(tmp) / "on")
    costs = costs_of(spec_on)
    off = measure(placed_off, took_off, costs)
    on = measure(placed_on, took_on, costs)
    print(
        f"STCI on {args.clusters} clusters, {args.workloads} workloads, "
        f"{args.datasets} data sets (seed {args.seed})"
    )
    lines = [("metric", "STCI off", "STCI on", "change"), *table(off, on)]
    widths = [max(len(line[k]) for line in lines) for k in range(4)]
    for k, line in enumerate(lines):
        print(
            f"| {line[0]:<{widths[0]}} | "
            + " | ".join(f"{cell:>{w}}" for cell, w in zip(line[1:], widths[1:], strict=True))
            + " |"
        )
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    fewer = 100 * (1 - on.bytes_per_day / off.bytes_per_day) if off.bytes_per_day else 0.0
    worse = 100 * (on.rwl_std["cpu"] / off.rwl_std["cpu"] - 1) if off.rwl_std["cpu"] else 0.0
    print(
        f"target ≥ 50% fewer cross-domain bytes: {'met' if fewer >= 50 else 'MISSED'} "
        f"({fewer:.1f}% fewer)"
    )
    print(f"target RWL std ≤ +10%: {'met' if worse <= 10 else 'MISSED'} ({worse:+.1f}%)")
    print(f"benchmark took {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
