"""Health per kind, from rollout status, and its aggregation across clusters."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.kube import health
from reconciler.kube.health import (
    DEGRADED,
    HEALTHY,
    MISSING,
    PROGRESSING,
    SUSPENDED,
    UNKNOWN,
    Health,
)


def obj(
    kind: str, spec: dict[str, Any], status: dict[str, Any], generation: int = 2
) -> dict[str, Any]:
    api = {"Job": "batch/v1"}.get(kind, "apps/v1")
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "x", "generation": generation},
        "spec": spec,
        "status": status,
    }


DONE = {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}
DEADLINE = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        ({"replicas": 3}, DONE, HEALTHY),
        ({"replicas": 3, "paused": True}, DONE, SUSPENDED),
        ({"replicas": 3}, {**DONE, "observedGeneration": 1}, PROGRESSING),
        ({"replicas": 3}, {**DONE, "updatedReplicas": 2}, PROGRESSING),
        ({"replicas": 3}, {**DONE, "replicas": 4}, PROGRESSING),
        ({"replicas": 3}, {**DONE, "availableReplicas": 1}, PROGRESSING),
        ({"replicas": 3}, {**DONE, "updatedReplicas": 1, "conditions": [DEADLINE]}, DEGRADED),
        ({}, {**DONE, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}, HEALTHY),
    ],
)
def test_deployment(spec: dict[str, Any], status: dict[str, Any], expected: str) -> None:
    assert health.of(obj("Deployment", spec, status)).status == expected


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        (
            {"replicas": 2},
            {
                "observedGeneration": 2,
                "readyReplicas": 2,
                "currentRevision": "a",
                "updateRevision": "a",
            },
            HEALTHY,
        ),
        ({"replicas": 2}, {"readyReplicas": 2}, PROGRESSING),
        ({"replicas": 2}, {"observedGeneration": 2, "readyReplicas": 1}, PROGRESSING),
        (
            {"replicas": 2},
            {
                "observedGeneration": 2,
                "readyReplicas": 2,
                "currentRevision": "a",
                "updateRevision": "b",
            },
            PROGRESSING,
        ),
        (
            {"replicas": 4, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
            {"observedGeneration": 2, "readyReplicas": 4, "updatedReplicas": 2},
            HEALTHY,
        ),
        (
            {"replicas": 4, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
            {"observedGeneration": 2, "readyReplicas": 4, "updatedReplicas": 1},
            PROGRESSING,
        ),
        (
            {"replicas": 2, "updateStrategy": {"type": "OnDelete"}},
            {"observedGeneration": 2, "readyReplicas": 2, "updateRevision": "b"},
            HEALTHY,
        ),
    ],
)
def test_statefulset(spec: dict[str, Any], status: dict[str, Any], expected: str) -> None:
    assert health.of(obj("StatefulSet", spec, status)).status == expected


def test_a_statefulset_scaled_to_zero_is_progressing_while_its_pods_terminate() -> None:
    # The real StatefulSet controller counts terminating pods in status.replicas, and they
    # may still be ready: a stateful move's CutOver must not end while the old copy runs.
    status = {"observedGeneration": 2, "replicas": 2, "readyReplicas": 2}
    status |= {"currentRevision": "a", "updateRevision": "a"}
    scaling = health.of(obj("StatefulSet", {"replicas": 0}, status))
    assert scaling == Health(PROGRESSING, "2 pods pending termination")
    down = status | {"replicas": 0, "readyReplicas": 0}
    assert health.of(obj("StatefulSet", {"replicas": 0}, down)).status == HEALTHY


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (
            {
                "observedGeneration": 2,
                "desiredNumberScheduled": 3,
                "updatedNumberScheduled": 3,
                "numberAvailable": 3,
            },
            HEALTHY,
        ),
        (
            {
                "observedGeneration": 2,
                "desiredNumberScheduled": 3,
                "updatedNumberScheduled": 2,
                "numberAvailable": 3,
            },
            PROGRESSING,
        ),
        (
            {
                "observedGeneration": 2,
                "desiredNumberScheduled": 3,
                "updatedNumberScheduled": 3,
                "numberAvailable": 2,
            },
            PROGRESSING,
        ),
        ({"observedGeneration": 1}, PROGRESSING),
    ],
)
def test_daemonset(status: dict[str, Any], expected: str) -> None:
    assert health.of(obj("DaemonSet", {}, status)).status == expected


@pytest.mark.parametrize(
    ("spec", "conditions", "expected"),
    [
        ({}, [{"type": "Complete", "status": "True"}], HEALTHY),
        ({}, [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}], DEGRADED),
        ({}, [{"type": "Failed", "status": "False"}], PROGRESSING),
        ({"suspend": True}, [], SUSPENDED),
        ({}, [], PROGRESSING),
    ],
)
def test_job(spec: dict[str, Any], conditions: list[dict[str, str]], expected: str) -> None:
    assert health.of(obj("Job", spec, {"conditions": conditions})).status == expected


def test_absent_deleting_plain_and_unreadable_objects() -> None:
    assert health.of(None).status == MISSING
    deleting = obj("Deployment", {}, DONE)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert health.of(deleting).status == PROGRESSING
    assert health.of({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}).status == HEALTHY
    broken = obj("Deployment", {"replicas": "many"}, DONE)
    assert health.of(broken).status == UNKNOWN


def test_the_worst_cluster_decides_and_is_named() -> None:
    per_cluster = {
        "eu-1": Health(HEALTHY),
        "us-1": Health(PROGRESSING, "1 of 3 replicas updated"),
        "us-2": Health(DEGRADED, "the rollout exceeded its progress deadline"),
    }
    assert health.workload(per_cluster) == Health(
        DEGRADED, "us-2: the rollout exceeded its progress deadline"
    )
    assert health.workload({**per_cluster, "ap-1": Health(DEGRADED)}).message == "ap-1, us-2"
    assert health.workload({"eu-1": Health(HEALTHY)}) == Health(HEALTHY)
    assert health.worst([Health(MISSING), Health(UNKNOWN), Health(SUSPENDED)]).status == UNKNOWN
    assert health.worst([]).status == HEALTHY
