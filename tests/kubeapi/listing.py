"""LIST and DELETE-collection: selectors, pagination and the `<Kind>List` document."""

from __future__ import annotations

import base64
import json
from typing import Any

from .errors import bad_request
from .resources import ResourceType
from .selectors import field_selector, label_selector
from .store import Store
from .targets import Outcome, Target, WriteOptions


def list_document(
    rtype: ResourceType, revision: str, items: list[dict[str, Any]]
) -> dict[str, Any]:
    """Build a `<Kind>List` document (each item keeps its apiVersion and kind)."""
    return {
        "kind": f"{rtype.kind}List",
        "apiVersion": rtype.api_version,
        "metadata": {"resourceVersion": revision},
        "items": items,
    }


def selected(store: Store, target: Target, query: dict[str, str]) -> list[dict[str, Any]]:
    """Return the objects a list request selects, in storage order."""
    rtype = target.rtype
    items = store.list(rtype, target.namespace or None)
    if query.get("labelSelector"):
        matches_labels = label_selector(query["labelSelector"])
        items = [item for item in items if matches_labels(item)]
    if query.get("fieldSelector"):
        matches_fields = field_selector(query["fieldSelector"], rtype.kind)
        items = [item for item in items if matches_fields(item)]
    return items


def list_objects(store: Store, target: Target, query: dict[str, str]) -> Outcome:
    """LIST: one namespace (or all), filtered by selectors, paginated by limit/continue."""
    with store.lock:
        items = selected(store, target, query)
        revision = store.revision
    offset = 0
    if query.get("continue"):
        try:
            offset = int(json.loads(base64.urlsafe_b64decode(query["continue"]))["offset"])
        except (ValueError, KeyError, TypeError):
            raise bad_request("invalid continue token") from None
    document = list_document(target.rtype, revision, items[offset:])
    limit = int(query.get("limit") or 0)
    if limit > 0 and len(items) - offset > limit:
        document["items"] = items[offset : offset + limit]
        token = json.dumps({"offset": offset + limit}).encode()
        document["metadata"]["continue"] = base64.urlsafe_b64encode(token).decode()
        document["metadata"]["remainingItemCount"] = len(items) - offset - limit
    return Outcome(200, document)


def delete_collection(
    store: Store, target: Target, query: dict[str, str], options: WriteOptions
) -> Outcome:
    """DELETE on a collection: remove every selected object; answer with the list removed."""
    with store.lock:
        items = selected(store, target, query)
        if not options.dry_run:
            for item in items:
                meta = item["metadata"]
                store.remove(target.rtype, meta.get("namespace", ""), meta["name"])
        revision = store.revision
    return Outcome(
        200,
        list_document(target.rtype, revision, items),
        changed=bool(items) and not options.dry_run,
    )
