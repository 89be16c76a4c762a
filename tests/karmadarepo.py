"""A Karmada-style source folder for CLI tests: three member clusters, as in Karmada's
quickstart (`hack/local-up-karmada.sh`), a dro.yaml whose defaultPlacement duplicates onto
every one of them, and the files a test adds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler import cli

DRO_YAML = """\
apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec:
  kubernetesVersion: "1.34"
  defaultPlacement:
    targetClusters: [{selectorType: label, values: ["env=prod"]}]
    replicaScheduling: {type: Duplicated}
"""
MEMBERS = ("member1", "member2", "member3")
# Karmada's samples/nginx: deployment.yaml, then propagationpolicy.yaml
NGINX_SAMPLE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  replicas: 2
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - image: nginx
        name: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - targetCluster:
              clusterNames:
                - member1
            weight: 1
          - targetCluster:
              clusterNames:
                - member2
            weight: 1
"""


def deployment(replicas: int) -> str:
    """The sample's Deployment with `replicas`."""
    return NGINX_SAMPLE.split("---", maxsplit=1)[0].replace("replicas: 2", f"replicas: {replicas}")


def cluster(name: str, extra: str = "") -> str:
    """A member cluster with room for anything the tests place."""
    return (
        "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\nmetadata:\n"
        f"  name: {name}\n  labels: {{env: prod}}\nspec:\n"
        '  capacity: {cpu: "100", memory: 400Gi, pods: "1000"}\n' + extra
    )


def write(root: Path, files: dict[str, str]) -> Path:
    """The repo at `root`: dro.yaml, the three members and `files` (which may replace them)."""
    merged = {"dro.yaml": DRO_YAML, **{f"clusters/{m}.yaml": cluster(m) for m in MEMBERS}}
    for relative, text in {**merged, **files}.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def schedule(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """`dro schedule ROOT -o json`, parsed: decision per `Kind/name`."""
    capsys.readouterr()
    assert cli.main(["schedule", str(root), "-o", "json"]) == 0, capsys.readouterr()
    out = json.loads(capsys.readouterr().out)
    return {f"{d['resource']['kind']}/{d['resource']['name']}": d for d in out["decisions"]}


def placed(decision: dict[str, Any]) -> dict[str, int]:
    """Cluster → replicas of one decision."""
    return {c["name"]: c["replicas"] for c in decision["clusters"]}


def render(root: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """`dro render ROOT --out OUT`; returns OUT."""
    capsys.readouterr()
    code = cli.main(["render", str(root), "--out", str(out)])
    assert code == 0, capsys.readouterr()
    return out
