"""dro's own apply (live/apply.py) against a real API server: a first pass creates a namespace,
a Deployment and a ConfigMap, whose pods the real scheduler places and kwok runs; a second pass
with the same objects writes nothing."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client import ApiClient

from reconciler.kube import client as kube
from reconciler.live import apply
from tests.e2e.controlplane import Fleet
from tests.e2e.waiting import eventually

NAMESPACE = "dro-e2e-apply"


def rendered() -> list[dict[str, Any]]:
    labels = {"app": "web"}
    container = {
        "name": "web",
        "image": "registry.example/web:1",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": NAMESPACE},
            "data": {"greeting": "hello"},
        },
    ]


def test_dro_applies_to_a_real_cluster_and_a_steady_pass_writes_nothing(
    fleet: Fleet, clients: dict[str, ApiClient]
) -> None:
    connection = kube.connect("e2e-b", context="e2e-b", kubeconfig=fleet.kubeconfig)
    try:
        first = apply.sync(connection, rendered(), prune=True)
        assert (first.failed, first.applied, first.unchanged) == ([], 3, 0), first.results
        apps = client.AppsV1Api(clients["e2e-b"])

        def available() -> int | None:
            status = apps.read_namespaced_deployment_status("web", NAMESPACE).status
            return status.available_replicas if status.available_replicas == 2 else None

        eventually("the applied Deployment's 2 replicas to be available", available)
        again = apply.sync(connection, rendered(), prune=True)
        assert (again.failed, again.applied, again.unchanged, again.writes) == ([], 0, 3, 0), (
            again.results
        )
    finally:
        connection.close()
        core = client.CoreV1Api(clients["e2e-b"])
        for name in (NAMESPACE, "dro-system"):  # dro-system holds dro's inventory
            core.delete_namespace(name)
