"""Kubernetes quantities: parsed by Kubernetes' own rules, checked, and written back.

- Parsing (`parse_quantity`): the official client's parser, loaded from its file on its own so
  that the pure stages never import the `kubernetes` package (~0.4 s), memoised, and refused
  above what float64 holds.
- The grammar (`is_quantity`, `problem`, `suggestion`): apimachinery's `resource.ParseQuantity`:
  a signed decimal number, then either a binary suffix (`Ki` … `Ei`), a decimal one
  (`n u m "" k M G T P E`) or an exponent (`e3`, `E-2`). So `500m`, `1e3`, `.5Gi`, `+1`, `1.` and
  `1E` (an exa) are quantities, and `256MB`, `2cores`, `1K`, `1 Gi` and `1e3Mi` are not: the API
  server refuses them, and `parse_quantity` is only ever given what this grammar accepts.
- Exact text (`text`, `texts`, `amount`, `amounts`): status files hold capacity and usage as
  people and kubectl write them (`cpu: "96"`, `memory: 300Gi`, `cpu: 250m`), exact to
  Kubernetes' finest unit (nano), and read back, with the plain numbers earlier versions wrote.
- Short text for reasons and messages (`short`, `describe`): `8 cpu`, `1.5Gi memory`.

Called by 13 modules, among them `branch.statefiles`, `kube.demand`, `live.observe`,
`schedule.plugins.node_fit`.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from collections.abc import Callable, Mapping
from decimal import Context, Decimal, localcontext
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, cast

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTES = frozenset({"memory", "storage", "ephemeral-storage"})


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
        value = Decimal(_quantity_parser()(quantity))
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"invalid quantity {quantity!r}") from exc
    if not value.is_finite() or abs(value) > _LARGEST:
        raise QuantityOutOfRange(f"quantity {quantity!r} is out of range (above {_LARGEST:.3g})")
    return value


class QuantityOutOfRange(ValueError):
    """A well-formed quantity too large for the float64 that dro computes with."""


_LARGEST = Decimal(sys.float_info.max)
"""dro computes with float64: a larger quantity (`1e309`) would become infinity."""


# --- the grammar, and what a rejected value most likely meant ---------------------------------

_GRAMMAR = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?"
)
_SPLIT = re.compile(r"\s*([+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+))\s*([A-Za-z]*)\s*")
EXAMPLES = "examples: 500m, 2, 256Mi, 1Gi, 1e3"

_PLAIN = {"", "b", "byte", "bytes", "core", "cores", "cpu", "cpus", "vcpu", "vcpus"}
_MILLI = {"mcpu", "mcore", "mcores", "millicore", "millicores", "millicpu", "millicpus"}
_SCALES = "kmgtpe"
_BYTE_WORDS = ("bytes", "byte", "b", "")


def is_quantity(text: str) -> bool:
    """True when `text` is a quantity as Kubernetes writes one."""
    return _GRAMMAR.fullmatch(text) is not None


def problem(value: object) -> str | None:
    """Why `value` (a YAML value) is no Kubernetes quantity, or None when it is one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"{shown(value)} is not a Kubernetes quantity ({EXAMPLES})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{shown(value)} is not a Kubernetes quantity ({EXAMPLES})"
    if isinstance(value, str) and not is_quantity(value):
        guess = suggestion(value)
        said = f"did you mean {guess}?" if guess else EXAMPLES
        return f"{shown(value)} is not a Kubernetes quantity ({said})"
    try:
        parse_quantity(value)
    except QuantityOutOfRange:
        return f"{shown(value)} is out of range"
    return None


LONGEST_SHOWN = 60
"""A longer value is cut in a message, as `schemacheck` cuts one."""


def shown(value: object) -> str:
    """A value for a message, as YAML says null and booleans, a string cut to
    `LONGEST_SHOWN` characters."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str) and len(value) > LONGEST_SHOWN:
        return f"{value[:LONGEST_SHOWN]!r}…({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= LONGEST_SHOWN else f"{text[:LONGEST_SHOWN]}…"


def suggestion(text: str) -> str | None:
    """The quantity a user most likely meant by `text`: `256MB` → `256M or 256Mi`,
    `2cores` → `2`, `500millicores` → `500m`, `1 Gi` → `1Gi`; None when nothing is close."""
    found = _SPLIT.fullmatch(text)
    if found is None:
        return None
    number, unit = found[1].replace(",", "."), found[2]
    lowered = unit.lower()
    if lowered in _PLAIN:
        return _quoted(number)
    if lowered in _MILLI:
        return _quoted(number + "m")
    if is_quantity(number + unit):
        return _quoted(number + unit)
    scale = next((lowered.removesuffix(end) for end in _BYTE_WORDS if lowered.endswith(end)), "")
    if len(scale) == 2 and scale[1] == "i" and scale[0] in _SCALES:
        return _quoted(number + scale[0].upper() + "i")
    if len(scale) == 1 and scale in _SCALES:
        decimal = "k" if scale == "k" else scale.upper()
        return f"{_quoted(number + decimal)} or {_quoted(number + scale.upper() + 'i')}"
    return None


def _quoted(text: str) -> str:
    return f"'{text}'"


# --- exact text, and reading it back ---------------------------------------------------------

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
        value = float(parse_quantity(raw))
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


# --- short text for people ------------------------------------------------------------------


def short(resource: str, value: float) -> str:
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
    return f"{short(resource, value)} {resource}"
