"""An override of `spec.replicas` on one cluster: every number users see is the number that runs.

Two clusters `a` and `b` (10 cpu each, nothing allocated). `shop/web` (4 replicas of 1 cpu) is
divided 2/2 by static weight, and an override sets `spec.replicas: 5` on `a`, so `a` runs 5.
`shop/worker` (6 replicas of 1 cpu, DynamicWeight) is placed after it in the same pass: its
room on `a` is 8.5 − 5 = 3 replicas and on `b` 8.5 − 2 = 6, so it is divided 2/4 (3/3 if the
pass charged the division's 2 instead of the 5 that run). Each surface is checked through
the CLI: `dro schedule -o json|table`, `dro explain`, `dro render` (decision file, manifest,
README) and `dro plan` (Markdown, JSON and its water levels).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import git

from reconciler import cli, load, render, schedule, validate, yamlio
from reconciler.branch import statefiles
from reconciler.domain import Observation

DRO = """\
apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec:
  waterLevelLimit: {cpu: 0.85}
  defaultPlacement:
    targetClusters: [{selectorType: name, values: [a, b]}]
    replicaScheduling: {type: Duplicated}
"""
CLUSTER = """\
apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {{name: {name}, labels: {{region: {name}}}}}
spec:
  capacity: {{cpu: "10", memory: 100Gi, pods: "110"}}
  allocated: {{cpu: "0", memory: "0", pods: "0"}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: shop}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: app
          image: registry.example/{name}:1.0
          resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
"""
POLICIES = """\
apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web}]
  targetClusters: [{selectorType: name, values: [a, b]}]
  placement:
    replicaScheduling:
      type: Divided
      division: StaticWeight
      weights: [{clusters: [a], weight: 1}, {clusters: [b], weight: 1}]
---
apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: worker}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: shop, name: worker}]
  targetClusters: [{selectorType: name, values: [a, b]}]
  placement:
    replicaScheduling: {type: Divided, division: DynamicWeight}
"""
OVERRIDES = {
    "fieldPatches": """\
apiVersion: multicluster.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: web-on-a}
spec:
  resourceSelector: {apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web}
  overrides:
    - clusterSelector: {names: [a]}
      fieldPatches:
        - {path: spec.replicas, value: 5}
""",
    "karmada-plaintext": """\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: web-on-a, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
    - targetCluster: {clusterNames: [a]}
      overriders:
        plaintext: [{path: /spec/replicas, operator: replace, value: 5}]
