"""Kubernetes names and label values for the objects dro renders beside the manifests
(Karmada policies, Argo CD cluster decisions, KEP-5313 PlacementDecisions).

`fit` keeps a name within a length limit by cutting it and appending a hash of the whole,
so two long names stay distinct and the same name always gives the same result.

Called by `render.decisionout` and `render.karmadaout`.
"""

from __future__ import annotations

import hashlib

SUBDOMAIN = 253
"""The length limit of most object names (a DNS subdomain)."""
LABEL_VALUE = 63
"""The length limit of a label value."""
DIGITS = 10


def fit(name: str, limit: int = SUBDOMAIN) -> str:
    """`name` when it fits `limit`, else its head, `-` and 10 hex digits of its SHA-256; the
    head never ends in `.` or `-`, so the result stays a valid name or label value."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:DIGITS]
    return f"{name[: limit - DIGITS - 1].rstrip('.-_')}-{digest}"
