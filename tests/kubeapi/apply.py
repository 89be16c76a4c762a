"""Server-side apply and `metadata.managedFields` bookkeeping.

Follows structured-merge-diff: an Apply makes the applier own exactly the fields in its
configuration, removes fields it used to own and nobody owns any more, and refuses (409)
to change a field another manager owns unless forced. Any other write records an Update
entry owning the fields it added or changed, taking them away from the other managers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .errors import ApiError
from .fieldsets import (
    SCOPE_STATUS,
    Path,
    changed_paths,
    collect_field,
    decode_fields,
    encode_fields,
    is_atomic_map,
    item_element,
    item_paths,
    list_shape,
    owned_values,
    path_text,
)


@dataclass
class ManagerEntry:
    """One `managedFields` entry: who wrote which fields, how, through which API version."""

    manager: str
    operation: str
    api_version: str
    time: str
    paths: set[Path]
    subresource: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """Identify the entry the way the apiserver does: manager, operation, subresource."""
        return (self.manager, self.operation, self.subresource)

    def without(self, lost: set[Path]) -> ManagerEntry:
        """Return a copy that no longer owns `lost` (its time is kept, as upstream does)."""
        return ManagerEntry(
            self.manager,
            self.operation,
            self.api_version,
            self.time,
            self.paths - lost,
            self.subresource,
        )

    def to_json(self) -> dict[str, Any]:
        """Render the entry as it appears in `metadata.managedFields`."""
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": encode_fields(self.paths),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def normalised_time(value: Any) -> str:
    """Spell a timestamp as the server does (`2025-01-02T03:04:05Z`), whatever the client sent."""
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value or "")
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode_entries(managed_fields: list[dict[str, Any]] | None) -> list[ManagerEntry]:
    """Parse `metadata.managedFields` (entries without a manager are dropped)."""
    entries = []
    for raw in managed_fields or []:
        if not isinstance(raw, dict) or not raw.get("manager"):
            continue
        entries.append(
            ManagerEntry(
                manager=str(raw["manager"]),
                operation=str(raw.get("operation", "Update")),
                api_version=str(raw.get("apiVersion", "")),
                time=normalised_time(raw.get("time")),
                paths=decode_fields(raw.get("fieldsV1") or {}),
                subresource=str(raw.get("subresource", "")),
            )
        )
    return entries


def encode_entries(entries: list[ManagerEntry]) -> list[dict[str, Any]]:
    """Render entries for `metadata.managedFields`, leaving out empty ones."""
    return [entry.to_json() for entry in entries if entry.paths]


@dataclass(frozen=True)
class WriteContext:
    """Who writes, through which API version, into which scope, at what time."""

    manager: str
    api_version: str
    scope: str
    now: str

    @property
    def subresource(self) -> str:
        """Return the subresource recorded in entries ("status" or "")."""
        return "status" if self.scope == SCOPE_STATUS else ""


def _own(
    entries: list[ManagerEntry], operation: str, context: WriteContext, paths: set[Path]
) -> list[ManagerEntry]:
    """Give the writer's entry the path set `paths`, refreshing its time only if it changed."""
    key = (context.manager, operation, context.subresource)
    result = []
    found = False
    for entry in entries:
        if entry.key == key:
            found = True
            if entry.paths != paths or entry.api_version != context.api_version:
                result.append(
                    ManagerEntry(*key[:2], context.api_version, context.now, paths, key[2])
                )
                continue
        result.append(entry)
    if not found:
        result.append(ManagerEntry(*key[:2], context.api_version, context.now, paths, key[2]))
    return [entry for entry in result if entry.paths]


def record_update(
    entries: list[ManagerEntry],
    old: dict[str, Any] | None,
    new: dict[str, Any],
    context: WriteContext,
) -> list[ManagerEntry]:
    """Record a non-apply write: the writer takes every field it added or changed."""
    touched, removed = changed_paths(
        owned_values(old or {}, context.scope), owned_values(new, context.scope)
    )
    key = (context.manager, "Update", context.subresource)
    mine: set[Path] = set()
    others = []
    for entry in entries:
        if entry.key == key:
            mine = set(entry.paths)
            others.append(entry)
        else:
            others.append(entry.without(touched) if entry.paths & touched else entry)
    return _own(others, "Update", context, (mine - removed) | touched)


