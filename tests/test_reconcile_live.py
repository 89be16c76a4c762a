"""`reconcile --once` against three emulated clusters: observe, schedule, commit, apply, prune.

Every cluster is a real HTTP API emulator on 127.0.0.1 reached through the official client;
the source and output branch are real git repositories.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from reconciler import cli, load
from reconciler.branch import status
from reconciler.domain import Cluster, Decision, Origin
from reconciler.pipeline import PassResult
from tests.livefleet import Fleet, cluster_file, deployment, running_fleet, source_files


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with running_fleet(tmp_path) as running:
        yield running


def committed(fleet: Fleet, path: str) -> dict[str, object]:
    """A file of the output branch's tip, parsed."""
    state = load.previous_state(
        fleet.settings.repo or "", fleet.settings.output_branch, fleet.settings.state_dir
    )
    body = yaml.safe_load(state[path])
    assert isinstance(body, dict)
    return body


def deployment_decision(result: PassResult, name: str = "web") -> Decision:
    """The decision of one Deployment in a pass's result."""
    return next(
        d for d in result.planned.decisions if (d.key.kind, d.key.name) == ("Deployment", name)
    )


def test_a_pass_applies_every_cluster_and_a_steady_pass_writes_nothing(fleet: Fleet) -> None:
    first = fleet.reconcile()
    assert first.applied is not None
    assert first.applied.ok
    assert {s.cluster: s.applied for s in first.applied.clusters} == {"a": 3, "b": 3, "c": 3}
    assert fleet.replicas() == {"a": 2, "b": 2, "c": 2}
    web = fleet.live("a", "Deployment", "web")
    assert web["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dro"
    placement = "apps/Deployment/shop/web"
    assert web["metadata"]["annotations"]["multicluster.io/placement"] == placement
    pod_annotations = web["spec"]["template"]["metadata"]["annotations"]
    assert pod_annotations["multicluster.io/placement"] == placement
    fleet.reset_counters()
    second = fleet.reconcile()
    assert second.commit is not None  # first sight of the rollouts: health changed
    third = fleet.reconcile()
    assert fleet.writes() == 0
    assert third.applied is not None
    assert [(s.applied, s.unchanged, s.writes) for s in third.applied.clusters] == [(0, 3, 0)] * 3
    assert third.commit is None  # only the observation time moved: held by --status-interval


def test_observed_water_levels_steer_the_next_placement(fleet: Fleet) -> None:
    fleet.reconcile()
    fleet.apis["b"].add_pod("default", "hog-0", "node-0", requests={"cpu": "6"})
    fleet.apis["b"].add_pod("default", "hog-1", "node-1", requests={"cpu": "6"})
    fleet.repo.write({"workloads/batch.yaml": deployment("batch", 4)})
    fleet.repo.commit("add batch")
    result = fleet.reconcile()
    batch = deployment_decision(result, "batch")
    assert "b" not in {p.cluster for p in batch.clusters}
    assert sum(p.replicas or 0 for p in batch.clusters) == 4
    status = committed(fleet, "status/clusters/b.yaml")["status"]
    assert isinstance(status, dict)
    assert status["source"] == "observed"
    assert status["waterLevel"]["cpu"] == pytest.approx(12 / 16, abs=1e-4)  # pods, not manifests


def test_no_prune_anywhere_while_a_cluster_cannot_be_listed(fleet: Fleet) -> None:
    fleet.reconcile()
    fleet.repo.write({"workloads/web.yaml": source_files()["workloads/web.yaml"].split("---")[0]})
    fleet.repo.commit("drop web's Deployment and ConfigMap")
    fleet.apis["c"].refuse()
    held = fleet.reconcile()
    assert held.applied is not None
    assert "c" in held.unreachable
    assert held.applied.prune_blocked is not None
    assert "c" in held.applied.prune_blocked
    assert fleet.live("a", "ConfigMap", "web") is not None
    assert fleet.live("b", "Deployment", "web") is not None
    status = committed(fleet, "status/clusters/c.yaml")["status"]
    assert isinstance(status, dict)
    assert status["stale"] is True
    assert status["reachable"] is False
    assert status["unreachableSince"]
    fleet.apis["c"].accept()
    done = fleet.reconcile()
    assert done.applied is not None
    assert done.applied.prune_blocked is None
    assert [s.pruned for s in done.applied.clusters] == [2, 2, 2]
    assert all(fleet.live(n, "ConfigMap", "web") is None for n in fleet.apis)


def test_no_prune_after_a_partial_failure(fleet: Fleet) -> None:
    fleet.reconcile()
    web = source_files()["workloads/web.yaml"].replace("web:1", "web:2").rsplit("---", 1)[0]
    fleet.repo.write({"workloads/web.yaml": web})
    fleet.repo.commit("new image; drop the ConfigMap")
    fleet.apis["b"].fail_next(count=1, status=500, method="PATCH", path_prefix="/apis/apps")
    broken = fleet.reconcile()
    assert broken.applied is not None
    assert not broken.applied.ok
    assert [bool(s.failed) for s in broken.applied.clusters] == [False, True, False]
    assert all(fleet.live(n, "ConfigMap", "web") is not None for n in fleet.apis)
    image = fleet.live("a", "Deployment", "web")["spec"]["template"]["spec"]["containers"][0]
    assert image["image"] == "web:2"  # the rest applied; only the prune waits
    fixed = fleet.reconcile()
    assert fixed.applied is not None
    assert fixed.applied.ok
    assert all(fleet.live(n, "ConfigMap", "web") is None for n in fleet.apis)


def test_a_drift_is_reported_and_corrected(fleet: Fleet) -> None:
    fleet.reconcile()
    live = fleet.live("a", "Deployment", "web")
    live["spec"]["replicas"] = 9
    fleet.apis["a"].put(live)
    result = fleet.reconcile()
    assert result.applied is not None
    drifted = {s.cluster: s.drifted for s in result.applied.clusters}
    assert drifted["b"] == drifted["c"] == []
    assert len(drifted["a"]) == 1
    assert ".spec.replicas" in drifted["a"][0]
    assert fleet.replicas()["a"] == 2


def test_a_move_keeps_the_old_copies_until_the_new_ones_are_healthy(fleet: Fleet) -> None:
    fleet.reconcile()
    fleet.mark_healthy()
    fleet.apis["b"].add_pod("default", "hog-0", "node-0", requests={"cpu": "7"})
    fleet.apis["b"].add_pod("default", "hog-1", "node-1", requests={"cpu": "6"})
    moved = fleet.reconcile()
    web = deployment_decision(moved)
    assert [(p.cluster, p.replicas) for p in web.retiring] == [("b", 1)]
    assert fleet.replicas() == {"a": 3, "b": 2, "c": 2}  # new copy up first, old one kept
    waiting = fleet.reconcile()
    web = deployment_decision(waiting)
    assert web.retiring  # the new copy on a is still Progressing
    assert fleet.replicas()["b"] == 2
    health = committed(fleet, "status/workloads/shop/deployment-web.yaml")["status"]
    assert isinstance(health, dict)
    assert health["health"] == "Progressing"
    fleet.mark_healthy()
    retired = fleet.reconcile()
    web = deployment_decision(retired)
    assert not web.retiring
    assert fleet.replicas()["b"] == 1


def test_a_move_completes_in_one_reconcile_when_the_new_copies_come_up(tmp_path: Path) -> None:
    with running_fleet(tmp_path, rollouts={"a": True, "b": True, "c": True}) as fleet:
        fleet.reconcile()
        fleet.apis["b"].add_pod("default", "hog-0", "node-0", requests={"cpu": "7"})
        fleet.apis["b"].add_pod("default", "hog-1", "node-1", requests={"cpu": "6"})
        result = fleet.reconcile(move_wait=10.0)
        assert result.passes == 2
        assert fleet.replicas() == {"a": 3, "b": 1, "c": 2}


def test_health_is_aggregated_per_workload_and_per_cluster(tmp_path: Path) -> None:
    with running_fleet(tmp_path, rollouts={"a": True, "b": True}) as fleet:
        fleet.reconcile()
        fleet.reconcile()  # the first pass applied; this one observes the rollouts
        health = committed(fleet, "status/workloads/shop/deployment-web.yaml")["status"]
        assert isinstance(health, dict)
        assert health["health"] == "Progressing"
        assert health["message"].startswith("c")
        assert [c["health"] for c in health["clusters"]] == ["Healthy", "Healthy", "Progressing"]
        cluster = committed(fleet, "status/clusters/a.yaml")["status"]
        assert isinstance(cluster, dict)
        assert cluster["health"] == "Healthy"


def test_status_changes_alone_wait_for_the_interval_unless_health_changed(fleet: Fleet) -> None:
    assert fleet.reconcile().commit is not None
    assert fleet.reconcile().commit is not None  # health: none → Progressing
    assert fleet.reconcile().commit is None
    fleet.apis["a"].add_pod("default", "more-load", "node-0", requests={"cpu": "1"})
    assert fleet.reconcile().commit is None  # water levels alone wait for the interval
    assert fleet.reconcile(status_interval=0.0).commit is not None
    fleet.mark_healthy()
    assert fleet.reconcile().commit is not None  # Progressing → Healthy is committed at once


def test_a_suspended_cluster_is_left_alone_and_does_not_block_prune(fleet: Fleet) -> None:
    fleet.reconcile()
    fleet.repo.write(
        {
            "clusters/c.yaml": cluster_file("c", "  suspend: true\n"),
            "workloads/web.yaml": source_files()["workloads/web.yaml"].rsplit("---", 1)[0],
        }
    )
    fleet.repo.commit("suspend c; drop the ConfigMap")
    fleet.apis["c"].refuse()
    result = fleet.reconcile()
    assert result.applied is not None
    assert result.applied.prune_blocked is None
    assert [s.cluster for s in result.applied.clusters] == ["a", "b"]
    assert fleet.live("a", "ConfigMap", "web") is None
    status = committed(fleet, "status/clusters/c.yaml")["status"]
    assert isinstance(status, dict)
    assert status["suspended"] is True


def test_the_cli_prints_a_summary_per_cluster(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["reconcile", "--once", "--repo", str(fleet.repo.bare)]
    args += ["--state-dir", str(fleet.settings.state_dir)]
    args += ["--kubeconfig", str(fleet.settings.kubeconfig), "--move-wait", "0s"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "APPLIED" in out
    assert "UNCHANGED" in out
    assert "PRUNED" in out
    assert "DRIFTED" in out
    # piped: plain columns, kubectl's way, with no box drawing
    assert not set("│┃─━") & set(out)
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("CLUSTER ")))
    rows = [line.split() for line in lines[start + 1 : start + 4]]
    counts = {cells[0]: cells[1:] for cells in rows}
    # writes: dro-system, the inventory's intent, the three objects, its confirmation
    assert counts["a"] == counts["b"] == counts["c"] == ["3", "0", "0", "0", "0", "6"]
    fleet.apis["b"].refuse()
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    # said once, on stderr: not as a log line, nor again per stage the cluster then skipped
    assert err.count("cannot reach the API") == 1, err
    assert "b: unreachable: discover Node: cannot reach the API: 127.0.0.1:" in err
    assert "Connection refused" in err
    assert "prune held back: clusters could not be listed (b)" in err


def test_stale_observation_keeps_the_first_unreachable_time() -> None:
    origin = Origin(path="clusters/x.yaml", line=1)
    cluster = Cluster(name="x", origin=origin, capacity={"cpu": 8.0})
    before = {
        "source": "observed",
        "capacity": {"cpu": 16},
        "used": {"cpu": 4},
        "observedAt": "2026-11-23T08:00:00Z",
        "unreachableSince": "2026-11-23T09:00:00Z",
    }
    seen = status.stale_observation(cluster, before, unreachable_since="2026-11-23T10:00:00Z")
    assert (seen.stale, seen.unreachable_since) == (True, "2026-11-23T09:00:00Z")
    assert (seen.capacity, seen.used) == ({"cpu": 16.0}, {"cpu": 4.0})
    declared = status.stale_observation(cluster, None, unreachable_since=None)
    assert (declared.capacity, declared.unreachable_since) == ({"cpu": 8.0}, None)
