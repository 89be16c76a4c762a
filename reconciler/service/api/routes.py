"""The REST API's HTTP endpoints, as Starlette routes for the one server of `dro run`.

The draft's endpoints, with a GET of the draft's propagation policies added so that a client
can learn a policy's ETag before a PATCH:

- `/api/v1/propagationpolicies`: GET (list), POST; `/{name}`: GET, PATCH (only
  `application/merge-patch+json`, else 415).
- `/apis/multicluster.io/v1alpha1/resourceplacementpolicies` and `…/clusteroverridepolicies`:
  GET (list), POST; `/{name}`: GET, DELETE.
- `/openapi.json`: the checked-in OpenAPI 3.1 document (any valid token).

A list is `{"items": [...]}` (under `/apis/` also `apiVersion` and `kind: <Kind>List`, as
Kubernetes answers); one policy is its document with `ETag: "<blob id>"`. A write answers 201
(POST) or 200 with `{"commit", "branch", "policy"}`, `ETag` (not after DELETE) and `Location`
(POST). `If-Match` goes to the store as sent. Every error is `{code, message, details}`: 400
INVALID_BODY (not JSON, not an object), 413 BODY_TOO_LARGE (over `BODY_LIMIT`), 401, 403, 404,
405, 409, 412, 415, 422, 503 from the store, 500 INTERNAL_ERROR without a traceback.

Each route authenticates first (`auth`), then checks the method and the scope; each request
that tries to change state is audited (`audit`), whatever its outcome. Store calls run in
the API's own worker threads (`WORKERS`): the store does git work and may block, and a
standard-library pool costs less per call than Starlette's `run_in_threadpool` (anyio's).

Called by `cli.run`.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import quote

import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from reconciler import settings
from reconciler.errors import UsageError
from reconciler.service.api import audit, auth, model, store

log = structlog.get_logger("dro")

T = TypeVar("T")

WORKERS = 16
"""Threads that run store calls at once (reads of a cached tip are quick; a write waits on git)."""

BODY_LIMIT = 1 << 20
"""The largest request body the API reads: 1 MiB (a policy is a few kB)."""

API_V1 = "/api/v1"
GROUP = "/apis/multicluster.io/v1alpha1"
GROUP_VERSION = "multicluster.io/v1alpha1"
PREFIX: Mapping[str, str] = {
    "propagationpolicies": API_V1,
    "resourceplacementpolicies": GROUP,
    "clusteroverridepolicies": GROUP,
}
"""Each resource's path prefix: the draft's own body under /api/v1, the documents under /apis."""

COLLECTION_METHODS: Mapping[str, tuple[str, ...]] = {
    "propagationpolicies": ("GET", "POST"),
    "resourceplacementpolicies": ("GET", "POST"),
    "clusteroverridepolicies": ("GET", "POST"),
}
ITEM_METHODS: Mapping[str, tuple[str, ...]] = {
    "propagationpolicies": ("GET", "PATCH"),
    "resourceplacementpolicies": ("GET", "DELETE"),
    "clusteroverridepolicies": ("GET", "DELETE"),
}

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"

BODY_TOO_LARGE = "BODY_TOO_LARGE"
NOT_FOUND = "NOT_FOUND"
METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
INTERNAL_ERROR = "INTERNAL_ERROR"


class MethodNotAllowed(model.ApiError):
    """405 with the methods the path allows (the `Allow` header)."""

    def __init__(self, method: str, allowed: tuple[str, ...]) -> None:
        super().__init__(
            405,
            METHOD_NOT_ALLOWED,
            f"{method} is not allowed here; allowed: {', '.join(allowed)}",
            {"allowed": list(allowed)},
        )
        self.allowed = allowed


def with_head(methods: tuple[str, ...]) -> tuple[str, ...]:
    """The methods a path answers: HEAD wherever GET is, as HTTP expects."""
    found = set(methods) | ({"HEAD"} if "GET" in methods else set())
    return tuple(sorted(found))


def openapi_document() -> bytes:
    """The checked-in OpenAPI 3.1 document, as served at /openapi.json."""
    return resources.files("reconciler.service.api").joinpath("openapi.json").read_bytes()


def json_response(status: int, content: Any, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON answer; a value YAML gave that JSON has no type for (a date) is its text."""
    body = json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=str)
    return Response(body.encode("utf-8"), status, dict(headers or {}), media_type=JSON)


