"""Builders for the `dro simulate` tests: a source repo and a trace file around it, written
under a folder; shared by test_simulate and test_simulate_cli."""

from __future__ import annotations

import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SMALL = ROOT / "examples" / "traces" / "small" / "trace.yaml"

DRO_YAML = """\
apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec:
  waterLevelLimit: {cpu: 0.8, memory: 0.9}
  rebalance: {threshold: 0.1, maxMovesPerPass: 100, cooldown: 10m}
"""
POLICY = """\
apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: shop}]
  placement:
    replicaScheduling: {type: Divided, division: DynamicWeight}
"""


def cluster_yaml(name: str, cpu: int, used: int, **extra: str) -> str:
    more = "".join(f"  {k}: {v}\n" for k, v in extra.items())
    return (
        "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\n"
        f"metadata: {{name: {name}, labels: {{region: r1}}}}\n"
        f"spec:\n  capacity: {{cpu: '{cpu}', memory: 64Gi}}\n"
        f"  allocated: {{cpu: '{used}', memory: 8Gi}}\n"
        f"  cost: {{cpu: 0.5}}\n{more}"
    )


def deployment_yaml(name: str, replicas: int, cpu: str = "1") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}, namespace: shop, labels: {{app: {name}}}}}
        spec:
          replicas: {replicas}
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers:
                - name: app
                  image: registry.example/app:1
                  resources: {{requests: {{cpu: "{cpu}", memory: 256Mi}}}}
        """
    )


def write_trace(
    root: Path,
    clusters: dict[str, tuple[int, int]],
    workloads: dict[str, int],
    body: str,
    extra: dict[str, str] | None = None,
) -> Path:
    """A source repo under root/repo and root/trace.yaml with `body` under `spec:`."""
    repo = root / "repo"
    for folder in ("clusters", "policies", "workloads/shop"):
        (repo / folder).mkdir(parents=True, exist_ok=True)
    (repo / "dro.yaml").write_text(DRO_YAML)
    (repo / "policies" / "web.yaml").write_text(POLICY)
    for name, (cpu, used) in clusters.items():
        (repo / "clusters" / f"{name}.yaml").write_text(cluster_yaml(name, cpu, used))
    for name, replicas in workloads.items():
        (repo / "workloads" / "shop" / f"{name}.yaml").write_text(deployment_yaml(name, replicas))
    for path, text in (extra or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    head = (
        "apiVersion: multicluster.io/v1alpha1\nkind: Trace\nmetadata: {name: t}\nspec:\n"
        "  source: repo\n  start: '2025-01-06T00:00:00Z'\n"
    )
    path = root / "trace.yaml"
    path.write_text(head + textwrap.indent(textwrap.dedent(body), "  "))
    return path
