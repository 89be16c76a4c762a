"""A response's body as the server sent it, digested at once and parsed only when asked for.

Called by `kube.client` and `kube.watchcache`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

_ITEMS = b'"items":'


class Body:
    """A response's body as the server sent it: its `digest` at once, its JSON only when
    first asked for (`document`, `items`). Equal digests mean equal JSON, so a caller that
    kept what it derived from a body under its digest need not parse the same body again
    (a steady cluster's LISTs, pass after pass).

    A LIST's digest covers only its items (the bytes from its `"items":` key on, when no
    array comes before it: the list's own `metadata` comes first, as real servers and the
    emulator write it): a real server's list carries the store's latest resourceVersion,
    which moves with any write anywhere in the cluster. A body in another shape is digested
    whole, which only makes equal digests rarer."""

    __slots__ = ("_body", "_document", "digest")

    def __init__(self, body: bytes, *, listed: bool = False) -> None:
        self._body = body
        self._document: dict[str, Any] | None = None
        part = body
        if listed:
            head, found, rest = body.partition(_ITEMS)
            if found and b"[" not in head:
                part = rest
        self.digest = hashlib.blake2b(part, digest_size=20).digest()

    @classmethod
    def kept(cls, items: list[dict[str, Any]], digest: bytes) -> Body:
        """A list answered from memory (`watchcache`): its items and a digest of its own."""
        body = cls.__new__(cls)
        body._body = b""
        body._document = {"items": items}
        body.digest = digest
        return body

    @property
    def document(self) -> dict[str, Any]:
        """The body's JSON object (parsed once; a caller copies what it changes)."""
        if self._document is None:
            parsed = json.loads(self._body)
            self._document = parsed if isinstance(parsed, dict) else {}
        return self._document

    @property
    def items(self) -> list[dict[str, Any]]:
        """A LIST's items (parsed once; a caller copies what it changes)."""
        items = self.document.get("items")
        return items if isinstance(items, list) else []
