"""kubectl's names for kinds: short names (`deploy`, `sts`, `cm`), plurals, any case, and a
"did you mean" for a name that matches nothing (as kubectl's own suggestions do).

Called by `cli.report`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SHORT_NAMES = {
    "cm": "ConfigMap",
    "cj": "CronJob",
    "crd": "CustomResourceDefinition",
    "crds": "CustomResourceDefinition",
    "csr": "CertificateSigningRequest",
    "deploy": "Deployment",
    "ds": "DaemonSet",
    "ep": "Endpoints",
    "ev": "Event",
    "hpa": "HorizontalPodAutoscaler",
    "ing": "Ingress",
    "limits": "LimitRange",
    "netpol": "NetworkPolicy",
    "no": "Node",
    "ns": "Namespace",
    "pc": "PriorityClass",
    "pdb": "PodDisruptionBudget",
    "po": "Pod",
    "pv": "PersistentVolume",
    "pvc": "PersistentVolumeClaim",
    "quota": "ResourceQuota",
    "rc": "ReplicationController",
    "rs": "ReplicaSet",
    "sa": "ServiceAccount",
    "sc": "StorageClass",
    "sts": "StatefulSet",
    "svc": "Service",
}
"""The short names the Kubernetes API server advertises for its built-in kinds
(`kubectl api-resources`)."""


def matches(kind: str, written: str) -> bool:
    """Whether `written` (a kind, its plural, or its short name, in any case) names `kind`."""
    lowered = written.lower()
    if SHORT_NAMES.get(lowered, "").lower() == kind.lower():
        return True
    return lowered in _forms(kind.lower())


def _forms(kind: str) -> set[str]:
    forms = {kind, kind + "s", kind + "es"}
    if kind.endswith("y"):
        forms.add(kind[:-1] + "ies")
    return forms


def did_you_mean(wanted: str, known: Iterable[str]) -> list[str]:
    """Up to three of `known` closest to `wanted`, best first, compared without case: difflib's
    ratio at least 0.6, and no further than 0.05 below the best (a long shared prefix must not
    bring in every sibling)."""
    by_lower = {name.lower(): name for name in known}
    scored = []
    for name in by_lower:
        matcher = difflib.SequenceMatcher(None, wanted.lower(), name)
        scored.append((-matcher.ratio(), name))
    scored.sort()
    best = -scored[0][0] if scored else 0.0
    return [by_lower[n] for score, n in scored[:3] if -score >= max(0.6, best - 0.05)]
