"""Request semantics of each verb: get, list, create, replace, patch, apply and delete."""

from __future__ import annotations

import copy
import random
import uuid
from typing import Any

from . import patches
from .apply import (
    ManagerEntry,
    WriteContext,
    apply_configuration,
    decode_entries,
    encode_entries,
    record_update,
)
from .errors import ApiError, already_exists, bad_request, invalid, not_found, stale_conflict
from .fieldsets import SCOPE_ALL, SCOPE_MAIN, SCOPE_STATUS
from .resources import ResourceType
from .store import Store, metadata_of, now_timestamp, spec_changed, without_server_fields
from .targets import Outcome, Target, WriteOptions, parse_body, write_scope
from .validation import validate

STATUS_ON_CREATE: dict[str, dict[str, Any]] = {
    "Pod": {"phase": "Pending"},
    "Namespace": {"phase": "Active"},
    "PersistentVolumeClaim": {"phase": "Pending"},
}
KINDS_KEEPING_STATUS_ON_CREATE = frozenset({"Node"})
KINDS_RETURNED_ON_DELETE = frozenset({"Pod", "Namespace"})
SERVER_OWNED_METADATA = ("uid", "creationTimestamp", "generation", "selfLink", "deletionTimestamp")


class Verbs:
    """Carries out requests against a `Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, target: Target) -> Outcome:
        """Read one object."""
        found = self.store.read(target.rtype, target.namespace, target.name)
        if found is None:
            raise not_found(target.rtype.plural, target.rtype.group, target.name)
        return Outcome(200, found)

    def create(self, target: Target, raw: bytes, options: WriteOptions) -> Outcome:
        """POST: create an object (409 if the name is taken, 404 if the namespace is missing)."""
        rtype = target.rtype
        body = self._typed_body(rtype, parse_body(raw))
        meta = metadata_of(body)
        self._place(rtype, target.namespace, meta)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
            meta["name"] = f"{meta['generateName']}{suffix}"
        if not meta.get("name"):
            raise invalid(
                rtype.kind, rtype.group, "", [("metadata.name", "name or generateName is required")]
            )
        with self.store.lock:
            self._require_namespace(rtype, target.namespace)
            if self.store.read(rtype, target.namespace, meta["name"]) is not None:
                raise already_exists(rtype.plural, rtype.group, meta["name"])
            new = self._stamp_new(rtype, body)
            scope = (
                SCOPE_ALL
                if rtype.kind in KINDS_KEEPING_STATUS_ON_CREATE
                else write_scope(rtype, "")
            )
            context = self._context(rtype, options, scope)
            entries = record_update(self._entries(None, body), None, new, context)
            return self._finish(rtype, None, new, entries, options)

    def replace(self, target: Target, raw: bytes, options: WriteOptions) -> Outcome:
        """PUT: replace an object, guarded by its resourceVersion (409 when stale)."""
        rtype = target.rtype
        body = self._typed_body(rtype, parse_body(raw))
        meta = metadata_of(body)
        if meta.get("name", target.name) != target.name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match "
                f"the name on the URL ({target.name})"
            )
        with self.store.lock:
            old = self._existing(target)
            self._place(rtype, target.namespace, meta)
            version = meta.get("resourceVersion")
            if version and version != metadata_of(old).get("resourceVersion"):
                raise stale_conflict(rtype.plural, rtype.group, target.name)
            if not version and rtype.custom:
                raise invalid(
                    rtype.kind,
                    rtype.group,
                    target.name,
                    [("metadata.resourceVersion", "must be specified for an update")],
                )
            return self._update(target, old, body, options)

    def patch(
        self, target: Target, raw: bytes, content_type: str, options: WriteOptions
    ) -> Outcome:
        """PATCH: merge, strategic-merge or JSON patch an object, or server-side apply."""
        if content_type == patches.APPLY_PATCH:
            return self._apply(target, raw, options)
        if options.force is not None:
            raise invalid(
                target.rtype.kind,
                target.rtype.group,
                target.name,
                [("force", "Forbidden: may not be specified for non-apply patch")],
            )
        document = parse_body(raw)
        with self.store.lock:
            old = self._existing(target)
            if content_type == patches.MERGE_PATCH:
                patched = patches.merge_patch(old, document)
            elif content_type == patches.STRATEGIC_MERGE_PATCH and not target.rtype.custom:
                patched = patches.strategic_merge_patch(old, document)
            elif content_type == patches.JSON_PATCH:
                patched = patches.json_patch(old, document)
            else:
                raise ApiError(
                    415, f"the body of the request was in an unknown format: {content_type}"
                )
            if not isinstance(patched, dict):
                raise bad_request("the patch did not produce an object")
            meta = metadata_of(patched)
            if meta.get("name") != target.name:
                raise invalid(
                    target.rtype.kind,
                    target.rtype.group,
                    target.name,
                    [("metadata.name", "field is immutable")],
                )
            if meta.get("resourceVersion") != metadata_of(old).get("resourceVersion"):
                raise stale_conflict(target.rtype.plural, target.rtype.group, target.name)
            return self._update(target, old, patched, options)

    def delete(self, target: Target, raw: bytes, options: WriteOptions) -> Outcome:
        """DELETE one object (a Namespace takes its objects with it)."""
        rtype = target.rtype
        with self.store.lock:
            old = self._existing(target)
            delete_options = parse_body(raw) or {}
            preconditions = delete_options.get("preconditions") or {}
            old_meta = metadata_of(old)
            for field in ("uid", "resourceVersion"):
                wanted = preconditions.get(field)
                if wanted and wanted != old_meta.get(field):
                    raise ApiError(
                        409,
                        f"Precondition failed: {field} in precondition: {wanted}, "
                        f"{field} in object meta: {old_meta.get(field)}",
                    )
            if not options.dry_run:
                self.store.remove(rtype, target.namespace, target.name)
        if rtype.kind in KINDS_RETURNED_ON_DELETE:
            old_meta["deletionTimestamp"] = now_timestamp()
            if rtype.kind == "Namespace":
                old.setdefault("status", {})["phase"] = "Terminating"
            return Outcome(200, old, changed=not options.dry_run)
        details = {"name": target.name, "kind": rtype.plural, "uid": old_meta.get("uid")}
        if rtype.group:
            details["group"] = rtype.group
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }
        return Outcome(200, body, changed=not options.dry_run)

    def _existing(self, target: Target) -> dict[str, Any]:
        """Read the addressed object or raise 404."""
        found = self.store.read(target.rtype, target.namespace, target.name)
        if found is None:
            raise not_found(target.rtype.plural, target.rtype.group, target.name)
        return found

    def _require_namespace(self, rtype: ResourceType, namespace: str) -> None:
        """Raise 404 for a namespaced write into a namespace that does not exist."""
        if rtype.namespaced and not self.store.namespace_exists(namespace):
            raise not_found("namespaces", "", namespace)

    def _typed_body(self, rtype: ResourceType, body: Any) -> dict[str, Any]:
        """Check a body is an object of the addressed type; fill in apiVersion and kind."""
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        api_version = body.get("apiVersion") or rtype.api_version
        kind = body.get("kind") or rtype.kind
        if api_version != rtype.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({rtype.api_version})"
            )
        if kind != rtype.kind:
            raise bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})"
            )
        return {"apiVersion": api_version, "kind": kind, **copy.deepcopy(body)}

    def _place(self, rtype: ResourceType, namespace: str, meta: dict[str, Any]) -> None:
        """Set (or check) the body's namespace against the URL's."""
        if not rtype.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace", namespace) != namespace:
            raise bad_request(
                "the namespace of the provided object does not match "
                "the namespace sent on the request"
            )
        meta["namespace"] = namespace

    def _stamp_new(self, rtype: ResourceType, body: dict[str, Any]) -> dict[str, Any]:
        """Give a new object its uid, creation time, generation and initial status."""
        new = copy.deepcopy(body)
        meta = metadata_of(new)
        for field in (*SERVER_OWNED_METADATA, "resourceVersion", "managedFields"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_timestamp()
        meta["generation"] = 1
        if rtype.has_status and rtype.kind not in KINDS_KEEPING_STATUS_ON_CREATE:
            new.pop("status", None)
            if rtype.kind in STATUS_ON_CREATE:
                new["status"] = copy.deepcopy(STATUS_ON_CREATE[rtype.kind])
        return new

    def _context(self, rtype: ResourceType, options: WriteOptions, scope: str) -> WriteContext:
        """Describe the writer for managedFields bookkeeping."""
        manager = options.manager or options.default_manager
        return WriteContext(manager, rtype.api_version, scope, now_timestamp())

    def _entries(self, old: dict[str, Any] | None, new: dict[str, Any]) -> list[ManagerEntry]:
        """Pick the managedFields a write starts from: reset ([]), the body's, or the live ones."""
        incoming = metadata_of(new).get("managedFields")
        if incoming in ([], [{}]):
            return []
        decoded = decode_entries(incoming) if isinstance(incoming, list) else []
        if decoded:
            return decoded
        return decode_entries(metadata_of(old).get("managedFields") if old else None)

    def _update(
        self, target: Target, old: dict[str, Any], candidate: dict[str, Any], options: WriteOptions
    ) -> Outcome:
        """Finish a PUT or non-apply PATCH: keep identity and status rules, record an Update."""
        rtype = target.rtype
        scope = write_scope(rtype, target.subresource)
        if scope == SCOPE_STATUS:
            new = copy.deepcopy(old)
            new["status"] = copy.deepcopy(candidate.get("status"))
            if new["status"] is None:
                del new["status"]
            starting = decode_entries(metadata_of(old).get("managedFields"))
        else:
            new = self._keep_identity(rtype, old, candidate)
            starting = self._entries(old, candidate)
        context = self._context(rtype, options, scope)
        entries = record_update(starting, old, new, context)
        return self._finish(rtype, old, new, entries, options)

    def _keep_identity(
        self, rtype: ResourceType, old: dict[str, Any], candidate: dict[str, Any]
    ) -> dict[str, Any]:
        """Copy a replacement, restoring server-owned metadata and (if separate) status."""
        new = copy.deepcopy(candidate)
        meta = metadata_of(new)
        old_meta = metadata_of(old)
        for field in ("uid", "creationTimestamp", "name", "namespace"):
            if field in old_meta:
                meta[field] = old_meta[field]
        if rtype.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        return new

    def _finish(
        self,
        rtype: ResourceType,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        entries: list[ManagerEntry],
        options: WriteOptions,
    ) -> Outcome:
        """Store a write unless it is a no-op or a dry run; return the resulting object."""
        meta = metadata_of(new)
        managed = encode_entries(entries)
        if managed:
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)
        if old is not None:
            old_meta = metadata_of(old)
            meta["generation"] = old_meta.get("generation", 1) + (
                1 if spec_changed(old, new) else 0
            )
            if without_server_fields(new) == without_server_fields(old):
                return Outcome(200, old)
        validate(rtype, new)
        code = 201 if old is None else 200
        if options.dry_run:
            if old is not None:
                meta["resourceVersion"] = metadata_of(old).get("resourceVersion")
            else:
                meta.pop("resourceVersion", None)
            return Outcome(code, self.store.as_served(rtype, new))
        return Outcome(code, self.store.commit(rtype, new), changed=True)

    def _apply(self, target: Target, raw: bytes, options: WriteOptions) -> Outcome:
        """Server-side apply: create if absent, otherwise merge with ownership and conflicts."""
        rtype = target.rtype
        if not options.manager:
            raise bad_request("PATCH /apply requires fieldManager")
        config = parse_body(raw, allow_yaml=True)
        if not isinstance(config, dict) or not config.get("apiVersion") or not config.get("kind"):
            raise bad_request("an apply configuration needs apiVersion, kind and metadata")
        config = self._typed_body(rtype, config)
        meta = metadata_of(config)
        if meta.setdefault("name", target.name) != target.name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the URL")
        self._place(rtype, target.namespace, meta)
        if meta.get("managedFields"):
            raise bad_request("metadata.managedFields must be nil")
        wanted_version = meta.pop("resourceVersion", None)
        for field in (*SERVER_OWNED_METADATA, "managedFields"):
            meta.pop(field, None)
        scope = write_scope(rtype, target.subresource)
        if scope == SCOPE_MAIN:
            config.pop("status", None)
        elif scope == SCOPE_STATUS:
            config = {
                k: v for k, v in config.items() if k in ("apiVersion", "kind", "metadata", "status")
            }
            config["metadata"] = {k: v for k, v in meta.items() if k in ("name", "namespace")}
        with self.store.lock:
            old = self.store.read(rtype, target.namespace, target.name)
            if old is None:
                if target.subresource:
                    raise not_found(rtype.plural, rtype.group, target.name)
                self._require_namespace(rtype, target.namespace)
                live = {
                    "apiVersion": rtype.api_version,
                    "kind": rtype.kind,
                    "metadata": {"name": target.name},
                }
                self._place(rtype, target.namespace, metadata_of(live))
            else:
                live = old
                if wanted_version and wanted_version != metadata_of(old).get("resourceVersion"):
                    raise stale_conflict(rtype.plural, rtype.group, target.name)
            entries = decode_entries(metadata_of(live).get("managedFields"))
            context = self._context(rtype, options, scope)
            merged, entries = apply_configuration(
                live, config, entries, context, bool(options.force)
            )
            if old is None:
                merged = self._stamp_new(rtype, merged)
            return self._finish(rtype, old, merged, entries, options)
