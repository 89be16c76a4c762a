"""Resource amounts as people write them, for reasons and messages: `8 cpu`, `1.5Gi memory`."""

from __future__ import annotations

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTES = ("memory", "storage", "ephemeral-storage")


def amount(resource: str, value: float) -> str:
    """A short Kubernetes-style quantity: cores or millicores, binary units for bytes."""
    if resource == "cpu":
        if value == int(value):
            return str(int(value))
        return f"{value * 1000:.4g}m"
    if resource in _BYTES or resource.startswith("hugepages-"):
        for suffix, unit in _BINARY:
            if value >= unit:
                return f"{value / unit:.4g}{suffix}"
    return f"{value:.6g}"


def describe(resource: str, value: float) -> str:
    """`8 cpu`, `1.5Gi memory`, `1 nvidia.com/gpu`."""
    return f"{amount(resource, value)} {resource}"