def error_response(error: model.ApiError) -> Response:
    """The `{code, message, details}` answer of an error, with its headers."""
    headers: dict[str, str] = {}
    if isinstance(error, auth.AuthError):
        headers["WWW-Authenticate"] = error.challenge
    if isinstance(error, MethodNotAllowed):
        headers["Allow"] = ", ".join(error.allowed)
    return json_response(error.status, error.as_json(), headers)


def _etag(policy: model.Policy) -> str:
    return f'"{policy.etag}"'


def location(resource: str, name: str) -> str:
    """The path of one policy of a resource."""
    return f"{PREFIX[resource]}/{resource}/{quote(name, safe='')}"


class Api:
    """The endpoints over one store and one authenticator."""

    def __init__(self, store: model.PolicyStore, authenticator: auth.Authenticator) -> None:
        self.store = store
        self.auth = authenticator
        self.openapi = openapi_document()
        self.workers = ThreadPoolExecutor(WORKERS, thread_name_prefix="dro-api")

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run a store method in the API's worker threads: the store does git work and may
        block, and the event loop must keep serving the probes and other requests."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.workers, functools.partial(function, *args))

    async def handle(
        self, request: Request, resource: str | None, item: bool, methods: tuple[str, ...]
    ) -> Response:
        """Authenticate, check the method and scope, serve; audit a write whatever happens."""
        outcome = _Outcome(name=request.path_params.get("name"))
        try:
            outcome.caller = self.auth.authenticate(request.headers.get("authorization"))
            if not methods:
                raise model.ApiError(404, NOT_FOUND, f"no endpoint at {request.url.path}")
            allowed = with_head(methods)
            if request.method not in allowed:
                raise MethodNotAllowed(request.method, allowed)
            reading = request.method in ("GET", "HEAD")
            auth.require(outcome.caller, resource, "read" if reading else "write")
            response = await self._serve(request, resource, item, outcome)
        except model.ApiError as error:
            outcome.code = error.code
            response = error_response(error)
        except Exception as error:  # a client gets a 500, never a traceback
            log.error(
                "api_internal_error",
                error=type(error).__name__,
                method=request.method,
                path=request.url.path,
            )
            outcome.code = INTERNAL_ERROR
            response = error_response(
                model.ApiError(500, INTERNAL_ERROR, "the request failed inside dro; see its log")
            )
        if request.method in audit.WRITES:
            caller = outcome.caller
            audit.emit(
                audit.Record(
                    who=caller.subject if caller is not None else audit.ANONYMOUS,
                    method=request.method,
                    path=request.url.path,
                    resource=resource,
                    name=outcome.name,
                    status=response.status_code,
                    code=outcome.code,
                    commit=outcome.commit,
                )
            )
        return response

    async def _serve(
        self, request: Request, resource: str | None, item: bool, outcome: _Outcome
    ) -> Response:
        caller = outcome.caller
        assert caller is not None
        if resource is None:
            return Response(self.openapi, 200, media_type=JSON)
        name = outcome.name
        if request.method in ("GET", "HEAD"):
            if name is None:
                found = await self.call(self.store.list, resource)
                return json_response(200, list_body(resource, found))
            policy = await self.call(self.store.get, resource, name)
            return json_response(200, policy.document, {"ETag": _etag(policy)})
        if request.method == "POST":
            body = await read_object(request, JSON)
            outcome.name = body_name(resource, body)
            written = await self.call(self.store.create, resource, body, caller)
        elif request.method == "PATCH":
            assert name is not None
            body = await read_object(request, MERGE_PATCH)
            if_match = request.headers.get("if-match")
            written = await self.call(self.store.patch, resource, name, body, caller, if_match)
        else:
            assert name is not None
            if_match = request.headers.get("if-match")
            written = await self.call(self.store.delete, resource, name, caller, if_match)
        outcome.commit = written.sha
        return write_response(resource, written, created=request.method == "POST")


