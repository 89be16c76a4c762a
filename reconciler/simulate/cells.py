"""The checks of one cell of a trace's series, and the problems they make.

A cell is one CSV field or one name in a Prometheus export: a step, a cluster, a resource, a
workload, a replica count or an amount. Each check returns the problem's message, or None when
the text is good. Amounts are Kubernetes quantities or plain numbers in base units: plain
numbers and binary suffixes (`512Mi`) are read by float(), which gives the same correctly
rounded value as Kubernetes' Decimal; the rest by `kube.quantity`.

Called by `simulate.csvtable`, `simulate.prometheus` and `simulate.series`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from reconciler.domain import Origin
from reconciler.errors import Problem, ValidationFailed
from reconciler.kube import quantity

MAX_PROBLEMS = 20
"""Problems reported per file; a file wrong on every row says so once, with a count."""

_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?\Z")
_RESOURCE = re.compile(r"[a-zA-Z0-9./_-]+\Z")
_WORKLOAD = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?/[A-Za-z][A-Za-z0-9]*(\.[a-z0-9.-]+)?/"
    r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?\Z"
)
_WHOLE = re.compile(r"[0-9]+\Z")
_NUMBER = re.compile(r"\+?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_BINARY = re.compile(r"(\+?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei)\Z")
_NOT_PLAIN = re.compile(r"[^0-9.eE+-]")
_FACTOR = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}


def step(text: str) -> int:
    """A step: a whole number >= 0. ValueError (its message the problem) otherwise."""
    if not _WHOLE.match(text):
        raise ValueError(f"step {quantity.shown(text)} is not a whole number >= 0")
    return int(text)


def cluster(text: str) -> str:
    """A cluster name (lowercase DNS-1123, as `Cluster` files have). ValueError otherwise."""
    if not _NAME.match(text) or len(text) > 253:
        raise ValueError(f"{quantity.shown(text)} is not a cluster name (lowercase DNS-1123)")
    return text


def resource(text: str) -> str:
    """A resource name (`cpu`, `memory`, `nvidia.com/gpu`). ValueError otherwise."""
    if not _RESOURCE.match(text):
        raise ValueError(f"{quantity.shown(text)} is not a resource name (cpu, memory …)")
    return text


def workload(text: str) -> str:
    """A workload key, `namespace/Kind/name` (`shop/Deployment/web`). ValueError otherwise."""
    if not _WORKLOAD.match(text):
        raise ValueError(
            f"{quantity.shown(text)} is not a workload: namespace/Kind/name (shop/Deployment/web)"
        )
    return text


def replicas(text: str) -> int:
    """A replica count: a whole number >= 0 of at most 9 digits. ValueError otherwise."""
    if not _WHOLE.match(text) or len(text) > 9:
        raise ValueError(f"replicas {quantity.shown(text)} is not a whole number >= 0")
    return int(text)


def amount(text: str) -> float:
    """A quantity or plain number in base units, finite and >= 0. Plain numbers and binary
    suffixes are read by float() (the same correctly rounded value Kubernetes' Decimal gives);
    the rest by `quantity.amount`. ValueError (its message the problem) otherwise."""
    if _NUMBER.match(text):
        value = float(text)
    elif binary := _BINARY.match(text):
        value = float(binary[1]) * _FACTOR[binary[2]]
    else:
        found = quantity.problem(text)
        if found is not None:
            raise ValueError(found)
        return quantity.amount(text)
    if not math.isfinite(value) or value >= 1e300:
        raise ValueError(f"{quantity.shown(text)} is out of range")
    return value


ReadAll = Callable[[list[str]], tuple[list[Any], dict[int, str]]]
"""Reads many texts at once: (their values, 0 where bad; index → problem of the bad ones)."""


def each(read: Callable[[str], Any]) -> ReadAll:
    """`read`, one text at a time, as a `ReadAll`."""

    def read_all(texts: list[str]) -> tuple[list[Any], dict[int, str]]:
        values: list[Any] = []
        messages: dict[int, str] = {}
        for i, text in enumerate(texts):
            try:
                values.append(read(text))
            except ValueError as error:
                values.append(0)
                messages[i] = str(error)
        return values, messages

    return read_all


def amounts(texts: list[str]) -> tuple[list[Any], dict[int, str]]:
    """`amount` of many texts at once. When every text is a plain number or one with a binary
    suffix (the usual series), float() reads them in one pass over the list; otherwise, or
    for the texts that are out of range, each goes through `amount`."""
    suffixes = [text[-2:] if text[-2:] in _FACTOR else "" for text in texts]
    heads = [t[:-2] if s else t for t, s in zip(texts, suffixes, strict=True)]
    joined = "".join(heads)
    exponent_and_suffix = any(
        s and ("e" in h or "E" in h) for h, s in zip(heads, suffixes, strict=True)
    )
    if _NOT_PLAIN.search(joined) or exponent_and_suffix:
        return each(amount)(texts)
    try:
        numbers = np.array(list(map(float, heads)), dtype=np.float64)
    except ValueError:  # `1E` (an exa), `.`, `e5`: the grammar decides, one text at a time
        return each(amount)(texts)
    values = numbers * np.array([_FACTOR.get(s, 1.0) for s in suffixes])
    wrong = np.flatnonzero(~np.isfinite(values) | (values < 0) | (values >= 1e300))
    messages = {int(i): problem(amount, texts[i]) or "" for i in wrong.tolist()}
    result: list[Any] = values.tolist()
    return result, messages


def problem(read: Callable[[str], object], text: str) -> str | None:
    """Why `read` refuses `text`, or None."""
    try:
        read(text)
    except ValueError as error:
        return str(error)
    return None


def trace_file(raw: object, base: Path, where: Origin, pointer: str) -> Path:
    """The file a trace names (relative to the trace), which must be readable."""
    if not isinstance(raw, str) or not raw:
        message = "must be a file name, relative to the trace"
        raise ValidationFailed([at_trace(where, pointer, message)])
    path = base / raw
    readable(path, where, pointer)
    return path


def readable(path: Path, where: Origin, pointer: str) -> None:
    """Raise a problem at the trace's `pointer` unless `path` is a file."""
    if not path.is_file():
        raise ValidationFailed([at_trace(where, pointer, f"no such file: {path}")])


def at_trace(where: Origin, pointer: str, message: str) -> Problem:
    """A problem with the trace document itself, at the line of `pointer`."""
    return Problem(path=where.path, line=where.line_of(pointer), pointer=pointer, message=message)


def either(names: Iterable[str]) -> str:
    """`a, b or c`."""
    ordered = sorted(names)
    return ", ".join(ordered[:-1]) + " or " + ordered[-1] if len(ordered) > 1 else ordered[0]


def capped(problems: list[Problem], more: int = 0) -> list[Problem]:
    """The first `MAX_PROBLEMS` problems by line, and one more that counts the rest (`more`
    problems that were not even kept)."""
    ordered = sorted(problems, key=lambda p: p.sort_key)
    if len(ordered) <= MAX_PROBLEMS and not more:
        return ordered
    rest = ordered[min(MAX_PROBLEMS, len(ordered) - 1)]
    count = len(ordered) - MAX_PROBLEMS + more
    summary = Problem(path=rest.path, line=rest.line, message=f"… and {count} more problems")
    return [*ordered[:MAX_PROBLEMS], summary]
