"""The one module that touches the official `kubernetes` client package.

For now it offers Kubernetes' own quantity parsing (`500m`, `1Gi`, `1e3`) to the pure stages;
the apply stage adds cluster access here. The client's quantity module is loaded on its own,
without importing the whole client (which costs ~0.4 s of start-up on every command).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from decimal import Decimal
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, cast


@cache
def _quantity_parser() -> Callable[[Any], Decimal]:
    package = importlib.util.find_spec("kubernetes")
    if package is None or not package.submodule_search_locations:
        raise ImportError("the kubernetes client package is not installed")
    source = Path(next(iter(package.submodule_search_locations))) / "utils" / "quantity.py"
    spec = importlib.util.spec_from_file_location("reconciler._kubernetes_quantity", source)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cast(Callable[[Any], Decimal], module.parse_quantity)


def parse_quantity(quantity: str | int | float) -> Decimal:
    """Parse a Kubernetes resource quantity into a Decimal in base units.

    Raises ValueError, naming the bad value, for anything Kubernetes would reject. Results are
    memoised: a repo repeats the same few quantities thousands of times.
    """
    return _parse_cached(type(quantity).__name__, quantity)


@lru_cache(maxsize=4096)
def _parse_cached(_kind: str, quantity: str | int | float) -> Decimal:
    try:
        return Decimal(_quantity_parser()(quantity))
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"invalid quantity {quantity!r}") from exc
