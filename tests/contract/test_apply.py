"""Contract tests: server-side apply and managedFields, patches, concurrency and Leases."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.contract.helpers import (
    PAUSE,
    configmap,
    deployment,
    managed_entry,
    owns,
    status_of,
)

# Server-side apply -------------------------------------------------------------------------------


def test_apply_creates_then_updates_with_managed_fields(dyn: DynamicClient, namespace: str) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    created = deployments.server_side_apply(
        body=deployment("web", namespace), field_manager="dro", force_conflicts=True
    ).to_dict()
    assert created["metadata"]["generation"] == 1
    entry = managed_entry(created, "dro", "Apply")
    assert entry is not None
    assert (entry["apiVersion"], entry["fieldsType"]) == ("apps/v1", "FieldsV1")
    image_path = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:image")
    assert owns(created, "dro", *image_path)
    assert owns(created, "dro", "f:spec", "f:replicas")
    container = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert container['k:{"name":"app"}']["."] == {}
    assert "f:metadata" not in entry["fieldsV1"] or "f:name" not in entry["fieldsV1"]["f:metadata"]

    updated = deployments.server_side_apply(
        body=deployment("web", namespace, image="registry.k8s.io/pause:3.9"),
        field_manager="dro",
        force_conflicts=True,
    ).to_dict()
    assert updated["spec"]["template"]["spec"]["containers"][0]["image"].endswith("pause:3.9")
    assert updated["metadata"]["generation"] == 2
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


def test_apply_removes_fields_the_manager_stopped_applying(
    dyn: DynamicClient, namespace: str
) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    body = deployment("prune", namespace)
    body["metadata"]["labels"] = {"keep": "yes", "drop": "yes"}
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "KEEP", "value": "1"}, {"name": "DROP", "value": "2"}]
    deployments.server_side_apply(body=body, field_manager="dro", force_conflicts=True)

    del body["metadata"]["labels"]["drop"]
    container["env"] = [{"name": "KEEP", "value": "1"}]
    after = deployments.server_side_apply(body=body, field_manager="dro", force_conflicts=True)
    after_dict = after.to_dict()
    assert after_dict["metadata"]["labels"] == {"keep": "yes"}
    env = after_dict["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "KEEP", "value": "1"}]
    assert not owns(after_dict, "dro", "f:metadata", "f:labels", "f:drop")


def test_apply_conflicts_with_another_manager_unless_forced(
    dyn: DynamicClient, namespace: str
) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    deployments.server_side_apply(
        body=deployment("contested", namespace, replicas=1), field_manager="dro"
    )
    rival = deployment("contested", namespace, replicas=2)
    with pytest.raises(ApiException) as conflict:
        deployments.server_side_apply(body=rival, field_manager="rival")
    assert conflict.value.status == 409
    body = status_of(conflict.value)
    assert body["reason"] == "Conflict"
    causes = body["details"]["causes"]
    assert body["details"] == {"causes": causes}  # a real server names no object here
    assert [(c["reason"], c["field"]) for c in causes] == [
        ("FieldManagerConflict", ".spec.replicas")
    ]
    assert 'conflict with "dro"' in causes[0]["message"]

    won = deployments.server_side_apply(body=rival, field_manager="rival", force_conflicts=True)
    won_dict = won.to_dict()
    assert won_dict["spec"]["replicas"] == 2
    assert owns(won_dict, "rival", "f:spec", "f:replicas")
    assert not owns(won_dict, "dro", "f:spec", "f:replicas")
    image = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:image")
    assert owns(won_dict, "dro", *image)
    assert owns(won_dict, "rival", *image)


def test_shared_ownership_keeps_a_field_another_manager_still_applies(
    dyn: DynamicClient, namespace: str
) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    where = {"namespace": namespace, "field_manager": "dro"}
    configmaps.server_side_apply(body=configmap("shared", a="1", b="2"), **where)
    both = configmaps.server_side_apply(
        body=configmap("shared", a="1"), namespace=namespace, field_manager="other"
    ).to_dict()
    assert owns(both, "dro", "f:data", "f:a")
    assert owns(both, "other", "f:data", "f:a")

    dropped = configmaps.server_side_apply(body=configmap("shared"), **where).to_dict()
    assert dropped["data"] == {"a": "1"}  # b had one owner and went; a is still "other"'s
    assert owns(dropped, "other", "f:data", "f:a")
    assert managed_entry(dropped, "dro", "Apply") is None


def test_noop_apply_keeps_resource_version_and_times(dyn: DynamicClient, namespace: str) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = configmap("steady", labels={"app": "steady"}, a="1")
    first = configmaps.server_side_apply(body=body, namespace=namespace, field_manager="dro")
    again = configmaps.server_side_apply(body=body, namespace=namespace, field_manager="dro")
    assert again.metadata.resourceVersion == first.metadata.resourceVersion
    before = managed_entry(first.to_dict(), "dro", "Apply")
    after = managed_entry(again.to_dict(), "dro", "Apply")
    assert before is not None
    assert after is not None
    assert before["time"] == after["time"]


def test_merge_patch_records_an_update_entry(dyn: DynamicClient, namespace: str) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    deployments.server_side_apply(body=deployment("edited", namespace), field_manager="dro")
    patched = deployments.patch(
        body={"spec": {"replicas": 3}},
        name="edited",
        namespace=namespace,
        content_type="application/merge-patch+json",
        field_manager="kubectl-edit",
    ).to_dict()
    assert patched["spec"]["replicas"] == 3
    entry = managed_entry(patched, "kubectl-edit", "Update")
    assert entry is not None
    assert entry["apiVersion"] == "apps/v1"
    assert owns(patched, "kubectl-edit", "f:spec", "f:replicas", operation="Update")
    assert not owns(patched, "dro", "f:spec", "f:replicas")


def test_strategic_merge_patch_merges_containers_by_name(
    api_client: ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api_client)
    body = deployment("sidecars", namespace)
    body["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": PAUSE})
    apps.create_namespaced_deployment(namespace, body)
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]}
            }
        }
    }
    patched = apps.patch_namespaced_deployment("sidecars", namespace, patch)
    images = {c.name: c.image for c in patched.spec.template.spec.containers}
    assert images == {"app": "registry.k8s.io/pause:3.9", "sidecar": PAUSE}


def test_apply_accepts_yaml_text(dyn: DynamicClient, namespace: str) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    text = f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: from-yaml
  namespace: {namespace}
data:
  day: 2024-01-01
  enabled: "true"
"""
    applied = configmaps.patch(
        body=text,
        name="from-yaml",
        namespace=namespace,
        content_type="application/apply-patch+yaml",
        field_manager="dro",
    )
    assert applied.to_dict()["data"] == {"day": "2024-01-01", "enabled": "true"}
    assert managed_entry(applied.to_dict(), "dro", "Apply") is not None


