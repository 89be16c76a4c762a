"""Per-replica resource demand of a workload, by Kubernetes' rules.

The demand of one pod is, per resource, the larger of the largest init container's request and
the sum of the app containers' requests, plus the pod overhead; a pod always needs one `pods`
slot. Quantities are parsed with Kubernetes' own rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler import kube
from reconciler.domain import Workload


def pod_template(manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec of a workload-like object (Deployment, Job, CronJob, Pod …), or None."""
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = spec.get("template")
    if isinstance(template, Mapping):
        pod = template.get("spec")
        return pod if isinstance(pod, Mapping) else None
    return None


def _requests(container: Mapping[str, Any]) -> dict[str, float]:
    raw = ((container.get("resources") or {}).get("requests")) or {}
    return {name: float(kube.parse_quantity(value)) for name, value in raw.items()}


def per_replica(workload: Workload) -> dict[str, float]:
    """Requests of one replica; empty for objects that run no pods."""
    pod = pod_template(workload.manifest)
    return {} if pod is None else pod_requests(pod)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """Requests of one pod from its spec, one `pods` slot included."""
    total: dict[str, float] = {}
    for container in pod.get("containers") or ():
        for name, amount in _requests(container).items():
            total[name] = total.get(name, 0.0) + amount
    for container in pod.get("initContainers") or ():
        for name, amount in _requests(container).items():
            total[name] = max(total.get(name, 0.0), amount)
    for name, value in (pod.get("overhead") or {}).items():
        total[name] = total.get(name, 0.0) + float(kube.parse_quantity(value))
    total["pods"] = total.get("pods", 0.0) + 1.0
    return dict(sorted(total.items()))
