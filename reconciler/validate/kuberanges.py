"""Kubernetes' numeric rules that its published OpenAPI schemas leave out, added to them.

The schemas say `format: int32` or `int64` but carry no bounds: the API server enforces them
when it decodes into Go's integer types ("cannot unmarshal number 2147483648 into Go struct
field … of type int32"). Its validation code adds more, such as `spec.replicas` of a
Deployment, ReplicaSet, StatefulSet or ReplicationController being at least 0, and an HPA's
`minReplicas` and `maxReplicas` at least 1. `schemacheck` applies `bounded` to the definitions
of each bundled Kubernetes version once, so these become ordinary schema errors at their line.

Called by `validate.schemacheck`.
"""

from __future__ import annotations

from typing import Any

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_FORMATS = {"int32": INT32, "int64": INT64}

VALIDATION_MINIMUMS: dict[str, dict[str, int]] = {
    "io.k8s.api.apps.v1.DeploymentSpec": {"replicas": 0},
    "io.k8s.api.apps.v1.ReplicaSetSpec": {"replicas": 0},
    "io.k8s.api.apps.v1.StatefulSetSpec": {"replicas": 0},
    "io.k8s.api.core.v1.ReplicationControllerSpec": {"replicas": 0},
    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec": {"minReplicas": 1, "maxReplicas": 1},
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": {"minReplicas": 1, "maxReplicas": 1},
}
"""Definition → field → the smallest value the API server's validation accepts."""


def bounded(definitions: dict[str, Any]) -> dict[str, Any]:
    """`definitions` (a Kubernetes `$defs` map, changed in place and returned) with the range
    of every int32 and int64 field, and the minimums of `VALIDATION_MINIMUMS`."""
    _add_format_ranges(definitions)
    for name, fields in VALIDATION_MINIMUMS.items():
        properties = (definitions.get(name) or {}).get("properties") or {}
        for field, minimum in fields.items():
            if isinstance(properties.get(field), dict):
                properties[field]["minimum"] = minimum
    return definitions


def _add_format_ranges(schema: Any) -> None:
    """Walk a schema and bound each integer that names its Go type (iteratively: the
    definitions nest deeply)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            limits = _FORMATS.get(str(node.get("format"))) if _is_integer(node) else None
            if limits is not None:
                node.setdefault("minimum", limits[0])
                node.setdefault("maximum", limits[1])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _is_integer(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "integer" or (isinstance(kind, list) and "integer" in kind)
