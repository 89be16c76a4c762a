"""`placement.rollout` and dro.yaml's `spec.rollout`: parsed into `Rollout` values, and the
checks the schema cannot make (wave names unique, a wave naming clusters or labels).

Called by `validate`, `validate.files` and `validate.policies`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from reconciler.domain import Document, PlacementPolicy, ResourceKey, Workload, durations
from reconciler.domain.rollout import PROMOTE_ANNOTATION, REST, Rollout, Wave
from reconciler.errors import Problem


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


def promote_problems(
    objects: Sequence[Workload],
    claimed_by: Mapping[ResourceKey, PlacementPolicy | None],
    default: Rollout | None,
) -> list[Problem]:
    """A `multicluster.io/rollout-promote` annotation that names no approval wave of the
    workload's rollout: it would approve nothing, and the wave would wait for ever."""
    pointer = "/metadata/annotations/" + PROMOTE_ANNOTATION.replace("/", "~1")
    found = []
    for workload in objects:
        notes = (workload.manifest.get("metadata") or {}).get("annotations") or {}
        value = notes.get(PROMOTE_ANNOTATION)
        if value is None:
            continue
        policy = claimed_by.get(workload.key)
        rollout = policy.placement.rollout if policy is not None else None
        rollout = rollout or default
        gates = [w.name for w in rollout.waves if w.approval] if rollout is not None else []
        if str(value).split("@", 1)[0] in gates:
            continue
        said = (
            f"approval waves: {', '.join(gates)}"
            if gates
            else "its rollout has no wave with approval: true"
        )
        found.append(
            Problem(
                path=workload.origin.path,
                line=workload.origin.line_of(pointer),
                pointer=pointer,
                message=f"{value!r} names no approval wave of "
                f"{workload.key.brief}'s rollout ({said})",
            )
        )
    return found


def unknown_clusters(documents: Sequence[tuple[Document, str]], known: set[str]) -> list[Problem]:
    """A wave naming a cluster that clusters/ does not declare: it would never take it.
    `documents` are (document, JSON pointer of its rollout)."""
    found = []
    hint = ", ".join(sorted(known)[:8]) or "none declared"
    for doc, pointer in documents:
        raw: Any = doc.body
        for part in pointer.strip("/").split("/"):
            raw = raw.get(part) if isinstance(raw, Mapping) else None
        waves = raw.get("waves") if isinstance(raw, Mapping) else None
        for index, wave in enumerate(waves if isinstance(waves, list) else ()):
            names = wave.get("clusters") if isinstance(wave, Mapping) else None
            for place, name in enumerate(names if isinstance(names, list) else ()):
                if name in known:
                    continue
                at = f"{pointer}/waves/{index}/clusters/{place}"
                found.append(
                    Problem(
                        path=doc.origin.path,
                        line=doc.origin.line_of(at),
                        pointer=at,
                        message=f"unknown cluster {name!r} (clusters/ declares: {hint})",
                    )
                )
    return found
