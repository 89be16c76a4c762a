"""The conversions of the operator's settings (`settings.Setting.convert`): each turns what a
flag, an environment variable or `dro run`'s config file says into the setting's value, or
raises ValueError (a guard: its own errors) for the setting to word.

Called by `settings`.
"""

from __future__ import annotations

from pathlib import Path

from reconciler.domain import Origin, durations
from reconciler.validate.guard import Guard, ceiling_from, load_ceiling


def parse_bool(text: str) -> bool:
    """`true|false` (also `1|0`, `yes|no`, `on|off`, any case), as flags and env vars say it."""
    lowered = str(text).strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not true or false")


def seconds(text: object) -> float:
    """A duration as a user writes it (`60s`, `5m`) in seconds."""
    return durations.seconds(str(text))


def path(text: object) -> Path:
    """A file or directory name."""
    return Path(str(text))


def optional_path(text: object) -> Path | None:
    """A file name, or None when empty."""
    return Path(str(text)) if str(text) else None


def text(value: object) -> str:
    """Text as given."""
    return str(value)


def whole(value: object) -> int:
    """A whole number."""
    return int(str(value))


def fraction(value: object) -> float:
    """A number, possibly with a fraction."""
    return float(str(value))


WRITE_MODES = ("direct", "branch")


def write_mode(value: object) -> str:
    """`direct` or `branch`: where the REST API pushes its commits."""
    text = str(value).strip().lower()
    if text not in WRITE_MODES:
        raise ValueError(f"{value!r} is not direct or branch")
    return text


SHARD_MODES = ("auto", "off")


def shards_mode(value: object) -> str:
    """`auto` or `off`: whether the replicas of `dro run` share the clusters."""
    text = str(value).strip().lower()
    if text not in SHARD_MODES:
        raise ValueError(f"{value!r} is not auto or off")
    return text


def names(value: object) -> tuple[str, ...]:
    """A list of names, as a flag gives it (`RS256,ES256`) or a config file's list."""
    items = value if isinstance(value, list | tuple) else str(value).replace(",", " ").split()
    found = tuple(str(item).strip() for item in items if str(item).strip())
    if not found:
        raise ValueError("expected at least one name")
    return found


def guard(raw: object) -> Guard:
    """`--guard FILE`, or `guard:` in the config file: a file name or the guard itself. A bad
    guard raises `ValidationFailed` with its line, or `UsageError`."""
    if isinstance(raw, dict):
        return ceiling_from(raw, origin=Origin(path="guard in the config file", line=1))
    return load_ceiling(Path(str(raw)))
