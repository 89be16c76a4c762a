"""Objects for the cross-cluster service tests: workloads, Services and ConfigMaps built by hand."""

from __future__ import annotations

from typing import Any

from reconciler.domain import Origin, ResourceKey, Workload

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
