"""Schedule benchmark: the vectorised scheduler against a naive per-pair Python loop.

Fleets of 100 and 1,000 clusters (10 regions, 3 providers, 5 % tainted) and 1,000 and 10,000
Deployments (1–20 replicas, 100m–2 cpu, 128Mi–4Gi), placed by 20 ResourcePlacementPolicies that
cycle through DynamicWeight, Aggregated, StaticWeight and Duplicated, with region targets and a
water-level limit. Each size runs in a fresh process, so its peak RSS is its own.

- `schedule`: `schedule.place(spec, diagnose=False)` on the validated spec.
- `naive`: the same filters and the balance score as a Python loop over every (workload,
  cluster) pair, in the same process. On large sizes it runs on the first 500 workloads and is
  scaled up linearly (marked with ~).
- `dro schedule`: the whole command (parse, validate, schedule, print JSON) from a cold process,
  on the largest fleet.

Run: `make bench` or `.venv/bin/python bench/schedule.py`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

SIZES = ((100, 1_000), (100, 10_000), (1_000, 1_000), (1_000, 10_000))
STRATEGIES = ("DynamicWeight", "Aggregated", "StaticWeight", "Duplicated")
POLICIES = 20
NAIVE_SAMPLE = 500


def cluster_doc(i: int) -> dict[str, object]:
    region = f"region-{i % 10}"
    spec: dict[str, object] = {
        "capacity": {"cpu": str(64 + 64 * (i % 4)), "memory": f"{256 + 256 * (i % 4)}Gi"},
        "allocated": {"cpu": str((i * 7) % 60), "memory": f"{(i * 13) % 200}Gi"},
        "largestNodeFree": {"cpu": str(2 + i % 16), "memory": f"{8 + i % 64}Gi"},
    }
    if i % 20 == 7:
        spec["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {
            "name": f"c{i:04d}",
            "labels": {"region": region, "provider": f"p{i % 3}", "env": "prod"},
        },
        "spec": spec,
    }


def deployment_doc(i: int) -> dict[str, object]:
    labels = {"app": f"w{i:05d}", "group": f"g{i % POLICIES}"}
    cpu = ("100m", "250m", "500m", "1", "2")[i % 5]
    memory = ("128Mi", "512Mi", "1Gi", "2Gi", "4Gi")[(i // 5) % 5]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"w{i:05d}", "namespace": "bench", "labels": labels},
        "spec": {
            "replicas": 1 + i % 20,
            "selector": {"matchLabels": {"app": labels["app"]}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example/app:1.0",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }
                    ]
                },
            },
        },
    }


def policy_doc(g: int) -> dict[str, object]:
    strategy = STRATEGIES[g % len(STRATEGIES)]
    regions = [f"region-{(g + k) % 10}" for k in range(1 if strategy == "Duplicated" else 3)]
    replica: dict[str, object] = (
        {"type": "Duplicated"} if strategy == "Duplicated" else {"type": "Divided"}
    )
    if strategy != "Duplicated":
        replica["division"] = strategy
    if strategy == "StaticWeight":
        replica["weights"] = [
            {"labels": {"region": r}, "weight": w} for r, w in zip(regions, (3, 2, 1), strict=True)
        ]
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ResourcePlacementPolicy",
        "metadata": {"name": f"p{g:02d}"},
        "spec": {
            "resourceSelector": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "bench",
                "labelSelector": {"matchLabels": {"group": f"g{g}"}},
            },
            "targetClusters": [
                {"selectorType": "label", "values": [f"region={r}" for r in regions]}
            ],
            "placement": {"replicaScheduling": replica, "waterLevelLimit": {"cpu": 0.9}},
        },
    }


def write_repo(root: Path, clusters: int, workloads: int) -> None:
    (root / "clusters").mkdir(parents=True)
    (root / "policies").mkdir()
    (root / "workloads" / "bench").mkdir(parents=True)
    dump = yaml.CSafeDumper
    for i in range(clusters):
        (root / "clusters" / f"c{i:04d}.yaml").write_text(yaml.dump(cluster_doc(i), Dumper=dump))
    policies = [policy_doc(g) for g in range(POLICIES)]
    (root / "policies" / "bench.yaml").write_text(yaml.dump_all(policies, Dumper=dump))
    per_file = 100
    for start in range(0, workloads, per_file):
        docs = [deployment_doc(i) for i in range(start, min(workloads, start + per_file))]
        path = root / "workloads" / "bench" / f"apps-{start // per_file:04d}.yaml"
        path.write_text(yaml.dump_all(docs, Dumper=dump))


def naive(spec: object, limit: int) -> tuple[float, int]:
    """Filters and the balance score, one (workload, cluster) pair at a time, in Python."""
    from reconciler.domain import claims
    from reconciler.kube import demand

    started = time.perf_counter()
    workloads = spec.workloads[:limit]  # type: ignore[attr-defined]
    clusters = spec.clusters  # type: ignore[attr-defined]
    feasible_pairs = 0
    for workload in workloads:
        policy = claims.claim(spec.placement_policies, workload).policy  # type: ignore[attr-defined]
        need = demand.per_replica(workload)
        placement = policy.placement if policy else None
        best = -1.0
        for cluster in clusters:
            if placement and placement.targets:
                ok = any(
                    all(
                        cluster.labels.get(k) == v for k, v in t.label_selector.match_labels.items()
                    )
                    for t in placement.targets
                    if t.label_selector is not None
                )
                if not ok:
                    continue
            if any(t.effect in ("NoSchedule", "NoExecute") for t in cluster.taints):
                continue
            levels = []
            fits = True
            for name, amount in need.items():
                total = cluster.capacity.get(name)
                if total is None or name == "pods":
                    continue
                used = cluster.allocated.get(name, 0.0)
                if used / total > 0.9 or amount > cluster.largest_node_free.get(name, total):
                    fits = False
                    break
                levels.append((used + amount) / total)
            if not fits:
                continue
            feasible_pairs += 1
            best = max(best, 100 * (1 - max(levels, default=0.0)))
    return time.perf_counter() - started, feasible_pairs


def measure_one(clusters: int, workloads: int) -> dict[str, object]:
    """Runs inside a fresh process: build, validate, then time the scheduler and the loop."""
    from reconciler import load, schedule, validate

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        write_repo(root, clusters, workloads)
        spec = validate.spec(load.from_directory(root))
    started = time.perf_counter()
    decisions = schedule.place(spec, diagnose=False)
    took = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sample = min(workloads, NAIVE_SAMPLE if workloads * clusters > 1_000_000 else workloads)
    naive_time, _ = naive(spec, sample)
    placed = sum(1 for d in decisions if d.clusters)
    return {
        "clusters": clusters,
        "workloads": workloads,
        "schedule_s": took,
        "rss_mib": rss,
        "naive_s": naive_time * workloads / sample,
        "naive_extrapolated": sample < workloads,
        "placed": placed,
    }


def whole_command(clusters: int, workloads: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        write_repo(root, clusters, workloads)
        dro = Path(sys.executable).with_name("dro")
        started = time.perf_counter()
        subprocess.run(
            [str(dro), "schedule", str(root), "-o", "json"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=2, type=int, metavar=("CLUSTERS", "WORKLOADS"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(*args.one)))
        return
    header = ("clusters", 8), ("workloads", 9), ("schedule", 9), ("peak RSS", 9)
    print(" ".join(f"{name:>{width}}" for name, width in header), "naive loop   speed-up")
    for clusters, workloads in SIZES:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(clusters), str(workloads)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        row = json.loads(out)
        mark = "~" if row["naive_extrapolated"] else " "
        print(
            f"{clusters:>8} {workloads:>9} {row['schedule_s']:>8.2f}s {row['rss_mib']:>6.0f}MiB "
            f"{mark}{row['naive_s']:>9.1f}s {row['naive_s'] / row['schedule_s']:>7.1f}×"
        )
    clusters, workloads = SIZES[-1]
    took = whole_command(clusters, workloads)
    print(f"whole `dro schedule` command on {clusters} × {workloads}: {took:.1f}s (target ≤ 15 s)")


if __name__ == "__main__":
    main()
