"""Dependency bundling: what a pod spec references, and the warnings for objects the repo lacks."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler import yamlio
from reconciler.errors import Severity
from reconciler.validate import dependencies, workloads
from reconciler.validate.dependencies import Reference
from tests.builders.dependencies import (
    CRON,
    NS,
    POD,
    containers,
    core,
    deployment,
    key,
    obj,
    service,
)


@pytest.mark.parametrize(
    ("dependent", "expected"),
    [
        (
            deployment(
                containers(
                    envFrom=[{"secretRef": {"name": "pw"}}, {"configMapRef": {"name": "cfg"}}]
                )
            ),
            [
                Reference(
                    kind="Secret",
                    namespace=NS,
                    name="pw",
                    pointer=f"{POD}/containers/0/envFrom/0/secretRef/name",
                ),
                Reference(
                    kind="ConfigMap",
                    namespace=NS,
                    name="cfg",
                    pointer=f"{POD}/containers/0/envFrom/1/configMapRef/name",
                ),
            ],
        ),
        (
            deployment(
                {
                    "serviceAccountName": "robot",
                    **containers(
                        env=[
                            {
                                "name": "X",
                                "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "x"}},
                            }
                        ]
                    ),
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                }
            ),
            [
                Reference(
                    kind="ServiceAccount",
                    namespace=NS,
                    name="robot",
                    pointer=f"{POD}/serviceAccountName",
                ),
                Reference(
                    kind="ConfigMap",
                    namespace=NS,
                    name="cfg",
                    pointer=f"{POD}/containers/0/env/0/valueFrom/configMapKeyRef/name",
                ),
                Reference(
                    kind="PersistentVolumeClaim",
                    namespace=NS,
                    name="data",
                    pointer=f"{POD}/volumes/0/persistentVolumeClaim/claimName",
                ),
            ],
        ),
        (
            CRON,
            [
                Reference(
                    kind="Secret",
                    namespace=NS,
                    name="db",
                    pointer="/spec/jobTemplate/spec/template/spec/containers/0/envFrom/0/secretRef/name",
                )
            ],
        ),
        (
            {
                **deployment(
                    {**containers(), "volumes": [{"name": "v", "secret": {"secretName": "tls"}}]}
                ),
                "metadata": {"name": "cart"},
            },
            [
                Reference(
                    kind="Secret",
                    namespace="default",
                    name="tls",
                    pointer=f"{POD}/volumes/0/secret/secretName",
                )
            ],
        ),
        (core("ConfigMap", "cfg", data={"a": "b"}), []),
    ],
    ids=["envFrom-order", "document-order", "cronjob", "default-namespace", "no-pod-template"],
)
def test_references(dependent: dict[str, Any], expected: list[Reference]) -> None:
    assert dependencies.references(obj(dependent)) == tuple(expected)


def test_missing_configmap_is_a_warning_at_its_line() -> None:
    pointer = f"{POD}/containers/0/envFrom/1/configMapRef/name"
    cart = obj(
        deployment(
            containers(
                envFrom=[
                    {"secretRef": {"name": "pw"}},
                    {"configMapRef": {"name": "cart-config"}},
                    {"configMapRef": {"name": "cart-config"}},
                ]
            )
        ),
        lines={
            f"{POD}/containers/0/envFrom/0": 20,
            f"{POD}/containers/0/envFrom/1": 22,
            pointer: 23,
        },
    )
    found = dependencies.find([cart, obj(core("Secret", "pw"))])
    assert len(found.missing) == 1
    problem = found.missing[0]
    assert problem.severity is Severity.WARNING
    assert (problem.path, problem.line, problem.pointer) == (cart.origin.path, 23, pointer)
    assert problem.message == (
        "ConfigMap shop/cart-config is referenced but not in the repo: "
        "it must already exist on every cluster the workload runs on"
    )
    assert found.by_dependent[cart.key] == (key("Secret", "pw"),)


def test_missing_uses_the_nearest_recorded_line() -> None:
    cart = obj(
        deployment(
            {
                **containers(),
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                "serviceAccountName": "robot",
            }
        ),
        lines={f"{POD}/volumes/0": 31, f"{POD}/serviceAccountName": 40},
    )
    found = dependencies.find([cart])
    assert [(p.line, p.message.split(" is ")[0]) for p in found.missing] == [
        (31, "PersistentVolumeClaim shop/data"),
        (40, "ServiceAccount shop/robot"),
    ]


def test_optional_and_default_account_are_not_missing() -> None:
    cart = obj(
        deployment(
            {
                **containers(
                    envFrom=[{"configMapRef": {"name": "extra", "optional": True}}],
                    env=[
                        {
                            "name": "K",
                            "valueFrom": {
                                "secretKeyRef": {"name": "maybe", "key": "k", "optional": True}
                            },
                        }
                    ],
                ),
                "volumes": [{"name": "v", "configMap": {"name": "here", "optional": True}}],
                "serviceAccountName": "default",
            }
        )
    )
    found = dependencies.find([cart, obj(core("ConfigMap", "here"))])
    assert found.missing == ()
    assert found.by_dependent[cart.key] == (key("ConfigMap", "here"),)


def test_by_dependency_is_the_exact_reverse() -> None:
    objects = [
        obj(deployment(containers(envFrom=[{"configMapRef": {"name": "shared"}}]), name="cart")),
        obj(
            deployment(
                containers(
                    envFrom=[{"configMapRef": {"name": "shared"}}, {"secretRef": {"name": "pw"}}]
                ),
                name="api",
            )
        ),
        obj(CRON),
        obj(core("ConfigMap", "shared")),
        obj(core("Secret", "pw")),
        obj(core("Secret", "db")),
        obj(core("Namespace", NS, None)),
        obj(service("front", {"tier": "web"})),
    ]
    found = dependencies.find(objects)
    forward = {(d, k) for d, keys in found.by_dependent.items() for k in keys}
    backward = {(d, k) for k, dependents in found.by_dependency.items() for d in dependents}
    assert forward == backward
    assert found.by_dependency[key("ConfigMap", "shared")] == (
        key("Deployment", "api", group="apps"),
        key("Deployment", "cart", group="apps"),
    )
    assert found.by_dependency[key("Namespace", NS, "")] == (
        key("CronJob", "nightly", group="batch"),
        key("Deployment", "api", group="apps"),
        key("Deployment", "cart", group="apps"),
    )
    assert set(found.by_dependent) == {
        key("CronJob", "nightly", group="batch"),
        key("Deployment", "api", group="apps"),
        key("Deployment", "cart", group="apps"),
    }
    assert all(
        keys == tuple(sorted(keys, key=lambda k: k.sort_key))
        for keys in found.by_dependency.values()
    )


def test_references_resolve_in_the_workloads_namespace() -> None:
    cart = obj(deployment(containers(envFrom=[{"configMapRef": {"name": "cfg"}}])))
    found = dependencies.find(
        [cart, obj(core("ConfigMap", "cfg", "ops")), obj(service("cart", {"app": "cart"}, "ops"))]
    )
    assert found.by_dependent[cart.key] == ()
    assert [p.message.split(" is ")[0] for p in found.missing] == ["ConfigMap shop/cfg"]
    assert found.by_dependency == {}


def test_default_namespace_when_metadata_has_none() -> None:
    plain = {
        **deployment(containers(envFrom=[{"configMapRef": {"name": "cfg"}}])),
        "metadata": {"name": "cart"},
    }
    found = dependencies.find([obj(plain), obj(core("ConfigMap", "cfg", None))])
    assert found.by_dependent[key("Deployment", "cart", "default", "apps")] == (
        key("ConfigMap", "cfg", "default"),
    )
    assert found.missing == ()


def test_missing_line_from_parsed_yaml() -> None:
    text = b"""\
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart, namespace: shop}
spec:
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
        - name: main
          image: shop:1
          envFrom:
            - secretRef: {name: pw, optional: true}
            - configMapRef:
                name: cart-config
"""
    (doc,) = yamlio.parse_documents("workloads/shop/cart.yaml", text)
    found = dependencies.find([workloads.workload(doc, cluster_scoped=False)])
    assert [(p.path, p.line, p.pointer) for p in found.missing] == [
        ("workloads/shop/cart.yaml", 14, f"{POD}/containers/0/envFrom/1/configMapRef/name")
    ]
