"""`placement.rollout` and dro.yaml's `spec.rollout`: parsed into `Rollout` values, and the
checks the schema cannot make (wave names unique, a wave naming clusters or labels).

Called by `validate` and `validate.policies`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from reconciler.domain import durations
from reconciler.domain.rollout import REST, Rollout, Wave


def parse(raw: Mapping[str, Any] | None) -> Rollout | None:
    """The rollout as written (schema-valid), or None when there is none."""
    if not raw:
        return None
    default = Rollout()
    limit = raw.get("maxClusters")
    text = None if limit is None else str(limit).strip()
    percent = float(text[:-1]) if text is not None and text.endswith("%") else None
    return Rollout(
        waves=tuple(
            Wave(
                name=str(w["name"]),
                clusters=tuple(w.get("clusters") or ()),
                labels=MappingProxyType(dict(w.get("labels") or {})),
                approval=bool(w.get("approval", False)),
            )
            for w in raw.get("waves") or ()
        ),
        max_clusters=int(text) if text is not None and percent is None else None,
        max_percent=percent,
        soak=_seconds(raw.get("soak"), default.soak),
        health_timeout=_seconds(raw.get("healthTimeout"), default.health_timeout),
        on_failure=raw.get("onFailure", default.on_failure),
    )


def problems(raw: Mapping[str, Any] | None, pointer: str) -> list[tuple[str, str]]:
    """(JSON pointer, message) for each rollout setting the schema lets through but that
    cannot work."""
    if not raw:
        return []
    found: list[tuple[str, str]] = []
    waves = raw.get("waves") or ()
    if waves and raw.get("maxClusters") is not None:
        found.append((f"{pointer}/maxClusters", "rollout takes waves or maxClusters, not both"))
    if not waves and raw.get("maxClusters") is None:
        found.append((pointer, "rollout needs waves or maxClusters"))
    seen: set[str] = set()
    for index, wave in enumerate(waves):
        if not isinstance(wave, Mapping):
            continue
        name = str(wave.get("name"))
        if name in seen:
            found.append((f"{pointer}/waves/{index}/name", f"wave {name!r} is named twice"))
        if name == REST:
            found.append(
                (
                    f"{pointer}/waves/{index}/name",
                    f"wave name {REST!r} is reserved for the clusters no wave takes",
                )
            )
        seen.add(name)
        if not wave.get("clusters") and not wave.get("labels"):
            found.append((f"{pointer}/waves/{index}", f"wave {name!r} names no clusters or labels"))
    limit = raw.get("maxClusters")
    if limit is not None and str(limit).strip() in ("0", "0%"):
        found.append((f"{pointer}/maxClusters", "maxClusters must be at least 1 (or 1%)"))
    for key in ("soak", "healthTimeout"):
        text = raw.get(key)
        if isinstance(text, str):
            try:
                durations.seconds(text)
            except ValueError as error:
                found.append((f"{pointer}/{key}", str(error)))
    return found


def _seconds(text: Any, default: float) -> float:
    if not isinstance(text, str):
        return default
    try:
        return durations.seconds(text)
    except ValueError:  # reported by `problems`
        return default
