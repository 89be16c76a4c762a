"""Kubernetes' quantity grammar, and what a user most likely meant by a value it rejects.

The grammar is apimachinery's `resource.ParseQuantity`: a signed decimal number, then either a
binary suffix (`Ki` … `Ei`), a decimal one (`n u m "" k M G T P E`) or an exponent (`e3`,
`E-2`). So `500m`, `1e3`, `.5Gi`, `+1`, `1.` and `1E` (an exa) are quantities, and `256MB`,
`2cores`, `1K`, `1 Gi` and `1e3Mi` are not: the API server refuses them, and dro's own
arithmetic (`kube.parse_quantity`) is only ever given what this grammar accepts.
"""

from __future__ import annotations

import math
import re

from reconciler.kube import client as kube

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
        kube.parse_quantity(value)
    except kube.QuantityOutOfRange:
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
