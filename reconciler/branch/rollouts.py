"""A decision's `status.rollout`, written and read back.

Called by `branch.summary` and `cli`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.domain import rollout as r


def document(status: r.RolloutStatus) -> dict[str, Any]:
    """`status.rollout` as written: the revisions from → to, the wave and each cluster."""
    out: dict[str, Any] = {"revision": status.revision, "commit": status.commit}
    out["phase"] = status.phase
    if not status.in_progress:
        return out
    out["from"] = {"revision": status.previous, "commit": status.previous_commit}
    out["wave"] = status.wave
    out["waves"] = list(status.wave_names)
    out["startedAt"] = status.started_at
    if status.wave_started_at is not None:
        out["waveStartedAt"] = status.wave_started_at
    if status.message is not None:
        out["message"] = status.message
    if status.promote_at_start is not None:
        out["promoteAtStart"] = status.promote_at_start
    out["clusters"] = [_cluster(c) for c in status.clusters]
    return out


def _cluster(entry: r.ClusterRollout) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": entry.cluster,
        "wave": entry.wave,
        "state": entry.state,
        "revision": entry.revision,
        "commit": entry.commit,
    }
    if entry.from_revision != entry.revision or entry.from_commit != entry.commit:
        out["from"] = {"revision": entry.from_revision, "commit": entry.from_commit}
    if entry.healthy_since is not None:
        out["healthySince"] = entry.healthy_since
    return out


def read(raw: Mapping[str, Any] | None) -> r.RolloutStatus | None:
    """What `document` wrote; None when there is none. Raises KeyError, TypeError or
    ValueError on another shape."""
    if raw is None:
        return None
    phase = str(raw.get("phase") or r.COMPLETE)
    if phase not in r.PHASES:
        raise ValueError(f"unknown rollout phase {phase!r}")
    status = r.RolloutStatus(revision=str(raw["revision"]), commit=str(raw["commit"]))
    if phase == r.COMPLETE:
        return status
    came = raw.get("from") or {}
    names = tuple(str(n) for n in raw.get("waves") or ())
    return r.RolloutStatus(
        revision=status.revision,
        commit=status.commit,
        phase=phase,
        previous=_text(came.get("revision")),
        previous_commit=_text(came.get("commit")),
        wave=int(raw["wave"]),
        waves=len(names),
        wave_names=names,
        started_at=_text(raw.get("startedAt")),
        wave_started_at=_text(raw.get("waveStartedAt")),
        message=_text(raw.get("message")),
        promote_at_start=_text(raw.get("promoteAtStart")),
        clusters=tuple(_read_cluster(c) for c in raw.get("clusters") or ()),
    )


def _read_cluster(raw: Mapping[str, Any]) -> r.ClusterRollout:
    came = raw.get("from") or {}
    revision, commit = str(raw["revision"]), str(raw["commit"])
    return r.ClusterRollout(
        cluster=str(raw["name"]),
        wave=int(raw["wave"]),
        state=str(raw["state"]),
        revision=revision,
        commit=commit,
        from_revision=str(came.get("revision", revision)),
        from_commit=str(came.get("commit", commit)),
        healthy_since=_text(raw.get("healthySince")),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
