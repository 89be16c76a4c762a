"""The one module that imports the official `kubernetes` client.

For now it offers Kubernetes' own quantity parsing (`500m`, `1Gi`, `1e3`) to the pure stages;
the apply stage adds cluster access here.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

from kubernetes.utils import quantity

_parse_quantity = cast(Callable[[Any], Decimal], quantity.parse_quantity)


def parse_quantity(quantity: str | int | float) -> Decimal:
    """Parse a Kubernetes resource quantity into a Decimal in base units.

    Raises ValueError, naming the bad value, for anything Kubernetes would reject.
    """
    try:
        return Decimal(_parse_quantity(quantity))
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"invalid quantity {quantity!r}") from exc
