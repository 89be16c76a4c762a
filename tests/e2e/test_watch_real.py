"""The watch cache (`dro run --watch-clusters`, `kube.watchcache`) against a real API server:
a kept connection's observation comes from memory, follows a pod created behind dro's back
and a node cordoned, and equals what a fresh connection observes each time; a write through
the connection is read back at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiClient

from reconciler.domain import Observation
from reconciler.kube import client as kube
from reconciler.live import observe
from reconciler.live.pool import Pool
from tests.e2e.controlplane import Fleet
from tests.e2e.waiting import eventually
from tests.pooled import pooled, watching_pool

CLUSTER = "e2e-a"
AT = "2026-01-01T00:00:00Z"
NODES = ("list", "Node", "v1", None, None, None)


@pytest.fixture
def pool() -> Iterator[Pool]:
    with watching_pool() as kept:
        yield kept


def kept(pool: Pool, fleet: Fleet) -> kube.Connection:
    return pooled(pool, CLUSTER, fleet.kubeconfig, timeout=10.0)


def fresh(fleet: Fleet) -> Observation:
    connection = kube.connect(CLUSTER, context=CLUSTER, kubeconfig=fleet.kubeconfig)
    try:
        return observe.live(connection, observed_at=AT)
    finally:
        connection.close()


def settled(pool: Pool, fleet: Fleet, before: Observation) -> Observation | None:
    """The kept observation once it differs from `before` and equals a fresh one."""
    seen = observe.live(kept(pool, fleet), observed_at=AT)
    return seen if seen != before and seen == fresh(fleet) else None


def test_a_kept_observation_follows_the_real_cluster(
    fleet: Fleet, clients: dict[str, ApiClient], pool: Pool
) -> None:
    core = client.CoreV1Api(clients[CLUSTER])
    observe.live(kept(pool, fleet), observed_at=AT)  # a first pass: a new connection lists
    first = observe.live(kept(pool, fleet), observed_at=AT)  # the second seeds its watches
    assert first == fresh(fleet)
    connection = kept(pool, fleet)
    assert connection.watches is not None
    eventually("the nodes answered from memory", lambda: connection.watches.answer(NODES))
    pod: dict[str, Any] = {
        "metadata": {"name": "watched-hog"},
        "spec": {
            "containers": [
                {"name": "hog", "image": "hog:1", "resources": {"requests": {"cpu": "300m"}}}
            ]
        },
    }
    core.create_namespaced_pod("default", pod)
    node = core.list_node().items[0].metadata.name
    try:
        with_pod = eventually("the pod is observed", lambda: settled(pool, fleet, first))
        assert with_pod.used["cpu"] == pytest.approx(first.used.get("cpu", 0.0) + 0.3)
        core.patch_node(node, {"spec": {"unschedulable": True}})
        cordoned = eventually("the cordon is observed", lambda: settled(pool, fleet, with_pod))
        assert cordoned.capacity["cpu"] < with_pod.capacity["cpu"]
    finally:
        core.patch_node(node, {"spec": {"unschedulable": False}})
        core.delete_namespaced_pod("watched-hog", "default", grace_period_seconds=0)


def test_a_write_through_a_kept_connection_is_read_back(fleet: Fleet, pool: Pool) -> None:
    kept(pool, fleet)  # a first pass made it: from the second on, it watches
    connection = kept(pool, fleet)
    assert connection.watches is not None
    selector = "test=watch-real"
    assert connection.list("v1", "ConfigMap", namespace="default", label_selector=selector) == []
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "watched", "namespace": "default", "labels": {"test": "watch-real"}},
        "data": {"k": "v"},
    }
    try:
        connection.apply(body)
        found = connection.list("v1", "ConfigMap", namespace="default", label_selector=selector)
        assert [item["metadata"]["name"] for item in found] == ["watched"]
    finally:
        connection.delete("v1", "ConfigMap", "watched", "default")
