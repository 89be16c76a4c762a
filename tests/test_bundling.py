"""Bundling through the whole pass: a ConfigMap no policy selects follows the one Deployment
that needs it, and a reference to an object missing from the repo is a located warning."""

from __future__ import annotations

from pathlib import Path

from reconciler import load, schedule, validate
from reconciler.errors import Severity
from tests.livefleet import source_files

SOLO = """apiVersion: apps/v1
kind: Deployment
metadata: {name: solo, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: solo}}
  template:
    metadata: {labels: {app: solo}}
    spec:
      imagePullSecrets: [{name: registry-login}]
      containers:
        - name: solo
          image: "solo:1"
          envFrom: [{configMapRef: {name: solo-config}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: solo-config, namespace: shop}
data: {mode: alone}
"""
ONLY_A = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: only-a}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: shop, name: solo}]
  targetClusters: [{selectorType: name, values: [a]}]
  placement: {replicaScheduling: {type: Divided, division: DynamicWeight}}
"""


def test_a_configmap_follows_the_workload_that_needs_it(tmp_path: Path) -> None:
    files = source_files({"workloads/solo.yaml": SOLO, "policies/only-a.yaml": ONLY_A})
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    result = validate.check(load.from_directory(tmp_path))
    assert result.spec is not None, [str(p) for p in result.problems]
    (warning,) = [p for p in result.problems if "registry-login" in p.message]
    assert warning.severity is Severity.WARNING
    assert (warning.path, warning.line) == ("workloads/solo.yaml", 10)
    decisions = {str(d.key): d for d in schedule.place(result.spec)}
    assert [p.cluster for p in decisions["shop/Deployment.apps/solo"].clusters] == ["a"]
    config = decisions["shop/ConfigMap/solo-config"]
    assert [p.cluster for p in config.clusters] == ["a"], "not the default placement's a, b, c"
    assert config.diagnosis.trigger.text == "follows shop/Deployment.apps/solo"


def test_a_namespace_goes_wherever_an_object_in_it_goes(tmp_path: Path) -> None:
    """Found on a real cluster (tests/e2e/test_reconcile_real.py): the Namespace followed its
    one workload to cluster a alone, while a ConfigMap in it that no workload needs went by
    the default placement to a, b and c; b and c answered the ConfigMap with 404 (namespace
    not found), every pass, and held back the prune of ConfigMaps there."""
    web = source_files()["workloads/web.yaml"].split("---")
    config_only = "---".join([web[0], web[2]])  # Namespace shop and ConfigMap web
    files = source_files(
        {
            "workloads/web.yaml": config_only,
            "workloads/solo.yaml": SOLO,
            "policies/only-a.yaml": ONLY_A,
        }
    )
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    result = validate.check(load.from_directory(tmp_path))
    assert result.spec is not None, [str(p) for p in result.problems]
    decisions = {(d.key.kind, d.key.name): d for d in schedule.place(result.spec)}
    assert [p.cluster for p in decisions["Deployment", "solo"].clusters] == ["a"]
    assert [p.cluster for p in decisions["ConfigMap", "web"].clusters] == ["a", "b", "c"]
    namespace = decisions["Namespace", "shop"]
    assert [p.cluster for p in namespace.clusters] == ["a", "b", "c"]