def apply_configuration(
    live: dict[str, Any],
    config: dict[str, Any],
    entries: list[ManagerEntry],
    context: WriteContext,
    force: bool,
) -> tuple[dict[str, Any], list[ManagerEntry]]:
    """Apply `config` onto `live` for the writer; return the new object and entries.

    Raises a 409 listing every conflicting field when another manager owns a field this
    apply would change.
    """
    config_paths = set(owned_values(config, context.scope))
    key = (context.manager, "Apply", context.subresource)
    previous = next((entry.paths for entry in entries if entry.key == key), set())
    merged = merge_values(live, config, None)
    if previous:
        owned_after = config_paths.union(*(e.paths for e in entries if e.key != key))
        doomed = previous - owned_after
        if doomed:
            merged = prune(merged, (), None, doomed)
    touched, _ = changed_paths(
        owned_values(live, context.scope), owned_values(merged, context.scope)
    )
    conflicts = [(entry, entry.paths & touched) for entry in entries if entry.key != key]
    conflicts = [(entry, paths) for entry, paths in conflicts if paths]
    if conflicts and not force:
        raise conflict_error(conflicts)
    kept = []
    for entry in entries:
        lost = next((paths for other, paths in conflicts if other is entry), set())
        kept.append(entry.without(lost) if lost else entry)
    return merged, _own(kept, "Apply", context, config_paths)


def conflict_error(conflicts: list[tuple[ManagerEntry, set[Path]]]) -> ApiError:
    """Build the 409 Conflict an apply gets when it would change fields others own."""
    causes = []
    for entry, paths in conflicts:
        owner = f'conflict with "{entry.manager}"'
        if entry.operation == "Update":
            owner += f" using {entry.api_version}"
        for path in sorted(paths):
            causes.append(
                {"reason": "FieldManagerConflict", "message": owner, "field": path_text(path)}
            )
    count = len(causes)
    listing = "\n".join(f"- {cause['message']}: {cause['field']}" for cause in causes)
    if count == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        message = f"Apply failed with {count} conflicts:\n{listing}"
    # A real API server's apply conflict names no object in its details: only the causes.
    return ApiError(409, message, reason="Conflict", details={"causes": causes})


def merge_values(live: Any, config: Any, field_name: str | None) -> Any:
    """Merge an apply configuration into a live value (maps deep, keyed lists by key)."""
    if isinstance(config, dict):
        if not isinstance(live, dict) or is_atomic_map(field_name, config):
            return copy.deepcopy(config)
        merged = copy.deepcopy(live)
        for key, value in config.items():
            if value is None:
                merged.pop(key, None)
            elif key in live:
                merged[key] = merge_values(live[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(config, list) and isinstance(live, list) and live:
        return _merge_lists(live, config, field_name)
    return copy.deepcopy(config)


def _merge_lists(live: list[Any], config: list[Any], field_name: str | None) -> list[Any]:
    """Merge keyed or set lists item by item; replace atomic lists."""
    shape = list_shape(field_name, config)
    if shape.style == "atomic" or list_shape(field_name, live) != shape:
        return copy.deepcopy(config)
    if shape.style == "set":
        return copy.deepcopy(live) + [item for item in config if item not in live]
    pending = {item_element(item, shape.keys): item for item in config}
    merged = []
    for item in live:
        element = item_element(item, shape.keys)
        if element in pending:
            merged.append(merge_values(item, pending.pop(element), None))
        else:
            merged.append(copy.deepcopy(item))
    return merged + [copy.deepcopy(item) for item in pending.values()]


def prune(value: Any, path: Path, field_name: str | None, doomed: set[Path]) -> Any:
    """Remove the `doomed` paths from `value`; containers left with nothing are removed too."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, child in value.items():
            child_path = (*path, f"f:{key}")
            found: dict[Path, Any] = {}
            collect_field(key, child, child_path, found)
            hit = doomed.intersection(found)
            if not hit:
                out[key] = child
            elif hit != set(found):
                out[key] = prune(child, child_path, key, doomed)
        return out
    if isinstance(value, list):
        shape = list_shape(field_name, value)
        kept = []
        for item in value:
            item_path = (*path, item_element(item, shape.keys))
            paths = item_paths(item, item_path)
            hit = doomed & paths
            if not hit:
                kept.append(item)
            elif hit != paths and isinstance(item, dict):
                pruned = prune(item, item_path, None, doomed)
                kept.append(
                    {k: pruned.get(k, v) for k, v in item.items() if k in pruned or k in shape.keys}
                )
        return kept
    return value
