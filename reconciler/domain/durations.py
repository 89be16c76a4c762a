"""Durations (`10m`, `1h30m`, `500ms`, `7d`) and RFC 3339 times, as dro.yaml and decisions
write them.

Called by 26 modules, among them `branch.statefiles`, `cli.audit`, `live`, `pipeline.clusters`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def seconds(text: str) -> float:
    """`1h30m` → 5400.0. Raises ValueError on anything else (the schema checks it first)."""
    parts = _PART.findall(text)
    if not parts or "".join(a + u for a, u in parts) != text:
        raise ValueError(f"not a duration: {text!r} (expected e.g. 30s, 10m, 1h30m)")
    return sum(float(amount) * _UNIT[unit] for amount, unit in parts)


def rfc3339(epoch: float) -> str:
    """Seconds since the epoch as `2026-11-23T10:00:00Z` (whole seconds, UTC)."""
    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text: str) -> float:
    """An RFC 3339 time as seconds since the epoch. Raises ValueError if it is not one."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"time {text!r} has no offset (add Z or +hh:mm)")
    return parsed.timestamp()


def short(value: float) -> str:
    """A duration as the largest whole unit that divides it: `5m`, `90s`, `2h`."""
    whole = int(value)
    for unit, size in (("h", 3600), ("m", 60)):
        if whole and whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"
