"""`reconcile --once` against the three real clusters: first apply, a steady pass with no
write, drift corrected, prune held fleet-wide while one API server is stopped, and pods the
real kube-scheduler leaves Pending on the small cluster moved after `unschedulableAfter`.

The emulator versions are tests/test_reconcile_live.py; here every cluster is a real
kube-apiserver with its controllers, scheduler and kwok (tests/e2e/controlplane.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client import ApiClient

from reconciler.domain import Decision
from reconciler.kube import inventory
from reconciler.pipeline import PassResult
from tests.e2e.controlplane import Fleet, apiserver_stopped
from tests.e2e.reconcilefleet import (
    DYNAMIC_BATCH,
    STATIC_BATCH,
    WEB,
    DroFleet,
    dro_on_fleet,
)
from tests.e2e.waiting import eventually

CLUSTERS = ("e2e-a", "e2e-b", "e2e-c")
CONFIG_ONLY = "---".join(WEB.split("---")[::2])  # web's Namespace and ConfigMap, no Deployment


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def decision(result: PassResult, name: str) -> Decision:
    """The decision of one Deployment in a pass's result."""
    return next(
        d for d in result.planned.decisions if (d.key.kind, d.key.name) == ("Deployment", name)
    )


def inventory_ids(dro: DroFleet, cluster: str) -> list[str]:
    """The object ids of a cluster's live inventory ConfigMap."""
    found = dro.config_map(cluster, inventory.INVENTORY_NAME, inventory.INVENTORY_NAMESPACE)
    assert found is not None, f"{cluster}: no inventory"
    lines = "\n".join(found.data.values()).splitlines()
    return sorted(line.split()[0] for line in lines if line.strip())


def versions(dro: DroFleet) -> dict[str, tuple[str, ...]]:
    """Per cluster: what changes on any write to dro's objects (the Deployment's generation,
    the resourceVersions of the ConfigMap, the Namespace and the inventory)."""
    found = {}
    for cluster in CLUSTERS:
        web = dro.deployment(cluster, "web")
        config = dro.config_map(cluster, "web")
        held = dro.config_map(cluster, inventory.INVENTORY_NAME, inventory.INVENTORY_NAMESPACE)
        namespace = dro.core(cluster).read_namespace("shop")
        found[cluster] = (
            str(web.metadata.generation),
            config.metadata.resource_version,
            held.metadata.resource_version,
            namespace.metadata.resource_version,
        )
    return found


def test_a_first_pass_applies_every_cluster_and_a_steady_pass_writes_nothing(
    dro: DroFleet,
) -> None:
    first = dro.reconcile()
    assert first.applied is not None
    assert first.applied.ok, first.applied
    assert first.unreachable == {}
    assert {s.cluster: s.applied for s in first.applied.clusters} == dict.fromkeys(CLUSTERS, 3)
    assert dro.replicas("web") == dict.fromkeys(CLUSTERS, 2)  # Duplicated
    for cluster in CLUSTERS:
        web = dro.deployment(cluster, "web")
        assert web.metadata.labels["app.kubernetes.io/managed-by"] == "dro"
        assert web.metadata.annotations["multicluster.io/placement"] == "apps/Deployment/shop/web"
        assert [f.manager for f in web.metadata.managed_fields if f.operation == "Apply"] == ["dro"]
        assert dro.config_map(cluster, "web").data == {"greeting": "hello"}
        ids = inventory_ids(dro, cluster)
        assert len(ids) == 3, ids
        assert any("Deployment" in i and "web" in i for i in ids), ids
    dro.wait_available("web")  # the real scheduler placed the pods, kwok runs them
    seen = dro.reconcile()
    assert seen.applied is not None
    assert seen.commit is not None  # first sight of the rollouts: their health is committed
    health = dro.committed("status/workloads/shop/deployment-web.yaml")["status"]
    assert health["health"] == "Healthy", health
    before = versions(dro)
    steady = dro.reconcile()
    assert steady.applied is not None
    assert [(s.applied, s.unchanged, s.writes) for s in steady.applied.clusters] == [(0, 3, 0)] * 3
    assert steady.commit is None
    assert versions(dro) == before  # the servers agree: nothing was written


