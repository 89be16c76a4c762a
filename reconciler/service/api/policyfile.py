"""The policies under `policies/` at one commit, and the text edits a write makes to them.

`index` finds every policy the API serves (dro's own kinds, `multicluster.io/v1alpha1`) in any
file under `policies/`, multi-document files included; identity is kind + `metadata.name`. A
file that does not parse is skipped here (the validator reports it on the next write).

The edits change one document's text and keep every other byte of its file: `replaced` puts a
new document where the old one was, `removed` cuts one document with its `---` line (None when
it was the file's only one, so the file goes). New files are `policies/<name>.yaml`, or
`policies/<kind>-<name>.yaml` when that is taken. This module is pure.

Called by `service.api.snapshot` and `service.api.store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler import load, yamlio
from reconciler.domain import DRO_API_VERSION
from reconciler.service.api import model
from reconciler.yamlio import spans as yamlspans

FOLDER = "policies/"
RESOURCES = {kind: resource for resource, kind in model.KINDS.items()}
"""Each served kind → its API resource."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Located:
    """One served policy document: where it is in its file, and its body."""

    resource: str
    name: str
    path: str
    number: int
    """Its place among the non-empty documents of its file (0 for the first)."""
    document: Mapping[str, Any]


def served(path: str, data: bytes) -> list[Located]:
    """The policies the API serves in one file (none when it does not parse)."""
    if not load.is_source_path(path) or not path.startswith(FOLDER):
        return []
    try:
        documents = yamlio.parse_documents(path, data)
    except yamlio.YamlError:
        return []
    found = []
    for number, document in enumerate(documents):
        body = document.body
        if not isinstance(body, Mapping) or body.get("apiVersion") != DRO_API_VERSION:
            continue
        resource = RESOURCES.get(str(body.get("kind")))
        metadata = body.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        if resource is not None and isinstance(name, str) and name:
            found.append(
                Located(resource=resource, name=name, path=path, number=number, document=body)
            )
    return found


def document_text(document: Mapping[str, Any]) -> str:
    """A document as the API writes it: block style, sorted keys (`yamlio.dump`)."""
    return yamlio.dump(dict(document))


def _spans(data: bytes) -> tuple[str, list[yamlspans.Span]]:
    text = data.decode("utf-8")
    return text, yamlspans.spans(text)


def replaced(data: bytes, number: int, document: Mapping[str, Any]) -> bytes:
    """The file with its `number`th document replaced by `document`, all else unchanged."""
    text, found = _spans(data)
    span = found[number]
    new = document_text(document).rstrip("\n")
    if span.body and text[span.body - 1] not in "\r\n":
        new = "\n" + new  # the old root began on the `---` line: the new block goes below it
    return (text[: span.body] + new + text[span.end :]).encode("utf-8")


def removed(data: bytes, number: int) -> bytes | None:
    """The file without its `number`th document (and that document's `---` line); None when
    no document would be left."""
    text, found = _spans(data)
    if len(found) <= 1:
        return None
    start = found[number].head
    stop = found[number + 1].head if number + 1 < len(found) else len(text)
    return (text[:start] + text[stop:]).encode("utf-8")


def new_path(taken: Iterable[str], kind: str, name: str) -> str:
    """`policies/<name>.yaml`, else `policies/<kind>-<name>.yaml`, else a numbered one."""
    existing = {path.lower() for path in taken}
    candidates = [f"{FOLDER}{name}.yaml", f"{FOLDER}{kind.lower()}-{name}.yaml"]
    number = 2
    while all(candidate.lower() in existing for candidate in candidates):
        candidates.append(f"{FOLDER}{kind.lower()}-{name}-{number}.yaml")
        number += 1
    return next(c for c in candidates if c.lower() not in existing)
