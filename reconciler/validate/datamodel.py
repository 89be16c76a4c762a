"""Data model of STCI: `DataSet`s, the `Topology` and data access, from their documents.

Quantities follow Kubernetes' rules (`20Ti`, `500Mi`); a rate is a quantity per unit of time
(`200Gi/d`, `5Mi/s`) and is kept in bytes per day; a bandwidth is bytes per second (`10Gi`).
A workload declares its access in its policy's `placement.data`, or, as a plain manifest, with
the annotation `multicluster.io/data: "clickstream:read:50Gi/d, features:write:1Gi/h"`.
Every error names the file, line and JSON pointer. This module is pure.

Called by `validate`, `validate.files`, `validate.memo` and `validate.policies`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reconciler.domain import Document, Origin
from reconciler.domain.data import (
    DEFAULT_TIERS,
    READ,
    WRITE,
    DataAccess,
    DataSet,
    Link,
    Topology,
)
from reconciler.errors import Problem, show
from reconciler.kube import quantity as quantities

DATA_ANNOTATION = "multicluster.io/data"
SECONDS = {"s": 86_400.0, "m": 1_440.0, "h": 24.0, "d": 1.0}
"""Multipliers from a rate per unit to a rate per day."""


def quantity(value: Any) -> float:
    """A Kubernetes quantity in base units; ValueError when it is not one."""
    try:
        return float(quantities.parse_quantity(value))
    except (ArithmeticError, TypeError, ValueError) as error:
        raise ValueError(f"{value!r} is not a quantity (e.g. 500Mi, 20Ti)") from error


def per_day(value: Any) -> float:
    """A rate in bytes per day: `200Gi/d`, `5Mi/s`; a bare quantity is per day."""
    text = str(value).strip()
    amount, slash, unit = text.rpartition("/")
    if not slash:
        return quantity(text)
    if unit not in SECONDS:
        raise ValueError(f"{text!r}: the unit after / must be s, m, h or d")
    return quantity(amount) * SECONDS[unit]


def data_sets(documents: Mapping[str, Document], problems: list[Problem]) -> dict[str, DataSet]:
    """Every DataSet by name; a bad quantity or two primaries is a problem."""
    result = {}
    for name, doc in sorted(documents.items()):
        spec = doc.body.get("spec") or {}
        primaries = [
            loc["cluster"] for loc in spec.get("locations") or () if loc.get("role") == "primary"
        ]
        replicas = [
            loc["cluster"] for loc in spec.get("locations") or () if loc.get("role") != "primary"
        ]
        if len(primaries) > 1:
            _problem(doc.origin, "/spec/locations", "a DataSet has at most one primary", problems)
        size = _parsed(doc.origin, "/spec/size", spec.get("size", 0), quantity, problems)
        rate = _parsed(doc.origin, "/spec/changeRate", spec.get("changeRate", 0), per_day, problems)
        result[name] = DataSet(
            name=name,
            origin=doc.origin,
            size=size,
            change_rate=rate,
            primary=primaries[0] if primaries else None,
            replicas=tuple(sorted(set(replicas) - set(primaries))),
        )
    return result


def topology(doc: Document | None, problems: list[Problem]) -> Topology:
    """The links between clusters: the tier defaults (dro's where the file leaves a tier
    out) and the measured pairs, both directions."""
    if doc is None:
        return Topology()
    spec = doc.body.get("spec") or {}
    tiers = dict(DEFAULT_TIERS)
    for tier, raw in (spec.get("defaults") or {}).items():
        tiers[tier] = _link(doc.origin, f"/spec/defaults/{tier}", raw, tiers[tier], problems)
    links: dict[tuple[str, str], Link] = {}
    for index, raw in enumerate(spec.get("links") or ()):
        pointer = f"/spec/links/{index}"
        between = (str(raw["from"]), str(raw["to"]))
        fallback = tiers["crossRegion"]
        link = _link(doc.origin, pointer, raw, fallback, problems)
        links[between] = links[between[::-1]] = link
    return Topology(tiers=tiers, links=links)


def accesses(
    raw: Sequence[Mapping[str, Any]], origin: Origin | None, pointer: str, problems: list[Problem]
) -> tuple[DataAccess, ...]:
    """A policy's `placement.data` entries (`origin` None: parse only, report nothing)."""
    found = []
    for index, entry in enumerate(raw):
        where = f"{pointer}/{index}/rate"
        rate = _parsed(origin, where, entry.get("rate", 0), per_day, problems)
        found.append(
            DataAccess(dataset=str(entry["dataSet"]), access=entry.get("access", READ), rate=rate)
        )
    return tuple(found)


def annotated(
    annotations: Mapping[str, str], origin: Origin, problems: list[Problem]
) -> tuple[DataAccess, ...]:
    """The accesses a plain manifest declares in `multicluster.io/data`."""
    text = annotations.get(DATA_ANNOTATION)
    if not text:
        return ()
    pointer = "/metadata/annotations/" + DATA_ANNOTATION.replace("/", "~1")
    found = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, _, rest = item.partition(":")
        access, _, rate = rest.partition(":")
        if not name or access not in (READ, WRITE):
            _problem(origin, pointer, f"{show(item)}: expected DATASET:read|write:RATE", problems)
            continue
        found.append(
            DataAccess(
                dataset=name,
                access=access,
                rate=_parsed(origin, pointer, rate or 0, per_day, problems),
            )
        )
    return tuple(found)


def unknown_data_sets(
    wanted: Iterable[tuple[DataAccess, Origin, str]], known: Mapping[str, DataSet]
) -> list[Problem]:
    """A problem for every access naming a DataSet that is not in `datasets/`."""
    return [
        Problem(
            path=origin.path,
            line=origin.line_of(pointer),
            pointer=pointer,
            message=f"DataSet {access.dataset!r} is not declared in datasets/",
        )
        for access, origin, pointer in wanted
        if access.dataset not in known
    ]


def _link(
    origin: Origin, pointer: str, raw: Mapping[str, Any], fallback: Link, problems: list[Problem]
) -> Link:
    bandwidth = fallback.bandwidth
    if "bandwidth" in raw:
        bandwidth = _parsed(origin, f"{pointer}/bandwidth", raw["bandwidth"], quantity, problems)
    return Link(
        latency_ms=float(raw.get("latencyMs", fallback.latency_ms)),
        bandwidth=bandwidth or fallback.bandwidth,
        cost_per_gib=float(raw.get("costPerGiB", fallback.cost_per_gib)),
    )


def _parsed(
    origin: Origin | None, pointer: str, value: Any, parse: Any, problems: list[Problem]
) -> float:
    try:
        result: float = parse(value)
    except ValueError as error:
        _problem(origin, pointer, str(error), problems)
        return 0.0
    if result < 0:
        _problem(origin, pointer, f"{value!r} is negative", problems)
        return 0.0
    return result


def _problem(origin: Origin | None, pointer: str, message: str, problems: list[Problem]) -> None:
    if origin is None:
        return
    problems.append(
        Problem(path=origin.path, line=origin.line_of(pointer), pointer=pointer, message=message)
    )
