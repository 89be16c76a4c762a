"""Amounts written as Kubernetes quantities, exactly, and read back.

Status files on the output branch hold capacity, usage and the largest free node as people and
kubectl write them (`cpu: "96"`, `memory: 300Gi`, `cpu: 250m`), not as float bytes. `text` is
exact to Kubernetes' finest unit (nano): bytes take the largest binary suffix that divides them,
other integers stay plain, fractions take `m`, `u` or `n`. `amount` reads a quantity back, and
also the plain numbers that earlier versions wrote. This module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Context, Decimal, localcontext

from reconciler.kube import client as kube

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTES = frozenset({"memory", "storage", "ephemeral-storage"})
_FRACTIONS = (("m", 1_000), ("u", 1_000_000), ("n", 1_000_000_000))
_NANO = Decimal("1e-9")
_EXACT = Context(prec=400)
"""Enough digits for any float (up to about 1e308) to nano precision."""


def in_bytes(resource: str) -> bool:
    """Whether a resource is counted in bytes (and so written with binary suffixes)."""
    return resource in _BYTES or resource.startswith("hugepages-")


def text(resource: str, value: float) -> str:
    """`value` (in base units) as a Kubernetes quantity: `96`, `300Gi`, `250m`, `1500u`."""
    with localcontext(_EXACT):
        return _exact_text(resource, Decimal(repr(float(value))).quantize(_NANO))


def _exact_text(resource: str, exact: Decimal) -> str:
    if exact == exact.to_integral_value():
        whole = int(exact)
        if in_bytes(resource) and whole:
            for suffix, unit in _BINARY:
                if whole % unit == 0:
                    return f"{whole // unit}{suffix}"
        return str(whole)
    for suffix, scale in _FRACTIONS:
        scaled = exact * scale
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    raise AssertionError("unreachable: a value quantized to nano is a whole number of nanos")


def texts(values: Mapping[str, float]) -> dict[str, str]:
    """Every amount of a resource map as a quantity, by resource name."""
    return {resource: text(resource, value) for resource, value in sorted(values.items())}


def amount(raw: object) -> float:
    """A quantity (`300Gi`) or a plain number (as earlier versions wrote) in base units, a
    finite number >= 0; ValueError otherwise."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(f"{str(raw)[:60]!r} is not a quantity")
    try:
        value = float(kube.parse_quantity(raw))
    except (ValueError, OverflowError) as error:
        raise ValueError(f"{str(raw)[:60]!r} is not a quantity") from error
    if not math.isfinite(value) or value < 0 or value >= 1e300:
        raise ValueError(f"{str(raw)[:60]!r} is not a finite amount >= 0")
    return value


def amounts(raw: object) -> dict[str, float]:
    """A resource map read back in base units; entries that are not amounts are left out
    (`statefiles` has checked the files dro reads)."""
    if not isinstance(raw, Mapping):
        return {}
    result: dict[str, float] = {}
    for resource, value in raw.items():
        try:
            result[str(resource)] = amount(value)
        except ValueError:
            continue
    return result
