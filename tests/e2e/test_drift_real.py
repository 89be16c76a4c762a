"""Drift and `dro diff` against the three real clusters: the fields a real kube-apiserver
defaults are not differences, a kubectl-style edit is (in `dro diff`'s JSON and text, exit 2),
and under `placement.apply.drift: Report` the edit is left on the cluster and recorded in
`status/drift/` with its JSON pointer.

The emulator versions are tests/test_diff_live.py and tests/test_drift_live.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from reconciler import cli
from tests.e2e.controlplane import Fleet
from tests.e2e.reconcilefleet import DroFleet, dro_on_fleet

REPORT = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: web-report}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: shop}]
  targetClusters: [{selectorType: label, values: ["env=prod"]}]
  placement:
    replicaScheduling: {type: Duplicated}
    apply: {drift: Report}
"""


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def diff(dro: DroFleet, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    """`dro diff` on the fleet: (exit code, stdout)."""
    capsys.readouterr()
    settings = dro.settings
    args = ["diff", "--repo", str(settings.repo), "--state-dir", str(settings.state_dir)]
    args += ["--kubeconfig", str(settings.kubeconfig), *extra]
    code = cli.main(args)
    return code, capsys.readouterr().out


def test_dro_diff_ignores_defaults_and_reports_a_kubectl_edit(
    dro: DroFleet, capsys: pytest.CaptureFixture[str]
) -> None:
    first = dro.reconcile()
    assert first.applied is not None
    assert first.applied.ok
    code, out = diff(dro, capsys, "-o", "json")
    assert code == 0, out  # every field the API server defaulted is on both sides
    assert json.loads(out)["differences"] == 0
    dro.apps("e2e-b").patch_namespaced_deployment(
        "web", "shop", {"spec": {"replicas": 5}}, field_manager="kubectl-edit"
    )
    code, out = diff(dro, capsys, "-o", "json")
    assert code == 2
    found = {
        (cluster["name"], obj["kind"], obj["name"]): obj["changes"]
        for cluster in json.loads(out)["clusters"]
        for obj in cluster["objects"]
    }
    assert list(found) == [("e2e-b", "Deployment", "web")]
    assert {"pointer": "/spec/replicas", "live": 5, "rendered": 2} in found[
        ("e2e-b", "Deployment", "web")
    ]
    code, text = diff(dro, capsys, "--cluster", "e2e-b")
    assert code == 2
    assert "--- live/e2e-b/apps.v1.Deployment.shop.web" in text
    assert "-  replicas: 5" in text.splitlines()
    assert "+  replicas: 2" in text.splitlines()


def test_report_leaves_a_real_edit_and_records_it(dro: DroFleet) -> None:
    dro.repo.write({"policies/web-report.yaml": REPORT})
    dro.repo.commit("report drift of the shop Deployments")
    first = dro.reconcile()
    assert first.applied is not None
    assert first.applied.ok
    apps = dro.apps("e2e-a")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:x"}]}}}}
    apps.patch_namespaced_deployment("web", "shop", patch, field_manager="kubectl-edit")
    result = dro.reconcile()
    assert result.applied is not None
    reported = {s.cluster: s.reported for s in result.applied.clusters}
    assert reported["e2e-b"] == reported["e2e-c"] == []
    assert len(reported["e2e-a"]) == 1, reported
    live = apps.read_namespaced_deployment("web", "shop")
    assert live.spec.template.spec.containers[0].image == "web:x"
    (entry,) = dro.committed("status/drift/e2e-a.yaml")["status"]["objects"]
    assert entry["resource"] == "apps/Deployment/shop/web"
    assert entry["rule"] == "Report"
    pointer = "/spec/template/spec/containers/0/image"
    assert entry["fields"] == [{"pointer": pointer, "live": "web:x", "rendered": "web:1"}]
