"""Contract tests: discovery, CRUD, selectors and dry-run of the API emulator (tests/kubeapi).

Every test talks HTTP through `kubernetes.client` or `kubernetes.dynamic.DynamicClient`.
With DRO_E2E_KUBECONFIG set, the client-only tests run against that cluster (the context
DRO_E2E_CONTEXT, else its current one) instead, each in its own namespace; emulator-only tests
(seeding helpers, request counters, fault injection, the CLI) are skipped there by the `api`
fixture. `make e2e` runs them so against a cluster it starts (tests/e2e/test_contract.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests.contract.helpers import (
    PAUSE,
    configmap,
    crd_body,
    deployment,
    established,
    managed_entry,
    search,
    status_of,
    unique,
    wait_for,
)

# Discovery ---------------------------------------------------------------------------------------

BUILTINS = [
    ("v1", "Namespace", "namespaces", False),
    ("v1", "Node", "nodes", False),
    ("v1", "Pod", "pods", True),
    ("v1", "Service", "services", True),
    ("v1", "ConfigMap", "configmaps", True),
    ("v1", "Secret", "secrets", True),
    ("v1", "ServiceAccount", "serviceaccounts", True),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    ("v1", "Event", "events", True),
    ("apps/v1", "Deployment", "deployments", True),
    ("apps/v1", "StatefulSet", "statefulsets", True),
    ("apps/v1", "DaemonSet", "daemonsets", True),
    ("apps/v1", "ReplicaSet", "replicasets", True),
    ("batch/v1", "Job", "jobs", True),
    ("batch/v1", "CronJob", "cronjobs", True),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ("coordination.k8s.io/v1", "Lease", "leases", True),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    ("networking.k8s.io/v1", "Ingress", "ingresses", True),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses", False),
]


def test_version_and_group_discovery(api_client: ApiClient) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.git_version.startswith("v1.")
    assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]
    groups = {group.name for group in client.ApisApi(api_client).get_api_versions().groups}
    assert {api_version.rpartition("/")[0] for api_version, *_ in BUILTINS} - {""} <= groups


def test_dynamic_client_discovers_builtins(dyn: DynamicClient) -> None:
    for api_version, kind, plural, namespaced in BUILTINS:
        resource = dyn.resources.get(api_version=api_version, kind=kind)
        assert (resource.name, resource.namespaced) == (plural, namespaced), kind
    with pytest.raises(ResourceNotFoundError):
        dyn.resources.get(api_version="apps/v1", kind="NoSuchKind")


@pytest.mark.parametrize("scope", ["Namespaced", "Cluster"])
def test_crd_is_discovered_and_served_once_established(
    dyn: DynamicClient, namespace: str, scope: str
) -> None:
    group = f"{unique('c')}.contract.dro.example"
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crd = crds.create(body=crd_body(group, scope))
    try:
        wait_for("Established", lambda: established(dyn, crd.metadata.name))
        conditions = {
            c["type"]: c["status"] for c in crds.get(name=crd.metadata.name).status.conditions
        }
        assert conditions["NamesAccepted"] == "True"
        widgets = wait_for("discovery of Widget", lambda: search(dyn, f"{group}/v1", "Widget"))
        assert widgets.namespaced is (scope == "Namespaced")
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}}
        body["spec"] = {"size": 3}
        where = {"namespace": namespace} if scope == "Namespaced" else {}
        created = widgets.create(body=body, **where)
        assert created.spec.size == 3
        assert created.metadata.generation == 1
        listed = widgets.get(**where)
        assert [item.metadata.name for item in listed.items] == ["w1"]
        assert listed.items[0].kind == "Widget"
        widgets.delete(name="w1", **where)
    finally:
        crds.delete(name=crd.metadata.name)


# CRUD, errors and metadata -----------------------------------------------------------------------


def test_namespaced_crud_with_error_statuses(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("settings", a="1"))
    assert uuid.UUID(created.metadata.uid).version == 4
    assert created.metadata.namespace == namespace
    assert created.metadata.creation_timestamp is not None
    fetched = core.read_namespaced_config_map("settings", namespace)
    assert (fetched.data, fetched.metadata.resource_version) == (
        {"a": "1"},
        created.metadata.resource_version,
    )

    with pytest.raises(ApiException) as taken:
        core.create_namespaced_config_map(namespace, configmap("settings"))
    assert taken.value.status == 409
    assert status_of(taken.value)["reason"] == "AlreadyExists"

    fetched.data = {"a": "2"}
    replaced = core.replace_namespaced_config_map("settings", namespace, fetched)
    assert replaced.data == {"a": "2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert replaced.metadata.uid == created.metadata.uid

    fetched.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("settings", namespace, fetched)
    assert stale.value.status == 409
    assert status_of(stale.value)["reason"] == "Conflict"

    core.delete_namespaced_config_map("settings", namespace)
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("settings", namespace)
    assert gone.value.status == 404
    body = status_of(gone.value)
    assert (body["reason"], body["code"], body["details"]["name"]) == ("NotFound", 404, "settings")
    with pytest.raises(ApiException) as gone_again:
        core.delete_namespaced_config_map("settings", namespace)
    assert gone_again.value.status == 404


def test_cluster_scoped_crud(api_client: ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(api_client)
    name = unique("kubeapi-contract-reader")
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    created = rbac.create_cluster_role({"metadata": {"name": name}, "rules": [rule]})
    try:
        assert created.metadata.namespace is None
        names = [role.metadata.name for role in rbac.list_cluster_role().items]
        assert name in names
        created.rules[0].verbs = ["get", "list"]
        replaced = rbac.replace_cluster_role(name, created)
        assert rbac.read_cluster_role(name).rules[0].verbs == ["get", "list"]
        assert replaced.metadata.resource_version != created.metadata.resource_version
    finally:
        rbac.delete_cluster_role(name)
    with pytest.raises(ApiException) as gone:
        rbac.read_cluster_role(name)
    assert gone.value.status == 404


def test_list_namespace_or_cluster_wide(core: client.CoreV1Api, make_namespace: Any) -> None:
    first, second = make_namespace(), make_namespace()
    marker = {"contract-run": unique("run")}
    for ns in (first, second):
        core.create_namespaced_config_map(ns, configmap("shared", marker))
    selector = f"contract-run={marker['contract-run']}"
    one = core.list_namespaced_config_map(first, label_selector=selector)
    assert [(i.metadata.namespace, i.metadata.name) for i in one.items] == [(first, "shared")]
    everywhere = core.list_config_map_for_all_namespaces(label_selector=selector)
    assert sorted(i.metadata.namespace for i in everywhere.items) == sorted([first, second])
    assert int(everywhere.metadata.resource_version) > 0


def test_missing_namespace_and_invalid_name(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as missing:
        core.create_namespaced_config_map(unique("no-such-namespace"), configmap("x"))
    assert missing.value.status == 404
    assert status_of(missing.value)["details"]["kind"] == "namespaces"
    with pytest.raises(ApiException) as bad:
        core.create_namespaced_config_map(namespace, configmap("Not_A_Valid_Name"))
    assert bad.value.status == 422
    assert status_of(bad.value)["reason"] == "Invalid"


def test_generate_name_and_pagination(core: client.CoreV1Api, namespace: str) -> None:
    for _ in range(3):
        made = core.create_namespaced_config_map(
            namespace, {"metadata": {"generateName": "page-"}, "data": {}}
        )
        assert made.metadata.name.startswith("page-")
        assert len(made.metadata.name) > 5
    first = core.list_namespaced_config_map(namespace, limit=2)
    names = [i.metadata.name for i in first.items if i.metadata.name.startswith("page-")]
    assert len(first.items) == 2
    assert first.metadata._continue
    rest = core.list_namespaced_config_map(namespace, limit=2, _continue=first.metadata._continue)
    names += [i.metadata.name for i in rest.items if i.metadata.name.startswith("page-")]
    assert len(set(names)) == 3


def test_resource_version_generation_and_uid(api_client: ApiClient, namespace: str) -> None:
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    one = core.create_namespaced_config_map(namespace, configmap("one"))
    two = core.create_namespaced_config_map(namespace, configmap("two"))
    assert int(two.metadata.resource_version) > int(one.metadata.resource_version)
    assert one.metadata.uid != two.metadata.uid

    same = core.replace_namespaced_config_map("two", namespace, two)
    assert same.metadata.resource_version == two.metadata.resource_version  # no-op update

    created = apps.create_namespaced_deployment(namespace, deployment("gen", namespace))
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment(
        "gen", namespace, {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled.metadata.generation == 1
    assert labelled.metadata.resource_version != created.metadata.resource_version
    scaled = apps.patch_namespaced_deployment("gen", namespace, {"spec": {"replicas": 0}})
    assert scaled.metadata.generation == 2
    assert scaled.metadata.uid == created.metadata.uid


def test_deleting_a_namespace_deletes_its_objects(core: client.CoreV1Api) -> None:
    name = unique("kubeapi-contract-doomed")
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(name, configmap("inside"))
    core.delete_namespace(name)

    def gone() -> bool:
        try:
            core.read_namespaced_config_map("inside", name)
        except ApiException as error:
            return error.status == 404
        return False

    wait_for("the namespace's ConfigMap to go", gone, timeout=120)


# Selectors ---------------------------------------------------------------------------------------

SELECTOR_CASES = [
    ("tier=web", {"web1", "web2"}),
    ("tier==web", {"web1", "web2"}),
    ("tier!=web", {"db", "bare"}),
    ("tier in (web,db)", {"web1", "web2", "db"}),
    ("tier notin (web)", {"db", "bare"}),
    ("tier", {"web1", "web2", "db"}),
    ("!tier", {"bare"}),
    ("tier=web,canary", {"web2"}),
    ("tier in (web),!canary", {"web1"}),
]


def test_label_selectors(core: client.CoreV1Api, namespace: str) -> None:
    labels = {
        "web1": {"tier": "web"},
        "web2": {"tier": "web", "canary": "true"},
        "db": {"tier": "db"},
        "bare": {"other": "x"},
    }
    for name, these in labels.items():
        core.create_namespaced_config_map(namespace, configmap(name, these))
    for selector, expected in SELECTOR_CASES:
        found = core.list_namespaced_config_map(namespace, label_selector=selector)
        # A real cluster also puts kube-root-ca.crt into every namespace: leave it out.
        assert {i.metadata.name for i in found.items} & set(labels) == expected, selector


def test_field_selectors_on_name_and_pod_phase(core: client.CoreV1Api, namespace: str) -> None:
    for phase in ("Running", "Succeeded", "Failed"):
        name = phase.lower()
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": name},
                "spec": {
                    "schedulerName": "no-such-scheduler",
                    "containers": [{"name": "main", "image": PAUSE}],
                },
            },
        )
        core.patch_namespaced_pod_status(name, namespace, {"status": {"phase": phase}})
    live = core.list_namespaced_pod(
        namespace, field_selector="status.phase!=Succeeded,status.phase!=Failed"
    )
    assert [p.metadata.name for p in live.items] == ["running"]
    done = core.list_namespaced_pod(namespace, field_selector="status.phase=Succeeded")
    assert [p.metadata.name for p in done.items] == ["succeeded"]
    named = core.list_namespaced_pod(namespace, field_selector="metadata.name=failed")
    assert [p.metadata.name for p in named.items] == ["failed"]
    with pytest.raises(ApiException) as unsupported:
        core.list_namespaced_pod(namespace, field_selector="spec.noSuchField=x")
    assert unsupported.value.status == 400


# Dry run -----------------------------------------------------------------------------------------


def test_dry_run_changes_nothing(api_client: ApiClient, dyn: DynamicClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    preview = core.create_namespaced_config_map(namespace, configmap("dry", a="1"), dry_run="All")
    assert preview.metadata.uid
    assert preview.data == {"a": "1"}
    with pytest.raises(ApiException) as absent:
        core.read_namespaced_config_map("dry", namespace)
    assert absent.value.status == 404

    real = core.create_namespaced_config_map(namespace, configmap("real", a="1"))
    real.data = {"a": "2"}
    replaced = core.replace_namespaced_config_map("real", namespace, real, dry_run="All")
    assert replaced.data == {"a": "2"}
    patched = core.patch_namespaced_config_map(
        "real", namespace, {"data": {"a": "3"}}, dry_run="All"
    )
    assert patched.data == {"a": "3"}
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    applied = configmaps.server_side_apply(
        body=configmap("real", a="4"),
        namespace=namespace,
        field_manager="dro",
        dry_run="All",
        force_conflicts=True,
    )
    assert applied.data.a == "4"
    assert managed_entry(applied.to_dict(), "dro", "Apply") is not None
    core.delete_namespaced_config_map("real", namespace, dry_run="All")
    stored = core.read_namespaced_config_map("real", namespace)
    assert stored.data == {"a": "1"}
    assert stored.metadata.resource_version == real.metadata.resource_version
    live = configmaps.get(name="real", namespace=namespace).to_dict()
    assert managed_entry(live, "dro", "Apply") is None
