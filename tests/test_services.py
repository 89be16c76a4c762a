"""Cross-cluster Services: call detection, cross-cluster calls and the MCS objects."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from reconciler import services
from reconciler.domain import Decision, Origin, Placed, ResourceKey, Workload

ORIGIN = Origin(path="workloads/shop.yaml", line=1)
CONTAINER = "/spec/template/spec/containers/0"
MANAGED = {"app.kubernetes.io/managed-by": "dro"}


def workload(manifest: dict[str, Any]) -> Workload:
    api_version = manifest["apiVersion"]
    meta = manifest["metadata"]
    return Workload(
        key=ResourceKey(
            api_version.rpartition("/")[0],
            manifest["kind"],
            meta.get("namespace", ""),
            meta["name"],
        ),
        api_version=api_version,
        manifest=manifest,
        origin=ORIGIN,
    )


def deployment(
    name: str,
    *,
    ns: str = "shop",
    app: str | None = None,
    container: dict[str, Any] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    kind: str = "Deployment",
) -> Workload:
    pod: dict[str, Any] = {"containers": [{"name": "c", "image": "i", **(container or {})}]}
    if volumes:
        pod["volumes"] = volumes
    template = {"metadata": {"labels": {"app": app or name}}, "spec": pod}
    spec: dict[str, Any] = {"template": template}
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}
    api = "batch/v1" if kind == "CronJob" else "apps/v1"
    return workload(
        {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}
    )


def service(name: str, *, ns: str = "shop", app: str | None = None, **spec: Any) -> Workload:
    body: dict[str, Any] = {
        "selector": {"app": app or name},
        "ports": [{"name": "http", "port": 8080, "targetPort": 8080}],
        **spec,
    }
    return workload(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": body,
        }
    )


def config_map(name: str, data: dict[str, str], *, ns: str = "shop") -> Workload:
    return workload(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns},
            "data": data,
        }
    )


def key(name: str, *, ns: str = "shop", kind: str = "Service") -> ResourceKey:
    return ResourceKey("" if kind == "Service" else "apps", kind, ns, name)


FRONTEND = key("frontend", kind="Deployment")
BACKEND = key("backend")
REPO = [
    service("backend"),
    deployment("backend"),
    service("front-end", app="web"),
    deployment("web"),
    service("frontend"),
    service("db", ns="data"),
    deployment("db", ns="data"),
    config_map(
        "frontend-config",
        {"BACKEND": "http://backend:8080", "LOG": "debug", "UNUSED": "db.data.svc:5432"},
    ),
]


def env(value: str, name: str = "API_URL") -> dict[str, Any]:
    return {"env": [{"name": name, "value": value}]}


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


def decision(name: str, *clusters: str, kind: str = "Deployment", **extra: Any) -> Decision:
    return Decision(
        key=key(name, kind=kind),
        api_version="v1" if kind == "Service" else "apps/v1",
        policy=None,
        clusters=tuple(Placed(c, None if kind == "Service" else 2) for c in clusters),
        **extra,
    )


SHOP = [
    service("backend"),
    deployment("backend"),
    deployment("frontend", container=env("http://backend:8080")),
]


def test_call_across_clusters_exports_and_imports() -> None:
    crossing = services.cross_cluster(SHOP, [decision("frontend", "a"), decision("backend", "b")])
    assert crossing == (
        services.CrossCluster(
            service=BACKEND,
            exported_from=("b",),
            imported_into=("a",),
            consumers=(FRONTEND,),
            clusterset_name="backend.shop.svc.clusterset.local",
        ),
    )
    objects = services.mcs_objects(crossing, {BACKEND: SHOP[0].manifest})
    meta = {"name": "backend", "namespace": "shop", "labels": MANAGED}
    assert objects == {
        "a": [
            {
                "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                "kind": "ServiceImport",
                "metadata": meta,
                "spec": {
                    "type": "ClusterSetIP",
                    "ports": [{"name": "http", "protocol": "TCP", "port": 8080}],
                },
            }
        ],
        "b": [
            {
                "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                "kind": "ServiceExport",
                "metadata": meta,
            }
        ],
    }


@pytest.mark.parametrize(
    ("decisions", "exported", "imported"),
    [
        pytest.param(
            [decision("frontend", "a"), decision("backend", "a")], None, None, id="same-cluster"
        ),
        pytest.param(
            [decision("frontend", "a", "c"), decision("backend", "a", "b")],
            ("a", "b"),
            ("c",),
            id="import-only-where-no-local-backend",
        ),
        pytest.param(
            [
                decision("frontend", "a"),
                decision("backend", "b", "c"),
                decision("backend", "b", kind="Service"),
            ],
            ("b",),
            ("a",),
            id="export-only-where-the-service-is-rendered",
        ),
        pytest.param(
            [
                decision("frontend", "a"),
                Decision(
                    key=key("backend", kind="Deployment"),
                    api_version="apps/v1",
                    policy=None,
                    clusters=(Placed("a", 0), Placed("b", 2)),
                ),
            ],
            ("b",),
            ("a",),
            id="zero-replicas-do-not-serve",
        ),
        pytest.param(
            [
                decision("frontend", "b"),
                decision("backend", "b", retiring=(Placed("a", 1),)),
            ],
            None,
            None,
            id="retiring-backend-still-serves-its-cluster",
        ),
        pytest.param(
            [decision("frontend", "a"), decision("backend", "b", retiring=(Placed("a", 1),))],
            None,
            None,
            id="retiring-copy-counts-until-it-is-gone",
        ),
        pytest.param([decision("frontend", "a")], (), ("a",), id="backend-not-placed"),
        pytest.param([decision("backend", "b")], None, None, id="consumer-not-placed"),
    ],
)
def test_cross_cluster(
    decisions: list[Decision], exported: tuple[str, ...] | None, imported: tuple[str, ...] | None
) -> None:
    crossing = services.cross_cluster(SHOP, decisions)
    if exported is None:
        assert crossing == ()
    else:
        assert [(c.service, c.exported_from, c.imported_into) for c in crossing] == [
            (BACKEND, exported, imported)
        ]


def test_every_backend_must_be_local() -> None:
    """Two Deployments behind one Service: a cluster with only one of them imports."""
    repo = [
        service("backend", app="backend"),
        deployment("backend-v1", app="backend"),
        deployment("backend-v2", app="backend"),
        deployment("frontend", container=env("backend:8080")),
    ]
    crossing = services.cross_cluster(
        repo,
        [
            decision("frontend", "a", "b"),
            decision("backend-v1", "a", "b"),
            decision("backend-v2", "b"),
        ],
    )
    assert [(c.exported_from, c.imported_into) for c in crossing] == [(("a", "b"), ("a",))]


def test_service_without_selector_is_never_cross_cluster() -> None:
    repo = [
        workload(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "ext", "namespace": "shop"},
                "spec": {"type": "ExternalName", "externalName": "example.com"},
            }
        ),
        deployment("frontend", container=env("http://ext:80")),
    ]
    assert [c.service.name for c in services.calls(repo)] == ["ext"]
    assert services.cross_cluster(repo, [decision("frontend", "a")]) == ()


def test_headless_service_imports_as_headless_and_ports_default_to_tcp() -> None:
    headless = service(
        "backend",
        clusterIP="None",
        ports=[{"port": 5432}, {"name": "m", "port": 9, "protocol": "UDP"}],
    )
    crossing = services.cross_cluster(
        [headless, *SHOP[1:]], [decision("frontend", "a"), decision("backend", "b")]
    )
    (imported,) = services.mcs_objects(crossing, {BACKEND: headless.manifest})["a"]
    assert imported["spec"] == {
        "type": "Headless",
        "ports": [{"protocol": "TCP", "port": 5432}, {"name": "m", "protocol": "UDP", "port": 9}],
    }


def test_mcs_objects_are_sorted_and_fresh() -> None:
    crossing = (
        services.CrossCluster(
            service=key("zeta"),
            exported_from=("b",),
            imported_into=("a",),
            consumers=(),
            clusterset_name="zeta.shop.svc.clusterset.local",
        ),
        services.CrossCluster(
            service=key("alpha", ns="z"),
            exported_from=("a",),
            imported_into=("b",),
            consumers=(),
            clusterset_name="alpha.z.svc.clusterset.local",
        ),
        services.CrossCluster(
            service=BACKEND,
            exported_from=("a", "c"),
            imported_into=("b",),
            consumers=(),
            clusterset_name="backend.shop.svc.clusterset.local",
        ),
    )
    objects = services.mcs_objects(crossing, {})
    listed = {
        c: [(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs]
        for c, objs in objects.items()
    }
    assert list(listed) == ["a", "b", "c"]
    assert listed == {
        "a": [
            ("ServiceExport", "shop", "backend"),
            ("ServiceExport", "z", "alpha"),
            ("ServiceImport", "shop", "zeta"),
        ],
        "b": [
            ("ServiceExport", "shop", "zeta"),
            ("ServiceImport", "shop", "backend"),
            ("ServiceImport", "z", "alpha"),
        ],
        "c": [("ServiceExport", "shop", "backend")],
    }
    objects["a"][0]["metadata"]["labels"]["x"] = "y"
    assert objects["c"][0]["metadata"]["labels"] == MANAGED


def test_output_does_not_depend_on_input_order() -> None:
    repo = [
        *REPO,
        deployment(
            "frontend",
            container={
                **env("backend:1"),
                "envFrom": [{"configMapRef": {"name": "frontend-config"}}],
            },
        ),
    ]
    decisions = [decision("frontend", "a", "c"), decision("backend", "b"), decision("web", "a")]
    expected_calls = services.calls(repo)
    expected = services.cross_cluster(repo, decisions)
    assert len(expected_calls) == 3
    shuffled = list(repo)
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert services.calls(shuffled) == expected_calls
        assert services.cross_cluster(shuffled, decisions[::-1]) == expected


def test_ten_thousand_objects() -> None:
    """2,500 namespaces of Service + backend + consumer + ConfigMap, each crossing clusters."""
    repo: list[Workload] = []
    decisions: list[Decision] = []
    for i in range(2500):
        ns = f"ns{i}"
        repo += [
            service("api", ns=ns),
            deployment("api", ns=ns),
            deployment("web", ns=ns, container={"envFrom": [{"configMapRef": {"name": "cfg"}}]}),
            config_map("cfg", {"URL": "http://api:8080", "OTHER": "x " * 50}, ns=ns),
        ]
        decisions += [
            Decision(
                key=key("api", ns=ns, kind="Deployment"),
                api_version="apps/v1",
                policy=None,
                clusters=(Placed(f"c{i % 7}", 1),),
            ),
            Decision(
                key=key("web", ns=ns, kind="Deployment"),
                api_version="apps/v1",
                policy=None,
                clusters=(Placed(f"c{(i + 1) % 7}", 1),),
            ),
        ]
    started = time.perf_counter()
    crossing = services.cross_cluster(repo, decisions)
    objects = services.mcs_objects(crossing, {})
    elapsed = time.perf_counter() - started
    assert len(crossing) == 2500
    assert sum(len(o) for o in objects.values()) == 5000
    assert elapsed < 20, elapsed
