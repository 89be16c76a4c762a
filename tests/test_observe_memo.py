"""What a kept connection remembers of a steady cluster without parsing it again: a response's
digest (`kube.client.Body`), the observation under the digests of its lists (`observe.live`),
and the water-level gauge an idle pass leaves as it was (`Metrics.record_plan`). Each is
compared with the full computation."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.kube import client as kube
from reconciler.live import observe
from reconciler.live.pool import Pool
from reconciler.service import metrics
from tests.kubeapi import KubeAPI
from tests.pooled import pooled

AT = "2026-01-01T00:00:00Z"

names = st.text(alphabet="abcdefghij-", min_size=1, max_size=8)
items = st.lists(
    st.fixed_dictionaries(
        {
            "metadata": st.fixed_dictionaries(
                {"name": names, "resourceVersion": st.integers(1, 99).map(str)}
            ),
            "data": st.dictionaries(names, st.text(max_size=12), max_size=3),
        }
    ),
    max_size=4,
)


def listing(found: list[dict[str, Any]], revision: str, *, items_first: bool = False) -> bytes:
    """A LIST body as a server writes it: its metadata first, unless `items_first`."""
    head = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": revision}}
    document = {"items": found, **head} if items_first else {**head, "items": found}
    return json.dumps(document).encode()


@settings(max_examples=200, deadline=None)
@given(items, items, st.integers(1, 9), st.integers(1, 9))
def test_a_list_digest_is_that_of_its_items_whatever_the_list_revision(
    first: list[dict[str, Any]], second: list[dict[str, Any]], one: int, other: int
) -> None:
    a = kube.Body(listing(first, str(one)), listed=True)
    b = kube.Body(listing(second, str(other)), listed=True)
    assert a.items == first
    assert b.items == second
    assert (a.digest == b.digest) == (json.dumps(first) == json.dumps(second))


@settings(max_examples=100, deadline=None)
@given(items, st.integers(1, 9), st.integers(10, 19))
def test_a_body_in_another_shape_is_digested_whole(
    found: list[dict[str, Any]], one: int, other: int
) -> None:
    a = kube.Body(listing(found, str(one), items_first=True), listed=True)
    b = kube.Body(listing(found, str(other), items_first=True), listed=True)
    assert a.items == b.items == found
    assert a.digest != b.digest, "the list's own revision counts when it is not set apart"
    single = [kube.Body(json.dumps({"metadata": {"resourceVersion": v}}).encode()) for v in "12"]
    assert single[0].digest != single[1].digest


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[KubeAPI, Path]]:
    server = KubeAPI(nodes=2, node_cpu="16", node_memory="64Gi").start()
    try:
        yield server, server.kubeconfig(tmp_path / "kubeconfig", context="eu-1")
    finally:
        server.stop()


def deployment(name: str, ready: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app.kubernetes.io/managed-by": "dro"},
            "annotations": {"multicluster.io/placement": f"apps/Deployment/default/{name}"},
        },
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}}, "template": {}},
        "status": {
            "observedGeneration": 1,
            "replicas": 2,
            "readyReplicas": ready,
            "updatedReplicas": 2,
            "availableReplicas": ready,
        },
    }


CHANGES: dict[str, Callable[[KubeAPI], Any]] = {
    "a pod added": lambda a: a.add_pod("default", "p9", "node-1", requests={"cpu": "3"}),
    "a pod finished": lambda a: a.add_pod("default", "p0", "node-0", phase="Succeeded"),
    "a node added": lambda a: a.add_node("node-9", cpu="4"),
    "a node cordoned": lambda a: a.put(
        {**a.get("", "v1", "nodes", "", "node-1"), "spec": {"unschedulable": True}}
    ),
    "a node gone": lambda a: a.objects.delete("", "v1", "nodes", "", "node-0"),
    "a workload became ready": lambda a: a.put(deployment("web", 2)),
    "a workload annotated": lambda a: a.put(
        {
            **deployment("web", 1),
            "metadata": {
                **deployment("web", 1)["metadata"],
                "annotations": {
                    "multicluster.io/placement": "apps/Deployment/default/web",
                    "multicluster.io/data-synced": "yes",
                },
            },
        }
    ),
    "a workload gone": lambda a: a.objects.delete("apps", "v1", "deployments", "default", "web"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_remembered_observation_is_the_fresh_one_and_any_change_is_seen(
    api: tuple[KubeAPI, Path], change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, config = api
    server.add_pod("default", "p0", "node-0", requests={"cpu": "2", "memory": "1Gi"})
    server.put(deployment("web", 1))
    measured: list[str] = []
    made = observe.measured
    monkeypatch.setattr(observe, "measured", lambda *args: measured.append(args[0]) or made(*args))
    pool = Pool()

    def kept() -> kube.Connection:
        return pooled(pool, "eu-1", config)

    def fresh() -> Any:
        connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
        try:
            return observe.live(connection, observed_at=AT)
        finally:
            connection.close()

    try:
        first = observe.live(kept(), observed_at=AT)
        again = observe.live(kept(), observed_at="2026-01-01T00:01:00Z")
        assert len(measured) == 1, "the same lists are not parsed and measured again"
        assert again.observed_at == "2026-01-01T00:01:00Z"
        assert again == dataclasses.replace(first, observed_at="2026-01-01T00:01:00Z")
        CHANGES[change](server)
        after = observe.live(kept(), observed_at=AT)
        assert len(measured) == 2, "a changed list is measured again"
        assert after == fresh()
        assert after != first, f"{change} is seen"
    finally:
        pool.close()


def levels(meter: metrics.Metrics) -> list[tuple[dict[str, str], float]]:
    return [
        (sample.labels, sample.value)
        for family in meter.water_level.collect()
        for sample in family.samples
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["eu-1", "us-1", "ap-1"]),
            st.dictionaries(st.sampled_from(["cpu", "memory"]), st.sampled_from([0.1, 0.5])),
            max_size=3,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_the_water_level_gauge_is_what_the_last_plan_set(
    plans: list[dict[str, dict[str, float]]],
) -> None:
    meter = metrics.Metrics()
    for plan in plans:
        meter.record_plan(plan, 0)
        alone = metrics.Metrics()
        alone.record_plan(plan, 0)
        assert levels(meter) == levels(alone)
