"""Render benchmark: `dro render` against `kubectl kustomize` on equivalent overlays.

The fleet: 100 clusters × (100 Deployments + 100 Services + 100 ConfigMaps), every Deployment
with a per-cluster replica count and image tag. dro gets one source repo (a Duplicated policy
and a ClusterOverridePolicy with one rule per cluster); kustomize gets a base and 100 overlays
that each patch the replicas of every Deployment and set the image tag. Both are timed from a
cold process, in the same run, and the outputs are checked to agree on replicas and images.

Run: `make bench` or `.venv/bin/python bench/render.py [--clusters N] [--apps N]`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml


def replicas_for(cluster: int) -> int:
    return 1 + cluster % 7


def tag_for(cluster: int) -> str:
    return f"1.{cluster % 5}.0"


def deployment(i: int) -> dict[str, object]:
    labels = {"app": f"app{i:03d}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"app{i:03d}", "namespace": "prod", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example/app:1.0.0",
                            "ports": [{"containerPort": 8080}],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ]
                },
            },
        },
    }


def service(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"app{i:03d}", "namespace": "prod"},
        "spec": {"selector": {"app": f"app{i:03d}"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def configmap(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"app{i:03d}-config", "namespace": "prod"},
        "data": {"LOG_LEVEL": "info", "FEATURE_FLAGS": f"flag-{i}"},
    }


def objects(apps: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(apps):
        out += [deployment(i), service(i), configmap(i)]
    return out


def write_dro_repo(root: Path, clusters: int, apps: int) -> None:
    (root / "clusters").mkdir(parents=True)
    (root / "workloads").mkdir()
    (root / "policies").mkdir()
    (root / "dro.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "multicluster.io/v1alpha1",
                "kind": "SchedulerConfiguration",
                "metadata": {"name": "dro"},
                "spec": {"kubernetesVersion": "1.32"},
            }
        )
    )
    for c in range(clusters):
        name = f"c{c:03d}"
        (root / "clusters" / f"{name}.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "multicluster.io/v1alpha1",
                    "kind": "Cluster",
                    "metadata": {
                        "name": name,
                        "labels": {"region": f"r{c % 3}", "provider": "aws"},
                    },
                    "spec": {
                        "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "10000"},
                        "allocated": {"cpu": "10", "memory": "10Gi", "pods": "100"},
                    },
                }
            )
        )
    (root / "workloads" / "apps.yaml").write_text(yaml.safe_dump_all(objects(apps)))
    placement = {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ResourcePlacementPolicy",
        "metadata": {"name": "everywhere"},
        "spec": {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod"},
                {"apiVersion": "v1", "kind": "Service", "namespace": "prod"},
                {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "prod"},
            ],
            "placement": {"replicaScheduling": {"type": "Duplicated"}},
        },
    }
    overrides = {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ClusterOverridePolicy",
        "metadata": {"name": "per-cluster"},
        "spec": {
            "resourceSelector": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "prod",
            },
            "overrides": [
                {
                    "clusterSelector": {"names": [f"c{c:03d}"]},
                    "fieldPatches": [
                        {"path": "spec.replicas", "value": replicas_for(c)},
                        {
                            "path": "spec.template.spec.containers[0].image",
                            "value": f"registry.example/app:{tag_for(c)}",
                        },
                    ],
                }
                for c in range(clusters)
            ],
        },
    }
    (root / "policies" / "placement.yaml").write_text(yaml.safe_dump(placement))
    (root / "policies" / "overrides.yaml").write_text(yaml.safe_dump(overrides))


def write_kustomize(root: Path, clusters: int, apps: int) -> list[Path]:
    base = root / "base"
    base.mkdir(parents=True)
    (base / "apps.yaml").write_text(yaml.safe_dump_all(objects(apps)))
    (base / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["apps.yaml"]}))
    overlays = []
    for c in range(clusters):
        overlay = root / "overlays" / f"c{c:03d}"
        overlay.mkdir(parents=True)
        patches = [
            {
                "target": {"kind": "Deployment", "name": f"app{i:03d}"},
                "patch": yaml.safe_dump(
                    [{"op": "replace", "path": "/spec/replicas", "value": replicas_for(c)}]
                ),
            }
            for i in range(apps)
        ]
        (overlay / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "resources": ["../../base"],
                    "patches": patches,
                    "images": [{"name": "registry.example/app", "newTag": tag_for(c)}],
                }
            )
        )
        overlays.append(overlay)
    return overlays


def run_kustomize(overlays: list[Path], workers: int) -> tuple[float, dict[str, str]]:
    def one(overlay: Path) -> tuple[str, str]:
        done = subprocess.run(
            ["kubectl", "kustomize", str(overlay)], check=True, capture_output=True, text=True
        )
        return overlay.name, done.stdout

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outputs = dict(pool.map(one, overlays))
    return time.perf_counter() - start, outputs


def run_dro(repo: Path, out: Path) -> float:
    dro = Path(sys.executable).with_name("dro")
    start = time.perf_counter()
    subprocess.run(
        [str(dro), "render", str(repo), "--out", str(out)], check=True, capture_output=True
    )
    return time.perf_counter() - start


def check_agreement(out: Path, kustomized: dict[str, str], clusters: int, apps: int) -> int:
    """Compare replicas and images of every Deployment; return how many were compared."""
    compared = 0
    for c in range(clusters):
        name = f"c{c:03d}"
        theirs = {
            d["metadata"]["name"]: d
            for d in yaml.safe_load_all(kustomized[name])
            if d["kind"] == "Deployment"
        }
        for i in range(apps):
            ours = yaml.safe_load(
                (out / "clusters" / name / "prod" / f"deployment-app{i:03d}.yaml").read_text()
            )
            other = theirs[f"app{i:03d}"]
            for doc in (ours, other):
                assert doc["spec"]["replicas"] == replicas_for(c), (name, i, doc["spec"])
            ours_image = ours["spec"]["template"]["spec"]["containers"][0]["image"]
            their_image = other["spec"]["template"]["spec"]["containers"][0]["image"]
            assert ours_image == their_image, (name, i, ours_image, their_image)
            compared += 1
    return compared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument(
        "--kustomize-workers",
        type=int,
        default=1,
        help="overlays rendered at once by kubectl (default 1, as a CI job would)",
    )
    args = parser.parse_args()
    if shutil.which("kubectl") is None:
        sys.exit("kubectl is not installed: the baseline cannot run")
    workers = args.kustomize_workers
    with tempfile.TemporaryDirectory(prefix="dro-bench-render-") as tmp:
        root = Path(tmp)
        write_dro_repo(root / "repo", args.clusters, args.apps)
        overlays = write_kustomize(root / "kustomize", args.clusters, args.apps)
        dro_seconds = run_dro(root / "repo", root / "out")
        kustomize_seconds, kustomized = run_kustomize(overlays, workers)
        compared = check_agreement(root / "out", kustomized, args.clusters, args.apps)
        files = sum(
            1 for p in (root / "out" / "clusters").rglob("*.yaml") if p.name != "kustomization.yaml"
        )
    objects_total = args.clusters * args.apps * 3
    print(
        f"render benchmark: {args.clusters} clusters × {args.apps * 3} objects "
        f"= {objects_total} objects ({files} files written by dro)"
    )
    print(f"{'tool':<42}{'seconds':>10}")
    print(f"{'dro render (cold process, whole command)':<42}{dro_seconds:>10.2f}")
    print(
        f"{f'kubectl kustomize x{len(overlays)} ({workers} in parallel)':<42}"
        f"{kustomize_seconds:>10.2f}"
    )
    print(
        f"speed-up: {kustomize_seconds / dro_seconds:.1f}x (target >= 10x); "
        f"{compared} Deployments agree on replicas and image"
    )


if __name__ == "__main__":
    main()