class _Outcome:
    """What a request's audit event needs, filled in as it is served."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.caller: model.Caller | None = None
        self.code: str | None = None
        self.commit: str | None = None


def list_body(resource: str, policies: list[model.Policy]) -> dict[str, Any]:
    """A list answer: `{"items": [...]}`, under /apis/ with Kubernetes' apiVersion and kind."""
    items = [policy.document for policy in policies]
    if PREFIX[resource] == API_V1:
        return {"items": items}
    return {"apiVersion": GROUP_VERSION, "kind": model.KINDS[resource] + "List", "items": items}


def write_response(resource: str, written: model.Written, *, created: bool) -> Response:
    """A write's answer: the commit, the branch, the policy (null after DELETE)."""
    policy = written.policy
    body = {
        "commit": written.sha,
        "branch": written.branch,
        "policy": dict(policy.document) if policy is not None else None,
    }
    headers: dict[str, str] = {}
    if policy is not None:
        headers["ETag"] = _etag(policy)
        if created:
            headers["Location"] = location(resource, policy.name)
    return json_response(201 if created else 200, body, headers)


def body_name(resource: str, body: Mapping[str, Any]) -> str | None:
    """The name a POST body gives its policy, when it gives one (for the audit event)."""
    if PREFIX[resource] == API_V1:
        name = body.get("name")
    else:
        metadata = body.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else None


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


async def read_object(request: Request, media_type: str) -> dict[str, Any]:
    """The request's body as a JSON object: 415 for another media type, 413 over
    `BODY_LIMIT`, 400 INVALID_BODY when it is not JSON or not an object."""
    given = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if given != media_type:
        shown = given or "none"
        raise model.ApiError(
            415,
            UNSUPPORTED_MEDIA_TYPE,
            f"Content-Type {shown} is not accepted here; send {media_type}",
            {"accepted": [media_type]},
        )
    too_large = model.ApiError(
        413, BODY_TOO_LARGE, f"the body is larger than {BODY_LIMIT} bytes", {"limit": BODY_LIMIT}
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > BODY_LIMIT:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > BODY_LIMIT:
            raise too_large
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks), parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "not JSON"
        raise model.ApiError(400, model.INVALID_BODY, f"the body is not JSON: {reason}") from None
    if not isinstance(body, dict):
        raise model.ApiError(400, model.INVALID_BODY, "the body must be a JSON object")
    return body


class Endpoint:
    """One path's ASGI app: every method reaches it, so that a wrong method gets the API's
    own 405 answer (and its audit event) rather than the framework's."""

    def __init__(
        self, api: Api, resource: str | None, item: bool, methods: tuple[str, ...]
    ) -> None:
        self.api = api
        self.resource = resource
        self.item = item
        self.methods = methods

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request."""
        request = Request(scope, receive)
        response = await self.api.handle(request, self.resource, self.item, self.methods)
        await response(scope, receive, send)


def routes(store: model.PolicyStore, authenticator: auth.Authenticator) -> list[BaseRoute]:
    """The API's routes over a store: the three resources, /openapi.json, and a JSON 404 for
    any other path under /api/ and /apis/."""
    api = Api(store, authenticator)
    found: list[BaseRoute] = [Route("/openapi.json", Endpoint(api, None, False, ("GET",)))]
    for resource, prefix in PREFIX.items():
        collection = f"{prefix}/{resource}"
        found.append(
            Route(collection, Endpoint(api, resource, False, COLLECTION_METHODS[resource]))
        )
        found.append(
            Route(collection + "/{name}", Endpoint(api, resource, True, ITEM_METHODS[resource]))
        )
    for prefix in ("/api", "/apis"):
        found.append(Route(prefix + "/{rest:path}", Endpoint(api, None, False, ())))
    return found


def build(values: Mapping[str, Any], where: settings.Settings) -> list[BaseRoute] | None:
    """The API's routes for `dro run`'s resolved settings, over the git store of its source
    repository (`--repo`, `--ref`, `--api-write-mode`); None when no API key setting is given
    (the API is off). A setting that cannot work is a UsageError."""
    authenticator = auth.from_settings(values)
    if authenticator is None:
        return None
    try:
        policies = store.GitPolicyStore.from_settings(where)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return routes(policies, authenticator)
