"""Secrets: show a changed rendered file without ever showing a Secret's values, and check a
Secret's `data` as the API server will decode it.

`dro plan` diffs rendered manifests. Every object whose kind is Secret (in any letter case,
with any apiVersion, whatever the file is called, and wherever it sits: alone, one of several
documents, an item of a `List`, a template inside another object) has each value under `data`
and `stringData` replaced by a marker before the diff: the same marker on both sides when the
value did not change, a different one when it did. The names of the keys stay, so a reviewer
sees which keys changed and nothing else; a SOPS-encrypted Secret's `sops` metadata is one
masked value, and its `ENC[...]` strings are masked as any value. An annotation that can carry
a copy of the object (`kubectl.kubernetes.io/last-applied-configuration`) is masked too. A file
that mentions a Secret but cannot be parsed is shown as one opaque line.

`encoding_problems` reports `data` values that are not base64, as the API server would reject
them, without quoting them. This module is pure.

Called by `kube.sealed`, `review.plandiff`, `validate.references` and `web.views`.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler import yamlio

VALUE_FIELDS = ("data", "stringData")
ENCRYPTION = "sops"
"""A SOPS-encrypted Secret's metadata (its data key, encrypted, and its MAC): masked whole."""
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


def is_secret(node: object) -> bool:
    """Whether `node` is a Secret object, by its kind alone (any case, any apiVersion)."""
    return isinstance(node, Mapping) and str(node.get("kind", "")).lower() == "secret"


def redact_pair(path: str, old: bytes | None, new: bytes | None) -> Shown:
    """Both sides of a rendered file (None: absent on that side), Secret values masked."""
    old_docs, new_docs = _documents(path, old), _documents(path, new)
    if old_docs is None and new_docs is None:
        return Shown(before=_text(old), after=_text(new))
    changed: set[str] = set()
    before = _shown(old, old_docs, new_docs, OLD, changed)
    after = _shown(new, new_docs, old_docs, NEW, changed)
    return Shown(before=before, after=after, changed_keys=tuple(sorted(changed)))


def encoding_problems(body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(JSON pointer, message) for each `data` value of a Secret that is not base64 as the
    API server decodes it (standard alphabet, padded; line breaks ignored). The message
    never holds the value."""
    data = body.get("data")
    if not isinstance(data, Mapping):
        return
    for key, value in data.items():
        if isinstance(value, str) and not _is_base64(value):
            pointer = f"/data/{yamlio.escape_pointer_token(str(key))}"
            yield (
                pointer,
                "not valid base64 (the value is not shown); plain text goes in stringData",
            )


def _is_base64(value: str) -> bool:
    text = value.replace("\r", "").replace("\n", "")
    try:
        binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return False
    return True


def _documents(path: str, data: bytes | None) -> list[Any] | None:
    """The parsed documents of a file when any of them holds a Secret (an empty list when
    the file or its name mentions one but it cannot be parsed: shown opaque); None when none
    does."""
    if data is None or (b"secret" not in data.lower() and "secret" not in path.lower()):
        return None
    try:
        bodies = [doc.body for doc in yamlio.parse_documents(path, data)]
    except yamlio.YamlError:
        return []
    return bodies if any(_holds_secret(body) for body in bodies) else None


def _holds_secret(node: object) -> bool:
    if is_secret(node):
        return True
    if isinstance(node, Mapping):
        return any(_holds_secret(value) for value in node.values())
    if isinstance(node, list):
        return any(_holds_secret(item) for item in node)
    return False


def _shown(
    data: bytes | None,
    documents: list[Any] | None,
    others: list[Any] | None,
    marker: str,
    changed: set[str],
) -> str:
    if data is None:
        return ""
    if documents is None:
        return _text(data)
    if not documents:
        return OPAQUE
    masked = []
    for index, document in enumerate(documents):
        other = others[index] if others and index < len(others) else None
        masked.append(yamlio.dump(_mask(document, other, marker, changed, "")))
    return "---\n".join(masked)


def _mask(node: Any, other: Any, marker: str, changed: set[str], where: str) -> Any:
    """`node` with every Secret in it masked; `other` is the same place on the other side."""
    if is_secret(node):
        return _masked_secret(node, other if is_secret(other) else None, marker, changed, where)
    if isinstance(node, Mapping):
        theirs = other if isinstance(other, Mapping) else {}
        return {
            key: _mask(value, theirs.get(key), marker, changed, f"{where}{key}.")
            for key, value in node.items()
        }
    if isinstance(node, list):
        theirs_list = other if isinstance(other, list) else []
        return [
            _mask(
                item,
                theirs_list[i] if i < len(theirs_list) else None,
                marker,
                changed,
                f"{where.removesuffix('.')}[{i}].",
            )
            for i, item in enumerate(node)
        ]
    return node


def _masked_secret(
    document: Mapping[str, Any],
    other: Mapping[str, Any] | None,
    marker: str,
    changed: set[str],
    where: str,
) -> dict[str, Any]:
    result = dict(document)
    for name in VALUE_FIELDS:
        mine, theirs = _values(document, name), _values(other, name)
        changed.update(f"{where}{name}.{key}" for key in theirs.keys() - mine.keys())
        if name not in document:
            continue
        if not isinstance(document[name], Mapping):
            result[name] = UNCHANGED if other and other.get(name) == document[name] else marker
            continue
        masked = {}
        for key, value in mine.items():
            same = key in theirs and theirs[key] == value
            if not same:
                changed.add(f"{where}{name}.{key}")
            masked[key] = UNCHANGED if same else marker
        result[name] = masked
    if ENCRYPTION in document:  # a SOPS-encrypted Secret: its keys and MAC are not shown
        same = other is not None and other.get(ENCRYPTION) == document[ENCRYPTION]
        result[ENCRYPTION] = UNCHANGED if same else marker
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


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")
