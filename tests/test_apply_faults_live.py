"""Faults in the middle of apply, against three emulated clusters: a `dro reconcile --once`
killed by SIGKILL mid-apply leaves nothing a later pass cannot prune (the inventory is written
first), and one object a cluster rejects neither stops the rest nor holds back more prune than
it must."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler import cli
from tests.livefleet import Fleet, running_fleet, source_files

DRO = Path(sys.executable).parent / "dro"
BATCH = """apiVersion: v1
kind: Namespace
metadata: {name: batch}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: batch, namespace: batch}
data: {mode: nightly}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: batch}
spec:
  replicas: 1
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers: [{name: batch, image: "batch:1"}]
"""
EXTRA = """apiVersion: v1
kind: ConfigMap
metadata: {name: old, namespace: shop}
data: {v: "1"}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: old, namespace: other}
data: {v: "1"}
"""
BAD = """apiVersion: v1
kind: ConfigMap
metadata: {name: bad, namespace: shop}
data: {v: "1"}
"""
INVALID = (
    'ConfigMap "bad" is invalid: data[bad key]: Invalid value: "bad key": a valid config key '
    "must consist of alphanumeric characters, '-', '_' or '.'"
)


def batch_objects(fleet: Fleet, cluster: str) -> list[object]:
    api = fleet.apis[cluster]
    return [
        api.get("", "v1", "namespaces", "", "batch"),
        api.get("", "v1", "configmaps", "batch", "batch"),
        api.get("apps", "v1", "deployments", "batch", "batch"),
    ]


def test_a_pass_killed_mid_apply_leaves_nothing_a_later_pass_cannot_prune(
    tmp_path: Path,
) -> None:
    with running_fleet(tmp_path) as fleet:
        fleet.repo.write({"workloads/batch.yaml": BATCH})
        fleet.repo.commit("add batch")
        held = fleet.apis["a"].hold("PATCH", "/apis/apps/v1/namespaces/batch/deployments")
        settings = fleet.settings
        command = [str(DRO), "reconcile", "--once", "--repo", str(settings.repo)]
        command += ["--state-dir", str(settings.state_dir), "--move-wait", "0s"]
        command += ["--kubeconfig", str(settings.kubeconfig)]
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            assert held.arrived.wait(120), "the pass never reached batch's Deployment on a"
            process.send_signal(signal.SIGKILL)
            assert process.wait(30) == -signal.SIGKILL
        finally:
            if process.poll() is None:
                process.kill()
        held.release()  # the API server still completes a request whose client died
        assert held.answered.wait(30)
        assert all(batch_objects(fleet, "a")), "the killed pass created all three on a"
        fleet.repo.write({"workloads/batch.yaml": None})
        fleet.repo.commit("remove batch")
        result = fleet.reconcile()
        assert result.applied is not None
        assert result.applied.ok, [(s.failed, s.rejected) for s in result.applied.clusters]
        for cluster in fleet.apis:
            assert batch_objects(fleet, cluster) == [None, None, None], cluster


def test_one_rejected_object_neither_stops_the_rest_nor_holds_back_other_prunes(
    tmp_path: Path,
) -> None:
    with running_fleet(tmp_path) as fleet:
        fleet.repo.write({"workloads/extra.yaml": EXTRA})
        fleet.repo.commit("extra")
        assert fleet.reconcile().applied is not None
        web = source_files()["workloads/web.yaml"].replace("web:1", "web:2")
        fleet.repo.write({"workloads/extra.yaml": BAD, "workloads/web.yaml": web})
        fleet.repo.commit("add bad, new image, drop both old ConfigMaps and other")
        path = "/api/v1/namespaces/shop/configmaps/bad"
        fleet.apis["a"].faults.fail_next(1, 422, "PATCH", path, message=INVALID)
        result = fleet.reconcile()
        assert result.applied is not None
        assert not result.applied.ok
        a = result.applied.clusters[0]
        assert a.failed == []
        assert a.rejected == [
            "workloads/extra.yaml:1: cluster a: apply ConfigMap shop/bad: HTTP 422 "
            f"Unprocessable Entity: {INVALID}"
        ]
        assert result.applied.prune_blocked is None
        assert result.applied.prune_held == ("ConfigMap in shop",)
        for cluster in fleet.apis:
            image = fleet.live(cluster, "Deployment", "web")["spec"]["template"]["spec"]
            assert image["containers"][0]["image"] == "web:2", "a later stage still applied"
            rejected_here = cluster == "a"
            assert (fleet.live(cluster, "ConfigMap", "bad") is None) == rejected_here
            assert fleet.live(cluster, "ConfigMap", "old") is not None, "held: it may be replaced"
            assert fleet.live(cluster, "ConfigMap", "old", namespace="other") is None
            assert fleet.live(cluster, "Namespace", "other", namespace="") is None
        healed = fleet.reconcile()
        assert healed.applied is not None
        assert healed.applied.ok
        for cluster in fleet.apis:
            assert fleet.live(cluster, "ConfigMap", "bad") is not None
            assert fleet.live(cluster, "ConfigMap", "old") is None


def test_the_cli_names_the_rejected_object_and_the_narrow_prune_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_fleet(tmp_path) as fleet:
        fleet.repo.write({"workloads/extra.yaml": BAD})
        fleet.repo.commit("bad")
        path = "/api/v1/namespaces/shop/configmaps/bad"
        fleet.apis["b"].faults.fail_next(1, 422, "PATCH", path, message=INVALID)
        settings = fleet.settings
        args = ["reconcile", "--once", "--repo", str(settings.repo), "--move-wait", "0s"]
        args += ["--state-dir", str(settings.state_dir), "--kubeconfig", str(settings.kubeconfig)]
        assert cli.main(args) == 1
        out = capsys.readouterr().err.splitlines()
        rejected = "b: not applied: workloads/extra.yaml:1: cluster b: apply ConfigMap shop/bad"
        assert f"{rejected}: HTTP 422 Unprocessable Entity: {INVALID}" in out
        held = "prune held back for ConfigMap in shop: an object of that kind and namespace"
        assert f"{held} was not applied" in out
