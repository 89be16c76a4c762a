"""API versions that Kubernetes has removed, with the release that removed them and what replaces
them (Kubernetes' deprecated API migration guide). An object written with one is an error when
the repo's `kubernetesVersion` is at or past that release: the API server would refuse it. The
references module is the caller.

Called by `validate.references`.
"""

from __future__ import annotations

from collections.abc import Iterable

_WORKLOADS = ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet")
_RBAC = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
_FLOW = ("FlowSchema", "PriorityLevelConfiguration")


def _table() -> Iterable[tuple[str, str, str, str]]:
    """(apiVersion, kind, removed in, replacement apiVersion or a sentence)."""
    for old in ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"):
        for kind in _WORKLOADS:
            yield old, kind, "1.16", "apps/v1"
    yield "extensions/v1beta1", "NetworkPolicy", "1.16", "networking.k8s.io/v1"
    yield "extensions/v1beta1", "PodSecurityPolicy", "1.16", "policy/v1beta1"
    for old in ("extensions/v1beta1", "networking.k8s.io/v1beta1"):
        yield old, "Ingress", "1.22", "networking.k8s.io/v1"
    yield "networking.k8s.io/v1beta1", "IngressClass", "1.22", "networking.k8s.io/v1"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        yield (
            "admissionregistration.k8s.io/v1beta1",
            kind,
            "1.22",
            "admissionregistration.k8s.io/v1",
        )
    yield (
        "apiextensions.k8s.io/v1beta1",
        "CustomResourceDefinition",
        "1.22",
        "apiextensions.k8s.io/v1",
    )
    yield "apiregistration.k8s.io/v1beta1", "APIService", "1.22", "apiregistration.k8s.io/v1"
    yield (
        "certificates.k8s.io/v1beta1",
        "CertificateSigningRequest",
        "1.22",
        "certificates.k8s.io/v1",
    )
    yield "coordination.k8s.io/v1beta1", "Lease", "1.22", "coordination.k8s.io/v1"
    for old in ("rbac.authorization.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1alpha1"):
        for kind in _RBAC:
            yield old, kind, "1.22", "rbac.authorization.k8s.io/v1"
    yield "scheduling.k8s.io/v1beta1", "PriorityClass", "1.22", "scheduling.k8s.io/v1"
    for kind in ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"):
        yield "storage.k8s.io/v1beta1", kind, "1.22", "storage.k8s.io/v1"
    yield "batch/v1beta1", "CronJob", "1.25", "batch/v1"
    yield "discovery.k8s.io/v1beta1", "EndpointSlice", "1.25", "discovery.k8s.io/v1"
    yield "events.k8s.io/v1beta1", "Event", "1.25", "events.k8s.io/v1"
    yield "autoscaling/v2beta1", "HorizontalPodAutoscaler", "1.25", "autoscaling/v2"
    yield "policy/v1beta1", "PodDisruptionBudget", "1.25", "policy/v1"
    yield (
        "policy/v1beta1",
        "PodSecurityPolicy",
        "1.25",
        "no replacement: use Pod Security Admission (pod-security.kubernetes.io/* labels)",
    )
    yield "node.k8s.io/v1beta1", "RuntimeClass", "1.25", "node.k8s.io/v1"
    yield "autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.26", "autoscaling/v2"
    for kind in _FLOW:
        yield (
            "flowcontrol.apiserver.k8s.io/v1beta1",
            kind,
            "1.26",
            "flowcontrol.apiserver.k8s.io/v1",
        )
    yield "storage.k8s.io/v1beta1", "CSIStorageCapacity", "1.27", "storage.k8s.io/v1"
    for kind in _FLOW:
        yield (
            "flowcontrol.apiserver.k8s.io/v1beta2",
            kind,
            "1.29",
            "flowcontrol.apiserver.k8s.io/v1",
        )
    for kind in _FLOW:
        yield (
            "flowcontrol.apiserver.k8s.io/v1beta3",
            kind,
            "1.32",
            "flowcontrol.apiserver.k8s.io/v1",
        )


REMOVED: dict[tuple[str, str], tuple[str, str]] = {
    (api_version, kind): (release, replacement)
    for api_version, kind, release, replacement in _table()
}
"""(apiVersion, kind) → (the Kubernetes release that removed it, its replacement)."""


def _release(version: str) -> tuple[int, int]:
    major, _, rest = version.removeprefix("v").partition(".")
    minor = rest.partition(".")[0]
    try:
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def removal(api_version: str, kind: str, version: str) -> str:
    """Why `api_version` `kind` cannot be served by Kubernetes `version` ("" when it can)."""
    entry = REMOVED.get((api_version, kind))
    if entry is None or _release(version) < _release(entry[0]):
        return ""
    release, replacement = entry
    use = replacement if " " in replacement else f"use apiVersion: {replacement}"
    return (
        f"{api_version} {kind} was removed in Kubernetes {release} and this repo's "
        f"kubernetesVersion is {version}; {use}"
    )
