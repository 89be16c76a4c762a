"""Cross-cluster services: which calls cross clusters, and the MCS objects rendered for them."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from reconciler.domain import Decision, Placed, Workload
from reconciler.render import services
from tests.servicerepo import (
    BACKEND,
    FRONTEND,
    MANAGED,
    REPO,
    config_map,
    deployment,
    env,
    key,
    service,
    workload,
)


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
