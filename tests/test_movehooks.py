"""Data-sync hooks: found from their annotation, each mistake an error at its line, and the move
handed to the Job in its env."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.domain import ResourceKey
from reconciler.kube import movehooks
from tests.builders.dependencies import obj

ANNOTATION = "/metadata/annotations/multicluster.io~1data-sync-for"


def statefulset(name: str = "db", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"replicas": 1, **spec},
    }


def job(target: object, kind: str = "Job", api: str = "batch/v1") -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {
            "name": "db-sync",
            "namespace": "shop",
            "annotations": {movehooks.SYNC_FOR: target},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "sync", "image": "s:1"}]}}},
    }


def test_a_job_annotated_for_a_stateful_workload_is_its_hook() -> None:
    found = movehooks.find([obj(statefulset()), obj(job("StatefulSet/db"))])
    assert found.problems == ()
    assert found.by_workload == {
        ResourceKey("apps", "StatefulSet", "shop", "db"): ResourceKey(
            "batch", "Job", "shop", "db-sync"
        )
    }


@pytest.mark.parametrize(
    ("hook", "others", "message"),
    [
        (job("StatefulSet/db", "CronJob"), [statefulset()], "belongs on a Job"),
        (job("db"), [statefulset()], "must name a workload as <Kind>/<name>"),
        (job("StatefulSet/cache"), [statefulset()], "StatefulSet shop/cache, which is not in"),
        (
            job("Deployment/web"),
            [{**statefulset("web"), "apiVersion": "apps/v1", "kind": "Deployment"}],
            "is not stateful",
        ),
    ],
)
def test_a_wrong_hook_is_an_error_at_its_annotation(
    hook: dict[str, Any], others: list[dict[str, Any]], message: str
) -> None:
    annotated = obj(hook, lines={ANNOTATION: 7})
    found = movehooks.find([*map(obj, others), annotated])
    (problem,) = found.problems
    assert message in problem.message
    assert (problem.path, problem.line, problem.pointer) == (annotated.origin.path, 7, ANNOTATION)
    assert found.by_workload == {}


def test_a_second_hook_for_one_workload_is_an_error() -> None:
    second = job("StatefulSet/db")
    second["metadata"]["name"] = "db-sync-2"
    found = movehooks.find([obj(statefulset()), obj(job("StatefulSet/db")), obj(second)])
    (problem,) = found.problems
    assert "already has a data-sync hook: shop/Job.batch/db-sync" in problem.message


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, False),
        ({"volumeClaimTemplates": [{"metadata": {"name": "data"}}]}, True),
        ({"template": {"spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {}}]}}}, True),
        ({"template": {"spec": {"volumes": [{"name": "d", "emptyDir": {}}]}}}, False),
    ],
)
def test_only_volumes_make_a_move_sync_data(spec: dict[str, Any], expected: bool) -> None:
    assert movehooks.has_volumes(obj(statefulset(**spec))) is expected


def test_the_move_is_in_every_container_env_and_the_source_is_untouched() -> None:
    manifest = job("StatefulSet/db")
    containers = manifest["spec"]["template"]["spec"]["containers"]
    containers[0]["env"] = [{"name": "DRO_MOVE_TO", "value": "stale"}, {"name": "X", "value": "1"}]
    manifest["spec"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "i:1"}]
    db = ResourceKey("apps", "StatefulSet", "shop", "db")
    rendered = movehooks.with_move_env(manifest, "a", "b", db)
    pod = rendered["spec"]["template"]["spec"]
    move = [
        {"name": "DRO_MOVE_FROM", "value": "a"},
        {"name": "DRO_MOVE_TO", "value": "b"},
        {"name": "DRO_MOVE_WORKLOAD", "value": "shop/StatefulSet.apps/db"},
    ]
    assert pod["containers"][0]["env"] == [{"name": "X", "value": "1"}, *move]
    assert pod["initContainers"][0]["env"] == move
    assert containers[0]["env"][0]["value"] == "stale"
