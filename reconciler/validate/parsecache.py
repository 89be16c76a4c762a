"""What each source file parses to, by its path and a digest of its bytes, kept between passes.

Parsing is the part of validation that depends on one file alone: its YAML documents, with the
line of every node, or the `FILE:LINE: POINTER: MESSAGE` problem that makes it unreadable.
`ParseCache` keeps that as JSON, by the file's path and the sha256 of its bytes (a plain
directory has no blob ids, and a sha256 is the same whether the bytes came from git or from a
folder), in memory across the passes of `dro run` and in the state directory for the next
`dro reconcile --once` (`load.cachefile`). Every pass builds fresh values from the JSON, so
nothing a pass does to a parsed document can leak into the next one; every check after the
parse (the schemas, references, selectors, claims) runs on every pass, so a cached file gives
exactly the problems a fresh parse gives. A file holding a Secret is never kept: its values
would otherwise sit in plain JSON in the state directory.

Called by `pipeline.warm`, `validate` and `validate.memo`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from reconciler import yamlio
from reconciler.domain import Document, Origin
from reconciler.errors import Problem, Severity


class ParseCache:
    """Source file (path, sha256) → its documents or its problem, as JSON text.

    Entries not asked for since `begin` are dropped by `exported`: the cache holds the
    files of the last pass, not every version ever parsed."""

    def __init__(self) -> None:
        self._parsed: dict[str, str] = {}
        self._used: set[str] = set()
        self._changed = False

    def begin(self) -> None:
        """A new pass: what it does not parse is dropped when the cache is written."""
        self._used = set()
        self._changed = False

    @property
    def changed(self) -> bool:
        """True when this pass parsed a file the cache did not know, or left one unused."""
        return self._changed or len(self._used) != len(self._parsed)

    def documents(self, path: str, data: bytes) -> list[Document]:
        """`yamlio.parse_documents(path, data)`, from the cache when these bytes were parsed
        at this path before; raises the same `YamlError` for a file that does not parse."""
        key = key_of(path, data)
        self._used.add(key)
        text = self._parsed.get(key)
        if text is not None:
            try:
                return _documents(path, json.loads(text))
            except (KeyError, TypeError, ValueError):
                pass  # an entry not as `_entry` writes it (a file cache): parse the file
        try:
            found = yamlio.parse_documents(path, data)
        except yamlio.YamlError as error:
            self._keep(key, {"problem": _problem_entry(error.problem)})
            raise
        if any(holds_secret(doc.body) for doc in found):
            self._used.discard(key)  # not kept, so not counted as a change either
        else:
            self._keep(key, {"documents": [_document_entry(doc) for doc in found]})
        return found

    def touch(self, key: str) -> None:
        """Count an entry (`key_of`) as used by this pass, as `documents` would, without
        reading it: its file's bytes are known unchanged (`validate.memo`)."""
        if key in self._parsed:
            self._used.add(key)

    def _keep(self, key: str, entry: dict[str, Any]) -> None:
        try:
            self._parsed[key] = json.dumps(entry, separators=(",", ":"))
        except (TypeError, ValueError):  # a value JSON cannot hold: parsed on every pass
            self._parsed.pop(key, None)
            self._used.discard(key)
            return
        self._changed = True

    def exported(self) -> dict[str, Any]:
        """The entries this pass used, as JSON values (`load.cachefile`); the others are
        dropped from memory too."""
        self.prune()
        self._changed = False
        return dict(sorted(self._parsed.items()))

    def prune(self) -> None:
        """Drop the entries this pass did not use (the files of older passes)."""
        self._parsed = {key: text for key, text in self._parsed.items() if key in self._used}

    def adopt(self, entries: dict[str, Any]) -> None:
        """Take a file cache's entries (`exported`) that memory does not hold."""
        for key, text in entries.items():
            if isinstance(text, str):
                self._parsed.setdefault(key, text)


def key_of(path: str, data: bytes) -> str:
    """The cache's key for a file's bytes at a path."""
    return f"{hashlib.sha256(data).hexdigest()}/{path}"


def holds_secret(body: Any) -> bool:
    """Whether a document is a Secret, or a List holding one: its file is parsed on every
    pass and never kept, in memory or in the state directory, so that a Secret's values live
    nowhere dro did not find them (the source and its git cache)."""
    if not isinstance(body, dict):
        return False
    if body.get("kind") == "Secret":
        return True
    items = body.get("items")
    return isinstance(items, list) and any(holds_secret(item) for item in items)


def _document_entry(doc: Document) -> list[Any]:
    return [doc.origin.line, dict(doc.origin.lines), doc.body]


def _problem_entry(problem: Problem) -> list[Any]:
    return [problem.line, problem.pointer, problem.message, problem.severity.value]


def _documents(path: str, entry: dict[str, Any]) -> list[Document]:
    """The documents (or the raised problem) an entry holds; KeyError, TypeError or
    ValueError for an entry of another shape."""
    if "problem" in entry:
        line, pointer, message, severity = entry["problem"]
        problem = Problem(
            path=path,
            line=_int(line),
            pointer=str(pointer),
            message=str(message),
            severity=Severity(severity),
        )
        raise yamlio.YamlError(problem)
    found = []
    for line, lines, body in entry["documents"]:
        if not isinstance(lines, dict):
            raise TypeError("lines")
        origin = Origin(path=path, line=_int(line), lines=lines)
        found.append(Document(origin=origin, body=body))
    return found


def _int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError("not a line number")
    return value
