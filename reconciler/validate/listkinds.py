"""List kinds: a `kind: List` (or `ConfigMapList`, `RoleList`, any `<Kind>List` of a known API)
in `workloads/` is expanded into its items, as kubectl does.

Each item becomes a document of its own, located at its own line, and is then validated,
placed, rendered, masked (a Secret stays a Secret) and applied like any object. An item of a
typed list (`ConfigMapList`) may leave out `apiVersion` and `kind`: they are the list's
element kind, as in the API server's lists; an item of another kind is an error. A problem
inside an item keeps its file and line, and its pointer gets the item's `/items/N` prefix
back (`relocated`), so it points into the file as written.

Called by `validate` and `validate.files`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reconciler.domain import Document, Origin
from reconciler.errors import Problem
from reconciler.validate import schemacheck

LIST = "List"


@dataclass(frozen=True, slots=True)
class Span:
    """Where one expanded item sits in its file: lines `first`..`last` under `/items/N`."""

    path: str
    first: int
    last: int
    prefix: str


def element_kind(body: Mapping[str, Any]) -> str | None:
    """ "" for a core `v1 List`, the element kind of a known `<Kind>List`, else None."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind.endswith(LIST):
        return None
    if kind == LIST and api_version == "v1":
        return ""
    newest = schemacheck.kubernetes_versions()[-1]
    if kind != LIST and schemacheck.has_kube_schema(newest, api_version, kind):
        return kind.removesuffix(LIST)
    return None


def expand(
    documents: Iterable[Document], problems: list[Problem], spans: list[Span]
) -> list[Document]:
    """The documents with every list replaced by its items (and their spans recorded)."""
    result: list[Document] = []
    for doc in documents:
        body = doc.body
        element = element_kind(body) if isinstance(body, Mapping) else None
        if element is None:
            result.append(doc)
            continue
        items = body.get("items")
        if not isinstance(items, list):
            problems.append(
                _problem(doc.origin, "/items", f"a {body['kind']} needs a list of items")
            )
            continue
        for index, item in enumerate(items):
            result.append(_item(doc, index, item, element, body, problems, spans))
    return result


def _item(
    doc: Document,
    index: int,
    item: Any,
    element: str,
    body: Mapping[str, Any],
    problems: list[Problem],
    spans: list[Span],
) -> Document:
    prefix = f"/items/{index}"
    lines = {
        pointer[len(prefix) :]: line
        for pointer, line in doc.origin.lines.items()
        if pointer == prefix or pointer.startswith(prefix + "/")
    }
    first = lines.get("", doc.origin.line_of(prefix))
    origin = Origin(path=doc.origin.path, line=first, lines=lines)
    spans.append(Span(doc.origin.path, first, max(lines.values(), default=first), prefix))
    if element and isinstance(item, Mapping):
        kind = item.get("kind", element)
        if kind != element:
            problems.append(
                _problem(doc.origin, f"{prefix}/kind", f"a {body['kind']} holds only {element}s")
            )
        item = {"apiVersion": body["apiVersion"], "kind": element, **item}
    return Document(origin=origin, body=item)


def relocated(problems: Sequence[Problem], spans: Sequence[Span]) -> list[Problem]:
    """The problems, those inside an expanded item with its `/items/N` prefix on the pointer."""
    if not spans:
        return list(problems)
    result = []
    for problem in problems:
        span = next(
            (
                s
                for s in spans
                if s.path == problem.path
                and s.first <= problem.line <= s.last
                and not problem.pointer.startswith("/items/")
            ),
            None,
        )
        result.append(
            problem if span is None else replace(problem, pointer=span.prefix + problem.pointer)
        )
    return result


def _problem(origin: Origin, pointer: str, message: str) -> Problem:
    return Problem(path=origin.path, line=origin.line_of(pointer), pointer=pointer, message=message)