def test_a_drift_by_another_field_manager_is_reported_and_corrected(dro: DroFleet) -> None:
    dro.reconcile()
    apps = dro.apps("e2e-a")
    apps.patch_namespaced_deployment(
        "web", "shop", {"spec": {"replicas": 5}}, field_manager="intruder"
    )
    taken = apps.read_namespaced_deployment("web", "shop")
    assert taken.spec.replicas == 5
    assert "intruder" in {f.manager for f in taken.metadata.managed_fields}
    result = dro.reconcile()
    assert result.applied is not None
    drifted = {s.cluster: s.drifted for s in result.applied.clusters}
    assert drifted["e2e-b"] == drifted["e2e-c"] == []
    assert len(drifted["e2e-a"]) == 1, drifted
    assert ".spec.replicas" in drifted["e2e-a"][0]
    corrected = apps.read_namespaced_deployment("web", "shop")
    assert corrected.spec.replicas == 2
    owners = {f.manager: str(f.fields_v1) for f in corrected.metadata.managed_fields if f.fields_v1}
    assert "f:replicas" in owners["dro"]  # conflicts forced: dro owns the field again
    assert "f:replicas" not in owners.get("intruder", "")
    again = dro.reconcile()
    assert again.applied is not None
    assert all(s.drifted == [] and s.writes == 0 for s in again.applied.clusters)


def test_no_prune_anywhere_while_one_api_server_is_stopped(dro: DroFleet) -> None:
    dro.reconcile()
    dro.repo.write({"workloads/web.yaml": WEB.rsplit("---", 1)[0]})
    dro.repo.commit("drop web's ConfigMap")
    with apiserver_stopped(dro.fleet["e2e-c"]):
        began = time.monotonic()
        held = dro.reconcile()
        took = time.monotonic() - began
        assert held.applied is not None
        assert set(held.unreachable) == {"e2e-c"}, held.unreachable
        assert held.applied.prune_blocked is not None
        assert "e2e-c" in held.applied.prune_blocked
        assert [s.pruned for s in held.applied.clusters if s.cluster != "e2e-c"] == [0, 0]
        for cluster in ("e2e-a", "e2e-b"):
            assert dro.config_map(cluster, "web") is not None, cluster
        status = dro.status_of("e2e-c")
        assert (status["stale"], status["reachable"]) == (True, False)
        assert status["unreachableSince"]
        assert took < 30, f"a pass with one API server down took {took:.1f} s"
    assert dro.config_map("e2e-c", "web") is not None  # back, and still untouched
    done = dro.reconcile()
    assert done.applied is not None
    assert done.unreachable == {}
    assert done.applied.prune_blocked is None
    assert [s.pruned for s in done.applied.clusters] == [1, 1, 1]
    assert all(dro.config_map(c, "web") is None for c in CLUSTERS)
    assert dro.status_of("e2e-c")["reachable"] is True


def unschedulable(dro: DroFleet, cluster: str, app: str) -> list[client.V1Pod]:
    """The pods of an app the cluster's scheduler marked Unschedulable."""
    pods = dro.core(cluster).list_namespaced_pod("shop", label_selector=f"app={app}").items
    return [
        pod
        for pod in pods
        if pod.status.phase == "Pending"
        and any(
            c.type == "PodScheduled" and c.reason == "Unschedulable"
            for c in pod.status.conditions or []
        )
    ]


def settled(dro: DroFleet, replicas: int) -> list[client.V1Pod] | None:
    """e2e-c's Unschedulable batch pods, once its `replicas` pods are each Running or so."""
    pods = dro.core("e2e-c").list_namespaced_pod("shop", label_selector="app=batch").items
    pods = [pod for pod in pods if pod.metadata.deletion_timestamp is None]
    stuck = unschedulable(dro, "e2e-c", "batch")
    running = [pod for pod in pods if pod.status.phase == "Running"]
    return stuck if stuck and len(stuck) + len(running) == len(pods) == replicas else None


def pended_past_unschedulable_after(stuck: list[client.V1Pod]) -> None:
    """Wait until every stuck pod has been Unschedulable longer than the 3s of dro.yaml."""
    since = max(
        c.last_transition_time
        for pod in stuck
        for c in pod.status.conditions
        if c.type == "PodScheduled"
    )
    reasons = {c.message for pod in stuck for c in pod.status.conditions if c.reason}
    assert all("Insufficient cpu" in reason for reason in reasons), reasons
    eventually(
        "the pods to have pended past unschedulableAfter (3s)",
        lambda: True if (datetime.now(UTC) - since).total_seconds() > 4 else None,
    )


