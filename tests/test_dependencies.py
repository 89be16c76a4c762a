"""Dependency bundling: what a pod-running workload needs from the repo, and what is missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from reconciler.domain import ResourceKey
from reconciler.validate import dependencies
from tests.builders.dependencies import CRON, NS, containers, core, deployment, key, obj, service

RBAC = "rbac.authorization.k8s.io"


def rbac(kind: str, name: str, namespace: str | None = NS, **body: Any) -> dict[str, Any]:
    return {**core(kind, name, namespace, **body), "apiVersion": f"{RBAC}/v1"}


STATEFUL = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": NS},
    "spec": {
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": containers()},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
    },
}
BARE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "debug", "namespace": NS, "labels": {"app": "debug"}},
    "spec": containers(envFrom=[{"configMapRef": {"name": "cfg"}}]),
}
HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "cart", "namespace": NS},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cart"}},
}
HPA_OTHER = {**HPA, "metadata": {"name": "other", "namespace": NS}}
HPA_OTHER["spec"] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}}
HPA_WRONG_GROUP = {**HPA, "metadata": {"name": "wrong", "namespace": NS}}
HPA_WRONG_GROUP["spec"] = {
    "scaleTargetRef": {"apiVersion": "argoproj.io/v1", "kind": "Deployment", "name": "cart"}
}


def pdb(name: str, selector: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": selector},
    }


def binding(
    kind: str,
    name: str,
    role_kind: str,
    role: str,
    subject: Mapping[str, Any],
    namespace: str | None = NS,
) -> dict[str, Any]:
    return rbac(
        kind,
        name,
        namespace,
        roleRef={"apiGroup": RBAC, "kind": role_kind, "name": role},
        subjects=[{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", **subject}],
    )


# (id, dependent manifest, other repo objects, expected dependencies of the dependent)
CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[ResourceKey]]] = [
    (
        "env-valueFrom-configMap",
        deployment(
            containers(
                env=[
                    {"name": "A", "value": "1"},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "b"}}},
                ]
            )
        ),
        [core("ConfigMap", "cfg")],
        [key("ConfigMap", "cfg")],
    ),
    (
        "env-valueFrom-secret",
        deployment(
            containers(
                env=[{"name": "P", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "p"}}}]
            )
        ),
        [core("Secret", "pw")],
        [key("Secret", "pw")],
    ),
    (
        "envFrom-configMap-and-secret",
        deployment(
            containers(envFrom=[{"configMapRef": {"name": "cfg"}}, {"secretRef": {"name": "pw"}}])
        ),
        [core("ConfigMap", "cfg"), core("Secret", "pw")],
        [key("ConfigMap", "cfg"), key("Secret", "pw")],
    ),
    (
        "initContainers",
        deployment(
            {
                **containers(),
                "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "pw"}}]}],
            }
        ),
        [core("Secret", "pw")],
        [key("Secret", "pw")],
    ),
    (
        "volume-configMap",
        deployment({**containers(), "volumes": [{"name": "v", "configMap": {"name": "cfg"}}]}),
        [core("ConfigMap", "cfg")],
        [key("ConfigMap", "cfg")],
    ),
    (
        "volume-secret",
        deployment({**containers(), "volumes": [{"name": "v", "secret": {"secretName": "tls"}}]}),
        [core("Secret", "tls")],
        [key("Secret", "tls")],
    ),
    (
        "volume-projected",
        deployment(
            {
                **containers(),
                "volumes": [
                    {
                        "name": "v",
                        "projected": {
                            "sources": [
                                {"serviceAccountToken": {"path": "t"}},
                                {"configMap": {"name": "cfg"}},
                                {"secret": {"name": "tls"}},
                            ]
                        },
                    }
                ],
            }
        ),
        [core("ConfigMap", "cfg"), core("Secret", "tls")],
        [key("ConfigMap", "cfg"), key("Secret", "tls")],
    ),
    (
        "volume-pvc",
        deployment(
            {
                **containers(),
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}],
            }
        ),
        [core("PersistentVolumeClaim", "data")],
        [key("PersistentVolumeClaim", "data")],
    ),
    (
        "imagePullSecrets",
        deployment({**containers(), "imagePullSecrets": [{"name": "registry"}]}),
        [core("Secret", "registry")],
        [key("Secret", "registry")],
    ),
    (
        "serviceAccount-RoleBinding-Role",
        deployment({**containers(), "serviceAccountName": "robot"}),
        [
            core("ServiceAccount", "robot", imagePullSecrets=[{"name": "registry"}]),
            core("Secret", "registry"),
            rbac("Role", "reader"),
            binding("RoleBinding", "robot-reads", "Role", "reader", {"name": "robot"}),
            binding("RoleBinding", "other-reads", "Role", "reader", {"name": "other"}),
            binding(
                "RoleBinding",
                "robot-elsewhere",
                "Role",
                "reader",
                {"name": "robot", "namespace": "ops"},
            ),
        ],
        [
            key("Role", "reader", group=RBAC),
            key("RoleBinding", "robot-reads", group=RBAC),
            key("Secret", "registry"),
            key("ServiceAccount", "robot"),
        ],
    ),
    (
        "serviceAccount-ClusterRoleBinding-ClusterRole",
        deployment({**containers(), "serviceAccountName": "robot"}),
        [
            core("ServiceAccount", "robot"),
            rbac("ClusterRole", "watcher", None),
            binding(
                "ClusterRoleBinding",
                "robot-watches",
                "ClusterRole",
                "watcher",
                {"name": "robot", "namespace": NS},
                None,
            ),
            binding(
                "ClusterRoleBinding",
                "robot-of-ops",
                "ClusterRole",
                "watcher",
                {"name": "robot", "namespace": "ops"},
                None,
            ),
        ],
        [
            key("ClusterRole", "watcher", "", RBAC),
            key("ClusterRoleBinding", "robot-watches", "", RBAC),
            key("ServiceAccount", "robot"),
        ],
    ),
    (
        "RoleBinding-to-ClusterRole",
        deployment({**containers(), "serviceAccountName": "robot"}),
        [
            core("ServiceAccount", "robot"),
            rbac("ClusterRole", "view", None),
            rbac("Role", "view"),
            binding("RoleBinding", "robot-views", "ClusterRole", "view", {"name": "robot"}),
        ],
        [
            key("ClusterRole", "view", "", RBAC),
            key("RoleBinding", "robot-views", group=RBAC),
            key("ServiceAccount", "robot"),
        ],
    ),
    (
        "implicit-default-serviceAccount-only-when-in-repo",
        deployment(containers()),
        [core("ServiceAccount", "default"), core("ServiceAccount", "robot")],
        [key("ServiceAccount", "default")],
    ),
    (
        "service-by-selector",
        deployment(containers()),
        [
            service("cart", {"app": "cart"}),
            service("web", {"tier": "web", "app": "cart"}),
            service("wrong", {"app": "cart", "tier": "db"}),
            service("external", None),
            service("empty-selector", {}),
            service("elsewhere", {"app": "cart"}, "ops"),
        ],
        [key("Service", "cart"), key("Service", "web")],
    ),
    (
        "hpa-by-scaleTargetRef",
        deployment(containers()),
        [HPA, HPA_OTHER, HPA_WRONG_GROUP],
        [key("HorizontalPodAutoscaler", "cart", group="autoscaling")],
    ),
    (
        "pdb-by-selector",
        deployment(containers()),
        [
            pdb("by-label", {"matchLabels": {"app": "cart"}}),
            pdb(
                "by-expression",
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
            ),
            pdb("everything", {}),
            pdb("not-me", {"matchLabels": {"app": "db"}}),
            pdb(
                "excluded",
                {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]},
            ),
        ],
        [
            key("PodDisruptionBudget", "by-expression", group="policy"),
            key("PodDisruptionBudget", "by-label", group="policy"),
            key("PodDisruptionBudget", "everything", group="policy"),
        ],
    ),
    (
        "namespace",
        deployment(containers()),
        [core("Namespace", NS, None), core("Namespace", "ops", None)],
        [key("Namespace", NS, "")],
    ),
    ("cronjob-jobTemplate", CRON, [core("Secret", "db")], [key("Secret", "db")]),
    (
        "bare-pod",
        BARE_POD,
        [core("ConfigMap", "cfg"), service("debug", {"app": "debug"})],
        [key("ConfigMap", "cfg"), key("Service", "debug")],
    ),
    (
        "statefulset-volumeClaimTemplates-are-not-dependencies",
        STATEFUL,
        [core("PersistentVolumeClaim", "data"), core("PersistentVolumeClaim", "data-db-0")],
        [],
    ),
]


@pytest.mark.parametrize(
    ("dependent", "others", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule(
    dependent: dict[str, Any], others: list[dict[str, Any]], expected: list[ResourceKey]
) -> None:
    unrelated = [
        core("ConfigMap", "unrelated"),
        core("Secret", "unrelated"),
        core("ServiceAccount", "unrelated"),
    ]
    objects = [obj(dependent), *(obj(o) for o in [*others, *unrelated])]
    found = dependencies.find(objects)
    assert found.by_dependent[objects[0].key] == tuple(sorted(expected, key=lambda k: k.sort_key))
    assert not [p for p in found.missing if p.path == objects[0].origin.path]
