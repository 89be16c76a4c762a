"""Builders for the dependency-bundling tests: manifests of core objects, Deployments and
CronJobs around a pod, and the Workload and key validation would make of them; shared by
test_dependencies, test_dependencies_missing and test_movehooks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.domain import Origin, ResourceKey, Workload
from reconciler.validate import workloads

NS = "shop"
POD = "/spec/template/spec"


def obj(manifest: Mapping[str, Any], *, lines: Mapping[str, int] | None = None) -> Workload:
    """A Workload from a manifest, keyed as validation keys it (default namespace, group)."""
    api, kind = str(manifest["apiVersion"]), str(manifest["kind"])
    key = workloads.key_of(manifest, workloads.is_cluster_scoped(api, kind, {}))
    path = f"workloads/{key.namespace or '_cluster'}/{kind.lower()}-{key.name}.yaml"
    return Workload(
        key=key,
        api_version=api,
        manifest=manifest,
        origin=Origin(path=path, line=1, lines=lines or {}),
    )


def core(kind: str, name: str, namespace: str | None = NS, **body: Any) -> dict[str, Any]:
    meta: dict[str, Any] = (
        {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    )
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **body}


def deployment(
    pod: Mapping[str, Any], *, name: str = "cart", namespace: str = NS
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "tier": "web"}}, "spec": pod},
        },
    }


def containers(**container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "main", "image": "shop:1", **container}]}


def key(kind: str, name: str, namespace: str = NS, group: str = "") -> ResourceKey:
    return ResourceKey(group=group, kind=kind, namespace=namespace, name=name)


CRON = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "nightly", "namespace": NS},
    "spec": {
        "schedule": "0 3 * * *",
        "jobTemplate": {
            "spec": {"template": {"spec": containers(envFrom=[{"secretRef": {"name": "db"}}])}}
        },
    },
}


def service(name: str, selector: Mapping[str, str] | None, namespace: str = NS) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return core("Service", name, namespace, spec=spec)
