"""Secrets: show a changed rendered file without ever showing a Secret's values.

`dro plan` diffs rendered manifests. For a Secret, every value under `data` and `stringData`
is replaced by a marker before the diff: the same marker on both sides when the value did not
change, a different one when it did. The names of the keys stay, so a reviewer sees which
keys changed and nothing else. An annotation that could carry a copy of the object
(`kubectl.kubernetes.io/last-applied-configuration`) is masked too. A Secret that cannot be
parsed is shown as one opaque line. This module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler import yamlio

VALUE_FIELDS = ("data", "stringData")
MASKED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
UNCHANGED = "<redacted>"
OLD = "<redacted: old value>"
NEW = "<redacted: new value>"
OPAQUE = "# a Secret that could not be parsed: its content is not shown\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """The text of both sides of one file, safe to print, and the Secret keys that changed."""

    before: str
    after: str
    changed_keys: tuple[str, ...] = ()


def redact_pair(path: str, old: bytes | None, new: bytes | None) -> Shown:
    """Both sides of a rendered file (None: absent on that side), Secret values masked."""
    old_doc, new_doc = _secret(path, old), _secret(path, new)
    if old_doc is None and new_doc is None:
        return Shown(before=_text(old), after=_text(new))
    changed: set[str] = set()
    masked = []
    for doc, other, marker in ((old_doc, new_doc, OLD), (new_doc, old_doc, NEW)):
        masked.append(_masked(doc, other, marker, changed) if doc is not None else None)
    return Shown(
        before=_dump(old, masked[0]),
        after=_dump(new, masked[1]),
        changed_keys=tuple(sorted(changed)),
    )


def is_secret_file(path: str) -> bool:
    """Whether a rendered path can hold a core Secret (`<namespace>/secret-<name>.yaml`)."""
    return path.rsplit("/", 1)[-1].startswith("secret")


def _secret(path: str, data: bytes | None) -> dict[str, Any] | None:
    """The parsed Secret in `data`, or None when it is absent or not a Secret. A file named
    like a Secret that does not parse comes back as an empty mapping (shown opaque)."""
    if data is None or not is_secret_file(path):
        return None
    try:
        document = yamlio.load_own(path, data)
    except yamlio.YamlError:
        return {}
    if not isinstance(document, Mapping):
        return {}
    if document.get("kind") != "Secret":
        return None
    return dict(document)


def _masked(
    document: dict[str, Any], other: Mapping[str, Any] | None, marker: str, changed: set[str]
) -> dict[str, Any]:
    if not document:
        return {}
    result = dict(document)
    for name in VALUE_FIELDS:
        mine, theirs = _values(document, name), _values(other, name)
        changed.update(f"{name}.{key}" for key in theirs.keys() - mine.keys())
        if name not in document:
            continue
        masked = {}
        for key, value in mine.items():
            same = key in theirs and theirs[key] == value
            if not same:
                changed.add(f"{name}.{key}")
            masked[key] = UNCHANGED if same else marker
        result[name] = masked
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("annotations"), Mapping):
        annotations = {
            k: (UNCHANGED if k in MASKED_ANNOTATIONS else v)
            for k, v in metadata["annotations"].items()
        }
        result["metadata"] = {**metadata, "annotations": annotations}
    return result


def _values(document: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    values = document.get(name) if document is not None else None
    return values if isinstance(values, Mapping) else {}


def _dump(data: bytes | None, masked: dict[str, Any] | None) -> str:
    if data is None:
        return ""
    if masked is None:
        return _text(data)
    return yamlio.dump(masked) if masked else OPAQUE


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")