""",
}
SHOWN = "5 (override; divided 2)"


def write_repo(root: Path, override: str | None) -> Path:
    """The two-cluster repo, with the override of `spec.replicas` on `a` when given."""
    files = {
        "dro.yaml": DRO,
        "clusters/a.yaml": CLUSTER.format(name="a"),
        "clusters/b.yaml": CLUSTER.format(name="b"),
        "workloads/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
        "workloads/web.yaml": DEPLOYMENT.format(name="web", replicas=4),
        "workloads/worker.yaml": DEPLOYMENT.format(name="worker", replicas=6),
        "policies/placement.yaml": POLICIES,
    }
    if override is not None:
        files["policies/overrides.yaml"] = OVERRIDES[override]
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = cli.main(list(args))
    captured = capsys.readouterr()
    assert code in (0, 2), captured.err
    return captured.out


def _clusters(document: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    for decision in document["decisions"]:
        if decision["resource"]["name"] == name:
            return {c["name"]: c for c in decision["clusters"]}
    raise AssertionError(f"no decision for {name}")


@pytest.mark.parametrize("override", sorted(OVERRIDES))
def test_schedule_explain_and_render_show_the_count_that_runs(
    override: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    repo = write_repo(tmp_path / "repo", override)
    document = json.loads(_run(capsys, "schedule", str(repo), "-o", "json"))
    web = _clusters(document, "web")
    assert web["a"] == {"name": "a", "replicas": 2, "effectiveReplicas": 5}
    assert web["b"] == {"name": "b", "replicas": 2}, "no override on b: the pinned fields only"
    worker = _clusters(document, "worker")
    assert {name: c["replicas"] for name, c in worker.items()} == {"a": 2, "b": 4}, (
        "the pass charged a with the 5 web replicas that run there, not the division's 2"
    )

    table = _run(capsys, "schedule", str(repo), "-o", "table")
    assert SHOWN in table
    explained = _run(capsys, "explain", str(repo), "shop/Deployment/web")
    assert SHOWN in explained

    out = tmp_path / "out"
    _run(capsys, "render", str(repo), "--out", str(out))
    manifest = yamlio.parse_documents(
        "m", (out / "clusters/a/shop/deployment-web.yaml").read_bytes()
    )
    assert manifest[0].body["spec"]["replicas"] == 5
    decision = (out / "decisions/shop/deployment-web.yaml").read_text()
    assert "    - effectiveReplicas: 5\n      name: a\n      replicas: 2\n" in decision
    readme = (out / "README.md").read_text()
    assert f"| `shop/Deployment.apps/web` | {SHOWN} | 2 |" in readme


def test_water_levels_charge_the_count_that_runs(tmp_path: Path) -> None:
    spec = validate.spec(load.from_directory(write_repo(tmp_path, "fieldPatches")))
    placed = schedule.place_and_project(spec)
    # a: 5 web + 2 worker of 10 cpu; b: 2 web + 4 worker
    assert placed.water_levels["a"]["cpu"] == 0.7
    assert placed.water_levels["b"]["cpu"] == 0.6
    web = next(d for d in placed.decisions if d.key.name == "web")
    assert dict(web.effective) == {"a": 5}

    # The next pass observes what runs; nothing changes, so the levels stay as observed.
    observed = {
        name: Observation(
            cluster=name,
            capacity={"cpu": 10.0, "memory": 100 * 2.0**30, "pods": 110.0},
            used={"cpu": cpu, "memory": cpu * 2.0**30, "pods": cpu},
            observed_at="2026-01-01T00:00:00Z",
        )
        for name, cpu in (("a", 7.0), ("b", 6.0))
    }
    previous = {d.key: d for d in placed.decisions}
    again = schedule.place_and_project(spec, previous, observed)
    assert again.water_levels["a"]["cpu"] == 0.7
    assert again.water_levels["b"]["cpu"] == 0.6
    assert [d.clusters for d in again.decisions] == [d.clusters for d in placed.decisions]


def test_a_steady_pass_writes_the_same_decision_back(tmp_path: Path) -> None:
    """The decision file holds `effectiveReplicas`; read back, it is the same decision."""
    spec = validate.spec(load.from_directory(write_repo(tmp_path, "fieldPatches")))
    first = schedule.place(spec)
    tree = render.tree(spec, first)
    path = "decisions/shop/deployment-web.yaml"
    back = statefiles.decision(path, tree[path])
    assert dict(back.effective) == {"a": 5}
    previous = {back.key: back}
    second = render.tree(spec, schedule.place(spec, previous))
    assert second[path] == tree[path]


def test_plan_shows_the_override_and_the_water_level_it_makes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = write_repo(tmp_path / "work", None)
    git(work, "init", "--quiet", "--initial-branch=main")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "two clusters")
    git(work, "checkout", "--quiet", "-b", "override")
    write_repo(work, "fieldPatches")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "five on a")
    git(work, "checkout", "--quiet", "main")
    base = ("plan", "--repo", str(work), "--base", "main", "--head", "override")
    document = json.loads(_run(capsys, *base, "-o", "json"))
    web = next(w for w in document["workloads"] if w["workload"] == "shop/Deployment.apps/web")
    assert web["before"] == {"a": 2, "b": 2}
    assert web["after"] == {"a": 5, "b": 2}
    assert web["dividedAfter"] == {"a": 2}
    levels = {c["cluster"]: c for c in document["waterLevels"]}
    assert levels["a"]["after"]["cpu"] == 0.7  # 5 web + 2 worker
    markdown = _run(capsys, *base, "-o", "markdown")
    assert f"| `a` | 2 | {SHOWN} |" in markdown


def test_a_removed_cluster_is_said_to_hold_the_count_that_runs(tmp_path: Path) -> None:
    spec = validate.spec(load.from_directory(write_repo(tmp_path, "fieldPatches")))
    gone = dataclasses.replace(spec, clusters=tuple(c for c in spec.clusters if c.name != "a"))
    (warning,) = validate.removed_clusters(gone, schedule.place(spec))
    assert "5× shop/Deployment.apps/web" in warning
    assert "2× shop/Deployment.apps/worker" in warning
