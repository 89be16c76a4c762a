"""Placement by city codes: what the schema cannot say about `placement.locations`.

The schema checks each code's shape (three upper-case letters, as Datum's
`topology.datum.net/city-code`) and that no list is empty. Here: a city code listed twice,
within one location or across two, which would make the order of preference ambiguous; and
`locations` on a Karmada policy, where the same placement is written with Karmada's own
`clusterAffinities` (one term per location, a labelSelector on the city-code label). A city
code that no declared cluster carries is a warning (`unknown_cities`): a typo, or a city whose
clusters are not declared yet (a location without clusters is skipped).

Called by `validate` and `validate.files`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reconciler.domain import CITY_CODE_LABEL, DRO_API_VERSION, Cluster, Document
from reconciler.errors import Problem, Severity

POINTER = "/spec/placement/locations"


def problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(pointer, message) for each problem of a placement policy's `locations`."""
    spec = body.get("spec")
    placement = spec.get("placement") if isinstance(spec, Mapping) else None
    raw = placement.get("locations") if isinstance(placement, Mapping) else None
    if raw is None:
        return []
    if body.get("apiVersion") != DRO_API_VERSION:
        return [
            (
                POINTER,
                "placement.locations is dro's (ResourcePlacementPolicy); a Karmada policy "
                "places by city with placement.clusterAffinities, one term per location, "
                f"each with a labelSelector on {CITY_CODE_LABEL}",
            )
        ]
    if not isinstance(raw, list):
        return []  # the schema reports it
    found: list[tuple[str, str]] = []
    first: dict[str, str] = {}
    for index, location in enumerate(raw):
        codes = location.get("cityCodes") if isinstance(location, Mapping) else None
        for position, code in enumerate(codes if isinstance(codes, list) else ()):
            pointer = f"{POINTER}/{index}/cityCodes/{position}"
            if not isinstance(code, str):
                continue
            if code in first:
                found.append(
                    (pointer, f"city code {code} is listed twice (first at {first[code]})")
                )
            else:
                first[code] = pointer
    return found


def unknown_cities(clusters: Iterable[Cluster], documents: Sequence[Document]) -> list[Problem]:
    """A warning for each city code in a policy's `locations` that no cluster carries."""
    known = {c.labels[CITY_CODE_LABEL] for c in clusters if CITY_CODE_LABEL in c.labels}
    hint = ", ".join(sorted(known)) or "none"
    found = []
    for doc in documents:
        placement = (doc.body.get("spec") or {}).get("placement") or {}
        for index, location in enumerate(placement.get("locations") or ()):
            for position, code in enumerate(location.get("cityCodes") or ()):
                if code in known:
                    continue
                pointer = f"{POINTER}/{index}/cityCodes/{position}"
                found.append(
                    Problem(
                        path=doc.origin.path,
                        line=doc.origin.line_of(pointer),
                        pointer=pointer,
                        message=f"no cluster carries city code {code} "
                        f"(the clusters' {CITY_CODE_LABEL} labels: {hint}): "
                        "a typo, or a city with no cluster yet",
                        severity=Severity.WARNING,
                    )
                )
    return found
