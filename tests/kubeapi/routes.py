"""URL routing: discovery documents, resource paths and their verbs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, bad_request, method_not_allowed, no_such_route
from .listing import delete_collection, list_objects
from .resources import ResourceRegistry, version_document
from .store import Store
from .targets import Outcome, Target, WriteOptions
from .verbs import Verbs
from .watching import watch_objects

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request as the router sees it."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes

    def header(self, name: str) -> str:
        """Return a header value (case-insensitive), or ""."""
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), "")

    @property
    def dry_run(self) -> bool:
        """Tell whether `dryRun=All` was asked for (400 for any other value)."""
        value = self.query.get("dryRun", "")
        if value not in ("", "All"):
            raise bad_request(f'Invalid dryRun value "{value}": supported values: "All"')
        return value == "All"


def default_manager(user_agent: str) -> str:
    """Derive a field manager from a User-Agent, as the apiserver does ("unknown" if none)."""
    prefix = user_agent.split("/", 1)[0].strip()
    return prefix[:128] or "unknown"


def wants_only_aggregated(accept: str) -> bool:
    """Tell whether an Accept header asks only for aggregated discovery (answered with 406)."""
    if "apidiscovery.k8s.io" not in accept:
        return False
    for media in accept.split(","):
        kind, *params = (part.strip() for part in media.split(";"))
        if kind in ("*/*", "application/*") or (
            kind == "application/json" and not any(p.startswith(("g=", "as=")) for p in params)
        ):
            return False
    return True


class Router:
    """Maps requests onto discovery documents and verbs."""

    def __init__(self, store: Store, registry: ResourceRegistry, server_address: str) -> None:
        self.store = store
        self.registry = registry
        self.verbs = Verbs(store)
        self.server_address = server_address
        self.stopping: Callable[[], bool] = lambda: False
        """Whether the server is stopping: watches end."""
        self.bookmark_interval = 1.0
        """Seconds between a watch's BOOKMARK events while the store moves."""

    def route(self, request: ApiRequest) -> Outcome:
        """Answer one request, raising ApiError for failures."""
        parts = [part for part in request.path.split("/") if part]
        if request.path in HEALTH_PATHS:
            return Outcome(200, {"status": "ok"})
        if parts[:1] in (["api"], ["apis"]) and len(parts) <= 3 - (parts[0] == "api"):
            if request.method != "GET":
                raise method_not_allowed(request.method)
            if wants_only_aggregated(request.header("Accept")):
                raise ApiError(406, "aggregated discovery is not served; ask for application/json")
            return Outcome(200, self.discovery(parts))
        if parts == ["version"]:
            return Outcome(200, dict(version_document()))
        if parts and parts[0] == "api" and len(parts) > 2:
            return self.resource(request, "", parts[1], parts[2:])
        if parts and parts[0] == "apis" and len(parts) > 3:
            return self.resource(request, parts[1], parts[2], parts[3:])
        raise no_such_route()

    def discovery(self, parts: list[str]) -> dict[str, Any]:
        """Return `/api`, `/api/v1`, `/apis`, `/apis/<group>` or `/apis/<group>/<version>`."""
        found: dict[str, Any] | None
        if parts == ["api"]:
            found = {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address}
                ],
            }
        elif parts == ["apis"]:
            found = self.registry.api_group_list()
        elif parts[0] == "api":
            found = self.registry.api_resource_list("", parts[1])
        elif len(parts) == 2:
            found = self.registry.api_group(parts[1])
        else:
            found = self.registry.api_resource_list(parts[1], parts[2])
        if found is None:
            raise no_such_route()
        return found

    def resource(self, request: ApiRequest, group: str, version: str, rest: list[str]) -> Outcome:
        """Route `.../<plural>[/<name>[/<subresource>]]`, optionally under `namespaces/<ns>`."""
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise no_such_route()
        rtype = self.registry.by_plural(group, version, rest[0])
        if rtype is None:
            raise no_such_route()
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if namespace and not rtype.namespaced:
            raise no_such_route()
        if name and rtype.namespaced and not namespace:
            raise no_such_route()
        if subresource and (subresource != "status" or not rtype.has_status):
            raise no_such_route()
        target = Target(rtype, namespace, name, subresource)
        if name:
            return self.object_verb(request, target)
        return self.collection_verb(request, target)

    def options(self, request: ApiRequest) -> WriteOptions:
        """Read fieldManager, force and dryRun from the query string."""
        force = request.query.get("force", "").lower()
        if force not in ("", "true", "false", "1", "0"):
            raise bad_request(f"invalid force value {force!r}")
        return WriteOptions(
            manager=request.query.get("fieldManager") or None,
            default_manager=default_manager(request.header("User-Agent")),
            dry_run=request.dry_run,
            force=None if not force else force in ("true", "1"),
        )

    def object_verb(self, request: ApiRequest, target: Target) -> Outcome:
        """Dispatch GET, PUT, PATCH and DELETE on one object (or its status)."""
        method = request.method
        if method == "GET":
            return self.verbs.get(target)
        if method == "PUT":
            return self.verbs.replace(target, request.body, self.options(request))
        if method == "PATCH":
            content_type = request.header("Content-Type").split(";")[0].strip().lower()
            return self.verbs.patch(target, request.body, content_type, self.options(request))
        if method == "DELETE" and not target.subresource:
            return self.verbs.delete(target, request.body, self.options(request))
        raise method_not_allowed(method)

    def collection_verb(self, request: ApiRequest, target: Target) -> Outcome:
        """Dispatch LIST, POST (create) and DELETE (delete collection)."""
        method = request.method
        if method == "GET":
            query = dict(request.query)
            if query.get("watch", "").lower() in ("true", "1"):
                events = watch_objects(
                    self.store, target, query, self.stopping, self.bookmark_interval
                )
                return Outcome(200, {}, events=events)
            return list_objects(self.store, target, query)
        if target.rtype.namespaced and not target.namespace:
            raise method_not_allowed(method)
        if method == "POST":
            return self.verbs.create(target, request.body, self.options(request))
        if method == "DELETE":
            return delete_collection(self.store, target, dict(request.query), self.options(request))
        raise method_not_allowed(method)
