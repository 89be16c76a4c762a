"""Cross-cluster Services: which Services a workload calls, and where the call is written."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.domain import ResourceKey
from reconciler.render import services
from tests.servicerepo import BACKEND, CONTAINER, FRONTEND, REPO, deployment, env, key, service


@pytest.mark.parametrize(
    ("container", "volumes", "expected"),
    [
        pytest.param(
            env("http://backend.shop.svc.cluster.local:8080"),
            None,
            [
                (
                    BACKEND,
                    "env API_URL=http://backend.shop.svc.cluster.local:8080",
                    f"{CONTAINER}/env/0/value",
                )
            ],
            id="fqdn-in-env-value",
        ),
        pytest.param(
            env("backend.shop.svc:8080"),
            None,
            [(BACKEND, "env API_URL=backend.shop.svc:8080", f"{CONTAINER}/env/0/value")],
            id="svc",
        ),
        pytest.param(
            env("backend.shop"),
            None,
            [(BACKEND, "env API_URL=backend.shop", f"{CONTAINER}/env/0/value")],
            id="name-dot-namespace",
        ),
        pytest.param(
            env("backend:8080"),
            None,
            [(BACKEND, "env API_URL=backend:8080", f"{CONTAINER}/env/0/value")],
            id="name-port",
        ),
        pytest.param(
            env("http://backend:8080/path"),
            None,
            [(BACKEND, "env API_URL=http://backend:8080/path", f"{CONTAINER}/env/0/value")],
            id="url-with-port-and-path",
        ),
        pytest.param(
            env("amqp://user:secret@backend/vhost"),
            None,
            [(BACKEND, "env API_URL=amqp://user:secret@backend/vhost", f"{CONTAINER}/env/0/value")],
            id="url-host-after-userinfo",
        ),
        pytest.param(
            env("http://$(FRONT_END_SERVICE_HOST):$(FRONT_END_SERVICE_PORT)"),
            None,
            [
                (
                    key("front-end"),
                    "env API_URL=http://$(FRONT_END_SERVICE_HOST):$(FRONT_END_SERVICE_PORT)",
                    f"{CONTAINER}/env/0/value",
                )
            ],
            id="service-env-var-in-value",
        ),
        pytest.param(
            env("10.0.0.1", name="FRONT_END_SERVICE_HOST"),
            None,
            [(key("front-end"), "env FRONT_END_SERVICE_HOST", f"{CONTAINER}/env/0/name")],
            id="service-env-var-name",
        ),
        pytest.param(
            {"args": ["--verbose", "--backend=backend:8080"]},
            None,
            [(BACKEND, "args --backend=backend:8080", f"{CONTAINER}/args/1")],
            id="args",
        ),
        pytest.param(
            {"command": ["sh", "-c", "curl -f http://backend:8080/health"]},
            None,
            [(BACKEND, "command curl -f http://backend:8080/health", f"{CONTAINER}/command/2")],
            id="command",
        ),
        pytest.param(
            {"envFrom": [{"configMapRef": {"name": "frontend-config"}}]},
            None,
            [
                (
                    key("db", ns="data"),
                    "ConfigMap shop/frontend-config key UNUSED=db.data.svc:5432",
                    "/data/UNUSED",
                ),
                (
                    BACKEND,
                    "ConfigMap shop/frontend-config key BACKEND=http://backend:8080",
                    "/data/BACKEND",
                ),
            ],
            id="configmap-envfrom",
        ),
        pytest.param(
            {
                "env": [
                    {
                        "name": "B",
                        "valueFrom": {
                            "configMapKeyRef": {"name": "frontend-config", "key": "BACKEND"}
                        },
                    }
                ]
            },
            None,
            [
                (
                    BACKEND,
                    "ConfigMap shop/frontend-config key BACKEND=http://backend:8080",
                    "/data/BACKEND",
                )
            ],
            id="configmap-keyref-reads-only-its-key",
        ),
        pytest.param(
            {},
            [
                {
                    "name": "conf",
                    "configMap": {
                        "name": "frontend-config",
                        "items": [{"key": "BACKEND", "path": "b"}],
                    },
                }
            ],
            [
                (
                    BACKEND,
                    "ConfigMap shop/frontend-config key BACKEND=http://backend:8080",
                    "/data/BACKEND",
                )
            ],
            id="configmap-volume",
        ),
        pytest.param(
            env("postgres://db-0.db.data.svc.cluster.local:5432/app"),
            None,
            [
                (
                    key("db", ns="data"),
                    "env API_URL=postgres://db-0.db.data.svc.cluster.local:5432/app",
                    f"{CONTAINER}/env/0/value",
                )
            ],
            id="pod-dns-name-of-other-namespace",
        ),
        # Negative cases: nothing is a call.
        pytest.param(env("the backend is slow"), None, [], id="word-without-host-context"),
        pytest.param(env("backend"), None, [], id="bare-name"),
        pytest.param(env("http://db:5432"), None, [], id="other-namespace-without-namespace"),
        pytest.param(env("http://frontend:80"), None, [], id="own-service"),
        pytest.param(env("x", name="FRONTEND_SERVICE_HOST"), None, [], id="own-service-env-var"),
        pytest.param(env("https://backend.shop.example.com"), None, [], id="external-domain"),
        pytest.param(env("registry.local/backend:8080"), None, [], id="image-reference"),
        pytest.param(env("$(BACKEND_SERVICE_HOSTNAME)"), None, [], id="not-a-service-env-var"),
        pytest.param(env("MY_backend:8080"), None, [], id="name-inside-a-word"),
        pytest.param(
            {"envFrom": [{"configMapRef": {"name": "missing"}}]}, None, [], id="missing-configmap"
        ),
    ],
)
def test_detection(
    container: dict[str, Any],
    volumes: list[dict[str, Any]] | None,
    expected: list[tuple[ResourceKey, str, str]],
) -> None:
    consumer = deployment("frontend", container=container, volumes=volumes)
    found = [
        (c.service, c.evidence, c.pointer)
        for c in services.calls([*REPO, consumer])
        if c.consumer == FRONTEND
    ]
    assert found == expected


@pytest.mark.parametrize(
    ("kind", "pointer"),
    [
        ("CronJob", "/spec/jobTemplate/spec/template/spec/containers/0/env/0/value"),
        ("StatefulSet", "/spec/template/spec/containers/0/env/0/value"),
    ],
)
def test_pointer_follows_the_pod_template_of_each_kind(kind: str, pointer: str) -> None:
    consumer = deployment("job", kind=kind, container=env("backend:8080"))
    (call,) = services.calls([*REPO, consumer])
    assert (call.consumer.kind, call.service, call.pointer) == (kind, BACKEND, pointer)


def test_only_workloads_other_than_the_backends_call_and_calls_are_sorted() -> None:
    """The backend naming its own Service is not a call; two consumers come out sorted."""
    repo = [
        service("backend"),
        deployment("backend", container=env("http://backend:8080")),
        deployment("zeta", container=env("backend:1")),
        deployment("alpha", container={"args": ["backend:2"], **env("backend.shop")}),
    ]
    found = [(c.consumer.name, c.pointer) for c in services.calls(repo)]
    assert found == [
        ("alpha", f"{CONTAINER}/args/0"),
        ("alpha", f"{CONTAINER}/env/0/value"),
        ("zeta", f"{CONTAINER}/env/0/value"),
    ]


def test_long_evidence_is_an_excerpt_around_the_match() -> None:
    script = "echo start; " + "x" * 300 + " curl http://backend:8080/ready; " + "y" * 300
    (call,) = services.calls([*REPO, deployment("frontend", container={"command": [script]})])
    assert call.evidence.startswith("command …")
    assert "http://backend:8080/ready" in call.evidence
    assert call.evidence.endswith("…")
    assert len(call.evidence) < 140
