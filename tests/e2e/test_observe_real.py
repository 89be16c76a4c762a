"""dro's observation of the real clusters equals the water levels a test computes itself from
the Nodes' allocatable and the scheduled pods' requests, read through the official client:
both `live.observe.live` and the status/clusters files a pass commits."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiClient

from reconciler.domain import durations
from reconciler.kube import client as kube
from reconciler.live import observe
from tests.e2e.controlplane import Fleet
from tests.e2e.reconcilefleet import DroFleet, dro_on_fleet
from tests.e2e.waiting import eventually

UNITS = {"": 1.0, "m": 1e-3, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "k": 1e3, "M": 1e6}
HOGS = {"e2e-a": "1500m", "e2e-b": "5", "e2e-c": "700m"}
"""A pod outside dro's on each cluster, placed by the real scheduler: load dro did not apply."""


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def amount(text: str) -> float:
    """A quantity of the simple forms these clusters use (`250m`, `4`, `64Mi`, `16Gi`)."""
    found = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(text))
    assert found, text
    return float(found[1]) * UNITS[found[2]]


def expected(api: ApiClient) -> tuple[dict[str, float], dict[str, float]]:
    """(capacity, used) per resource: the Nodes' allocatable; the requests of the pods bound
    to them (containers only: these pods have no init containers nor overhead) plus one pod
    slot each."""
    core = client.CoreV1Api(api)
    capacity: dict[str, float] = {}
    for node in core.list_node().items:
        for name, value in node.status.allocatable.items():
            capacity[name] = capacity.get(name, 0.0) + amount(value)
    used: dict[str, float] = {"pods": 0.0}
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.status.phase in ("Succeeded", "Failed"):
            continue
        assert pod.spec.node_name, f"{pod.metadata.name} is not scheduled"
        assert not pod.spec.init_containers
        assert not pod.spec.overhead
        used["pods"] += 1
        for container in pod.spec.containers:
            for name, value in (container.resources.requests or {}).items():
                used[name] = used.get(name, 0.0) + amount(value)
    return capacity, used


def levels(capacity: dict[str, float], used: dict[str, float]) -> dict[str, float]:
    return {r: round(used.get(r, 0.0) / total, 4) for r, total in capacity.items() if total}


def hog(api: ApiClient, cpu: str) -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "hog"},
        "spec": {
            "containers": [
                {"name": "hog", "image": "hog:1", "resources": {"requests": {"cpu": cpu}}}
            ]
        },
    }
    client.CoreV1Api(api).create_namespaced_pod("shop", pod)


def all_running(dro: DroFleet) -> bool | None:
    for api in dro.clients.values():
        pods = client.CoreV1Api(api).list_pod_for_all_namespaces().items
        if not pods or any(pod.status.phase != "Running" for pod in pods):
            return None
    return True


def test_dro_observes_the_water_levels_the_nodes_and_pods_give(dro: DroFleet) -> None:
    dro.reconcile()  # web's two replicas on each cluster, and the shop namespace
    for name, cpu in HOGS.items():
        hog(dro.clients[name], cpu)
    eventually("every pod scheduled and Running", lambda: all_running(dro))
    computed = {name: expected(api) for name, api in dro.clients.items()}
    assert computed["e2e-b"][1]["cpu"] == pytest.approx(5.5)  # the hog and web's 2 × 250m
    observed_at = durations.rfc3339(0)
    for name in dro.clients:
        capacity, used = computed[name]
        connection = kube.connect(name, context=name, kubeconfig=dro.fleet.kubeconfig)
        try:
            seen = observe.live(connection, observed_at=observed_at)
        finally:
            connection.close()
        assert seen.capacity == pytest.approx(capacity), name
        assert seen.used == pytest.approx(used), name
        assert seen.pending == {}
    result = dro.reconcile(status_interval=0.0)
    assert result.applied is not None
    assert result.applied.ok
    for name in dro.clients:
        capacity, used = computed[name]
        status = dro.status_of(name)
        assert status["source"] == "observed"
        assert status["reachable"] is True
        assert {r: amount(v) for r, v in status["capacity"].items()} == pytest.approx(capacity)
        assert {r: amount(v) for r, v in status["used"].items()} == pytest.approx(used)
        assert status["waterLevel"] == pytest.approx(levels(capacity, used), abs=1e-4), name
    assert computed == {name: expected(api) for name, api in dro.clients.items()}  # unchanged
