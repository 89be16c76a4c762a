"""Observe: capacity, usage, the largest free node and pending pods from listed Nodes and Pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler import schedule
from reconciler.domain import Placement, ReplicaScheduling, ResourceKey
from reconciler.kube import client as kube
from reconciler.live import observe
from tests.builders.schedule import cluster, deployment, spec_of
from tests.kubeapi import KubeAPI

AT = "2026-01-01T00:00:00Z"


def node(
    name: str,
    cpu: str = "8",
    memory: str = "32Gi",
    *,
    ready: str = "True",
    unschedulable: bool = False,
    taints: tuple[dict[str, str], ...] = (),
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": unschedulable, "taints": list(taints)},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


def pod(
    name: str,
    node_name: str | None,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    phase: str = "Running",
    annotations: dict[str, str] | None = None,
    conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions or []},
    }


def test_capacity_used_and_the_largest_free_node() -> None:
    seen = observe.measure(
        "c1",
        [node("n1"), node("n2", cpu="4", memory="16Gi")],
        [pod("a", "n1", cpu="3"), pod("b", "n1", cpu="500m"), pod("c", None, cpu="2")],
        observed_at=AT,
    )
    assert seen.capacity == {"cpu": 12.0, "memory": 48 * 2**30, "pods": 220.0}
    assert seen.used == {"cpu": 5.5, "memory": 3 * 2**30, "pods": 3.0}
    assert seen.largest_node_free == {"cpu": 4.5, "memory": 30 * 2**30, "pods": 110.0}
    assert seen.observed_at == AT
    assert not seen.stale


@pytest.mark.parametrize(
    "excluded",
    [
        node("n2", ready="False"),
        node("n2", unschedulable=True),
        node("n2", taints=({"key": "k", "effect": "NoSchedule"},)),
        node("n2", taints=({"key": "k", "effect": "NoExecute"},)),
    ],
)
def test_nodes_that_take_no_pods_count_neither_room_nor_load(excluded: dict[str, Any]) -> None:
    seen = observe.measure("c1", [node("n1"), excluded], [pod("a", "n2", cpu="6")], observed_at=AT)
    assert seen.capacity["cpu"] == 8.0
    assert seen.used == {}


def test_a_soft_taint_still_counts() -> None:
    soft = node("n1", taints=({"key": "spot", "effect": "PreferNoSchedule"},))
    assert observe.measure("c1", [soft], [], observed_at=AT).capacity["cpu"] == 8.0


def test_finished_pods_hold_no_room_and_init_containers_follow_kubernetes_rules() -> None:
    done = [pod("a", "n1", cpu="4", phase="Succeeded"), pod("b", "n1", cpu="4", phase="Failed")]
    init = pod("c", "n1", cpu="1")
    init["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
    seen = observe.measure("c1", [node("n1")], [*done, init], observed_at=AT)
    assert seen.used["cpu"] == 3.0, "max(init 3, containers 1)"
    assert seen.used["pods"] == 1.0


def test_pending_pods_are_traced_to_their_workload() -> None:
    placed = {"multicluster.io/placement": "apps/Deployment/shop/web"}
    stuck = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    pods = [
        pod(
            "w-1",
            None,
            phase="Pending",
            annotations=placed,
            conditions=[{**stuck, "lastTransitionTime": "2026-01-01T00:05:00Z"}],
        ),
        pod(
            "w-2",
            None,
            phase="Pending",
            annotations=placed,
            conditions=[{**stuck, "lastTransitionTime": "2026-01-01T00:01:00Z"}],
        ),
        pod("w-3", None, phase="Pending", annotations=placed),  # not yet tried: not stuck
        pod("x-1", None, phase="Pending", conditions=[{**stuck, "lastTransitionTime": "x"}]),
    ]
    seen = observe.measure("c1", [node("n1")], pods, observed_at=AT)
    key = ResourceKey("apps", "Deployment", "shop", "web")
    assert seen.pending == {key: (2, "2026-01-01T00:01:00Z")}


def test_a_live_cluster_is_observed_over_http_and_moves_the_next_placement(tmp_path: Path) -> None:
    """Two declared-equal clusters; the live one turns out busy, so the next pass leans away."""
    server = KubeAPI(nodes=2, node_cpu="16", node_memory="64Gi").start()
    try:
        for i in range(12):
            server.add_pod(
                "default", f"busy-{i}", f"node-{i % 2}", requests={"cpu": "2", "memory": "1Gi"}
            )
        server.add_pod("default", "done", "node-0", requests={"cpu": "8"}, phase="Succeeded")
        config = server.kubeconfig(tmp_path / "kubeconfig", context="busy")
        connection = kube.connect("busy", context="busy", kubeconfig=config, timeout=2.0)
        seen = observe.live(connection, observed_at=AT)
        connection.close()
    finally:
        server.stop()
    assert seen.capacity["cpu"] == 32.0
    assert seen.used["cpu"] == 24.0, "the Succeeded pod holds no room"
    assert seen.largest_node_free["cpu"] == 4.0
    clusters = [cluster("busy", cpu=32, used=0), cluster("idle", cpu=32, used=0)]
    placement = Placement(replicas=ReplicaScheduling(type="Divided", division="DynamicWeight"))
    spec = spec_of(clusters, [deployment("w", 8)], placement)
    (declared,) = schedule.place(spec)
    (observed,) = schedule.place(spec, observations={"busy": seen})
    assert {p.cluster: p.replicas for p in declared.clusters} == {"busy": 4, "idle": 4}
    assert {p.cluster: p.replicas for p in observed.clusters} == {"busy": 1, "idle": 7}