def hog(dro: DroFleet, cpu_milli: int) -> None:
    """A pod of a higher priority than dro's that needs `cpu_milli` on e2e-c's one Node: the
    real scheduler preempts batch pods for it, and their ReplicaSet's new pods pend."""
    scheduling = client.SchedulingV1Api(dro.clients["e2e-c"])
    scheduling.create_priority_class({"metadata": {"name": HOG}, "value": 1_000_000})
    requests = {"cpu": f"{cpu_milli}m"}
    container = {"name": "hog", "image": "hog:1", "resources": {"requests": requests}}
    dro.core("e2e-c").create_namespaced_pod(
        "shop",
        {
            "metadata": {"name": HOG},
            "spec": {"priorityClassName": HOG, "containers": [container]},
        },
    )


HOG = "dro-e2e-hog"


def test_pods_pending_on_the_full_cluster_move_after_unschedulable_after(dro: DroFleet) -> None:
    dro.repo.write({"workloads/batch.yaml": DYNAMIC_BATCH, "workloads/web.yaml": CONFIG_ONLY})
    dro.repo.commit("batch: twelve half-CPU replicas divided by room over e2e-a and e2e-c")
    first = dro.reconcile()
    placed = {p.cluster: p.replicas or 0 for p in decision(first, "batch").clusters}
    assert set(placed) == {"e2e-a", "e2e-c"}, placed
    on_c = placed["e2e-c"]
    assert on_c >= 1, placed
    dro.wait_available("batch")
    try:
        # the hog needs 100m more than e2e-c's Node has free: one batch pod is preempted
        hog(dro, 2000 - 500 * on_c + 100)
        stuck = eventually("e2e-c's batch pods settled, some Unschedulable",
                           lambda: settled(dro, on_c))  # fmt: skip
        pending = len(stuck)
        pended_past_unschedulable_after(stuck)
        moved = dro.reconcile()
        batch = decision(moved, "batch")
        counts = {p.cluster: p.replicas or 0 for p in batch.clusters}
        assert counts.get("e2e-c", 0) == on_c - pending, (counts, batch.moves)
        assert sum(counts.values()) == 12
        assert batch.diagnosis.trigger.text == "pods pending over 3s"
        reasons = {(m.source, m.reason.text) for m in batch.moves}
        assert reasons == {("e2e-c", "pods pending over 3s")}
        # no make-before-break: the replicas taken away never ran, so none is kept retiring
        assert (batch.retiring, moved.passes) == ((), 1)
        assert dro.replicas("batch")["e2e-c"] in (on_c - pending, None)
        eventually(
            "no batch pod pending on e2e-c",
            lambda: True if not unschedulable(dro, "e2e-c", "batch") else None,
        )
        dro.wait_available("batch")
    finally:
        client.SchedulingV1Api(dro.clients["e2e-c"]).delete_priority_class(HOG)


def test_pending_pods_of_a_static_split_stay_and_are_reported(dro: DroFleet) -> None:
    dro.repo.write({"workloads/batch.yaml": STATIC_BATCH})
    dro.repo.commit("batch: nine 1-CPU replicas split evenly")
    first = dro.reconcile()
    even = dict.fromkeys(CLUSTERS, 3)
    assert {p.cluster: p.replicas for p in decision(first, "batch").clusters} == even
    # e2e-c's one Node has 2 CPUs (web, Duplicated, no longer fits there): two batch pods
    # run, the real scheduler leaves the third Pending
    stuck = eventually("e2e-c's batch pods settled, some Unschedulable", lambda: settled(dro, 3))
    pended_past_unschedulable_after(stuck)
    again = dro.reconcile()
    batch = decision(again, "batch")
    assert {p.cluster: p.replicas for p in batch.clusters} == even  # the weights fix the split
    assert batch.diagnosis.trigger.text != "pods pending over 3s"
    assert batch.moves == ()
    (seen,) = dro.status_of("e2e-c")["pending"]
    assert ("batch" in seen["workload"], seen["pods"]) == (True, len(stuck)), seen
