"""The three real clusters answer, their kwok Nodes are Ready with the capacity asked for, and
a real scheduler places a Deployment's pods, which kwok runs; a pod larger than any Node stays
Pending as Unschedulable."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client import ApiClient

from tests.e2e.conftest import FLEET
from tests.e2e.controlplane import Fleet
from tests.e2e.waiting import eventually

KUBERNETES = "v1.34.4"


@pytest.fixture
def namespace(clients: dict[str, ApiClient]) -> Iterator[str]:
    """A namespace on e2e-a, deleted afterwards."""
    core = client.CoreV1Api(clients["e2e-a"])
    name = f"e2e-{time.monotonic_ns()}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def test_every_context_answers_with_its_own_cluster(
    fleet: Fleet, clients: dict[str, ApiClient]
) -> None:
    assert sorted(clients) == sorted(spec.name for spec in FLEET)
    servers = set()
    for name, api_client in clients.items():
        assert client.VersionApi(api_client).get_code().git_version == KUBERNETES
        assert api_client.configuration.host == fleet[name].server
        servers.add(api_client.configuration.host)
        namespaces = client.CoreV1Api(api_client).list_namespace().items
        assert {"default", "kube-system"} <= {ns.metadata.name for ns in namespaces}
    assert len(servers) == len(FLEET)


def test_nodes_are_ready_with_the_capacity_asked_for(clients: dict[str, ApiClient]) -> None:
    for spec in FLEET:
        nodes = client.CoreV1Api(clients[spec.name]).list_node().items
        assert sorted(node.metadata.name for node in nodes) == spec.node_names()
        for node in nodes:
            ready = {c.type: c.status for c in node.status.conditions}["Ready"]
            assert ready == "True", node.metadata.name
            want = {"cpu": spec.cpu, "memory": spec.memory, "pods": str(spec.pods)}
            assert node.status.allocatable == want
            assert node.status.capacity == want


def _deployment(name: str, replicas: int, cpu: str) -> dict[str, object]:
    labels = {"app": name}
    container = {
        "name": "app",
        "image": "registry.example/app:1",
        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def test_a_deployment_is_scheduled_and_its_pods_run(
    clients: dict[str, ApiClient], namespace: str
) -> None:
    apps = client.AppsV1Api(clients["e2e-a"])
    core = client.CoreV1Api(clients["e2e-a"])
    apps.create_namespaced_deployment(namespace, _deployment("web", 3, "500m"))

    def available() -> int | None:
        status = apps.read_namespaced_deployment_status("web", namespace).status
        return status.available_replicas if status.available_replicas == 3 else None

    eventually("3 available replicas", available)
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert len(pods) == 3
    assert all(pod.status.phase == "Running" for pod in pods)
    assert {pod.spec.node_name for pod in pods} <= set(FLEET[0].node_names())
    assert all(pod.status.pod_ip for pod in pods)


def test_a_pod_larger_than_every_node_stays_pending_as_unschedulable(
    clients: dict[str, ApiClient], namespace: str
) -> None:
    core = client.CoreV1Api(clients["e2e-a"])
    apps = client.AppsV1Api(clients["e2e-a"])
    apps.create_namespaced_deployment(namespace, _deployment("huge", 1, "5"))

    def unschedulable() -> str | None:
        for pod in core.list_namespaced_pod(namespace, label_selector="app=huge").items:
            for condition in pod.status.conditions or []:
                if condition.type == "PodScheduled" and condition.reason == "Unschedulable":
                    return str(condition.message)
        return None

    message = eventually("the scheduler to find no Node", unschedulable)
    assert "Insufficient cpu" in message
