"""Per-replica resource demand of a workload, by Kubernetes' rules.

The demand of one pod is, per resource, the larger of the largest init container's request and
the sum of the app containers' requests, plus the pod overhead; a pod always needs one `pods`
slot. Quantities are parsed with Kubernetes' own rules.

Called by 9 modules, among them `live.observe`, `render.services`, `schedule`,
`simulate.timeline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.domain import Workload
from reconciler.kube import quantity


def pod_template(manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec of a workload-like object (Deployment, Job, CronJob, Pod …), or None.
    Any shape is safe: a custom resource without a CRD reaches here unchecked."""
    kind = manifest.get("kind")
    spec = manifest.get("spec")
    if kind == "Pod":
        return spec if isinstance(spec, Mapping) else None
    if kind == "CronJob" and isinstance(spec, Mapping):
        job = spec.get("jobTemplate")
        spec = job.get("spec") if isinstance(job, Mapping) else None
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if isinstance(template, Mapping):
        pod = template.get("spec")
        return pod if isinstance(pod, Mapping) and _pod_shaped(pod) else None
    return None


_POD_LISTS = ("containers", "initContainers", "ephemeralContainers", "volumes")
_CONTAINER_LISTS = ("env", "envFrom", "volumeMounts", "ports")
_CONTAINER_STRINGS = ("command", "args")


def _pod_shaped(pod: Mapping[str, Any]) -> bool:
    """Whether the lists every reader of a pod walks are lists of the right items. A kind
    with a schema always is; a custom resource without a CRD (only warned about) that is not
    is not workload-like, so no reader meets an odd shape."""
    for field in _POD_LISTS:
        items = pod.get(field)
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            return False
        if field == "volumes":
            continue
        for container in items:
            for name in _CONTAINER_LISTS:
                value = container.get(name)
                if value is not None and not (
                    isinstance(value, list) and all(isinstance(v, Mapping) for v in value)
                ):
                    return False
            for name in _CONTAINER_STRINGS:
                value = container.get(name)
                if value is not None and not isinstance(value, list):
                    return False
    return True


def _requests(container: Any) -> dict[str, float]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    raw = resources.get("requests") if isinstance(resources, Mapping) else None
    return {name: float(quantity.parse_quantity(value)) for name, value in _items(raw)}


def per_replica(workload: Workload) -> dict[str, float]:
    """Requests of one replica; empty for objects that run no pods."""
    pod = pod_template(workload.manifest)
    return {} if pod is None else pod_requests(pod)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """Requests of one pod from its spec, one `pods` slot included."""
    total: dict[str, float] = {}
    for container in _list(pod.get("containers")):
        for name, amount in _requests(container).items():
            total[name] = total.get(name, 0.0) + amount
    for container in _list(pod.get("initContainers")):
        for name, amount in _requests(container).items():
            total[name] = max(total.get(name, 0.0), amount)
    for name, value in _items(pod.get("overhead")):
        total[name] = total.get(name, 0.0) + float(quantity.parse_quantity(value))
    total["pods"] = total.get("pods", 0.0) + 1.0
    return dict(sorted(total.items()))


def _items(raw: Any) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in raw.items()] if isinstance(raw, Mapping) else []


def _list(raw: Any) -> list[Any]:
    return list(raw) if isinstance(raw, list) else []