def test_json_patch(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, configmap("jp", a="1"))
    patched = core.patch_namespaced_config_map(
        "jp",
        namespace,
        [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}],
    )
    assert patched.data == {"b": "2"}


# Concurrency ------------------------------------------------------------------------------------


def test_concurrent_creates_get_distinct_resource_versions(
    core: client.CoreV1Api, namespace: str
) -> None:
    def create(worker: int) -> list[str]:
        return [
            core.create_namespaced_config_map(
                namespace, configmap(f"w{worker}-{i}")
            ).metadata.resource_version
            for i in range(10)
        ]

    with ThreadPoolExecutor(4) as pool:
        versions = [version for batch in pool.map(create, range(4)) for version in batch]
    assert len(set(versions)) == 40
    names = {item.metadata.name for item in core.list_namespaced_config_map(namespace).items}
    assert {f"w{w}-{i}" for w in range(4) for i in range(10)} <= names


def test_optimistic_concurrency_loses_no_update(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, configmap("counter", n="0"))

    def increment(_: int) -> int:
        conflicts = 0
        while True:
            current = core.read_namespaced_config_map("counter", namespace)
            current.data["n"] = str(int(current.data["n"]) + 1)
            try:
                core.replace_namespaced_config_map("counter", namespace, current)
                return conflicts
            except ApiException as error:
                if error.status != 409:
                    raise
                conflicts += 1

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(increment, range(20)))
    assert core.read_namespaced_config_map("counter", namespace).data == {"n": "20"}


# Leases ------------------------------------------------------------------------------------------


def test_lease_crud_with_conflicts(api_client: ApiClient, namespace: str) -> None:
    leases = client.CoordinationV1Api(api_client)
    spec = {"holderIdentity": "dro-a", "leaseDurationSeconds": 15}
    created = leases.create_namespaced_lease(namespace, {"metadata": {"name": "dro"}, "spec": spec})
    mine = leases.read_namespaced_lease("dro", namespace)
    theirs = leases.read_namespaced_lease("dro", namespace)
    mine.spec.holder_identity = "dro-b"
    renewed = leases.replace_namespaced_lease("dro", namespace, mine)
    assert renewed.spec.holder_identity == "dro-b"
    assert renewed.metadata.resource_version != created.metadata.resource_version
    theirs.spec.holder_identity = "dro-c"
    with pytest.raises(ApiException) as lost:
        leases.replace_namespaced_lease("dro", namespace, theirs)
    assert lost.value.status == 409
    assert [item.metadata.name for item in leases.list_namespaced_lease(namespace).items] == ["dro"]
    leases.delete_namespaced_lease("dro", namespace)
    with pytest.raises(ApiException) as gone:
        leases.read_namespaced_lease("dro", namespace)
    assert gone.value.status == 404
