"""Generate the REST API's OpenAPI 3.1 document, reconciler/service/api/openapi.json.

The paths and methods come from the routes' own tables (`service.api.routes`), the error codes
from the API's behaviour; the document is checked in as package data and served at
/openapi.json. `python scripts/openapi.py` reports whether the checked-in file is current (exit
1 when it differs); `--write` rewrites it. tests/test_api_openapi.py runs the same comparison.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconciler.service.api import model, routes  # noqa: E402

TARGET = ROOT / "reconciler" / "service" / "api" / "openapi.json"
NAME_PATTERN = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"

SCHEMA_NAMES = {
    "propagationpolicies": "PropagationPolicy",
    "resourceplacementpolicies": "ResourcePlacementPolicy",
    "clusteroverridepolicies": "ClusterOverridePolicy",
}

ERRORS = {
    400: "INVALID_BODY: the body is not JSON, not an object, or not a policy's shape",
    401: "UNAUTHENTICATED: no Bearer token, or one that does not verify",
    403: "INSUFFICIENT_SCOPE: the token lacks the scope the operation needs",
    404: "POLICY_NOT_FOUND: no policy of that name at the tip of the branch",
    409: "POLICY_CONFLICT: the name exists, or the branch kept moving",
    412: "PRECONDITION_FAILED: If-Match is not the policy's current ETag",
    413: "BODY_TOO_LARGE: the body is larger than 1 MiB",
    415: "UNSUPPORTED_MEDIA_TYPE: the Content-Type is not the one the operation accepts",
    422: "VALIDATION_FAILED: the repository with the change fails `dro validate`; "
    "details.problems lists each problem's file, line, pointer and message",
    500: "INTERNAL_ERROR: the request failed inside dro",
    503: "SOURCE_UNAVAILABLE: the source repository cannot be reached",
}
READ_ERRORS = (401, 403, 500, 503)
ONE_ERRORS = (401, 403, 404, 500, 503)
POST_ERRORS = (400, 401, 403, 409, 413, 415, 422, 500, 503)
PATCH_ERRORS = (400, 401, 403, 404, 409, 412, 413, 415, 422, 500, 503)
DELETE_ERRORS = (401, 403, 404, 409, 412, 422, 500, 503)


def ref(name: str) -> dict[str, str]:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def json_content(schema: dict[str, Any], media_type: str = routes.JSON) -> dict[str, Any]:
    """A content map of one media type."""
    return {media_type: {"schema": schema}}


def errors(codes: tuple[int, ...]) -> dict[str, Any]:
    """The documented error answers, each with the error schema."""
    return {
        str(code): {"description": ERRORS[code], "content": json_content(ref("Error"))}
        for code in codes
    }


ETAG = {
    "description": 'the policy\'s blob id at the tip, quoted: "<sha>"',
    "schema": {"type": "string"},
}
LOCATION = {"description": "the path of the created policy", "schema": {"type": "string"}}
NAME_PARAMETER = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "the policy's name (metadata.name)",
    "schema": {"type": "string"},
}
IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "description": "the ETag the change is based on; a stale one gets 412; '*' means the "
    "policy must exist; absent means unconditional",
    "schema": {"type": "string"},
}


def scopes(resource: str, action: str) -> str:
    """The sentence naming the scopes an operation needs."""
    return f"Needs the scope `{resource}:{action}` or `policies:{action}`."


def document_schema(kind: str) -> dict[str, Any]:
    """A stored policy document's schema (its spec is `dro validate`'s to check)."""
    return {
        "type": "object",
        "description": f"a {kind} document as stored in the source repository under policies/",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": routes.GROUP_VERSION},
            "kind": {"const": kind},
            "metadata": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": NAME_PATTERN, "maxLength": 253}
                },
            },
            "spec": {"type": "object", "description": f"see schemas/{kind.lower()}.json"},
        },
    }


def list_schema(resource: str) -> dict[str, Any]:
    """A list answer's schema."""
    items = {"type": "array", "items": ref(SCHEMA_NAMES[resource])}
    if routes.PREFIX[resource] == routes.API_V1:
        return {"type": "object", "required": ["items"], "properties": {"items": items}}
    kind = model.KINDS[resource] + "List"
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "items"],
        "properties": {
            "apiVersion": {"const": routes.GROUP_VERSION},
            "kind": {"const": kind},
            "items": items,
        },
    }


def write_schema(policy: dict[str, Any]) -> dict[str, Any]:
    """A write answer's schema."""
    return {
        "type": "object",
        "required": ["commit", "branch", "policy"],
        "properties": {
            "commit": {"type": "string", "description": "the sha of the commit pushed"},
            "branch": {
                "type": "string",
                "description": "the branch pushed to: the source branch, or a review branch",
            },
            "policy": policy,
        },
    }


def components() -> dict[str, Any]:
    """The schemas and the bearer security scheme."""
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "description": "every error's body, as the DRO-DS draft specifies it",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "examples": ["POLICY_CONFLICT"]},
                "message": {"type": "string"},
                "details": {"type": "object"},
            },
        },
        "PropagationPolicy": {
            "type": "object",
            "description": "the draft's REST body; kept in git as a multicluster.io/v1alpha1 "
            "PropagationPolicy",
            "required": ["name", "resourceType", "targetClusters"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "pattern": NAME_PATTERN, "maxLength": 253},
                "resourceType": {"type": "string", "minLength": 1, "examples": ["Deployment"]},
                "targetClusters": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "pattern": NAME_PATTERN, "maxLength": 253},
                },
                "namespace": {"type": "string", "pattern": NAME_PATTERN, "maxLength": 63},
            },
        },
        "MergePatch": {
            "type": "object",
            "description": "an RFC 7396 JSON merge patch of the body; null removes a field",
        },
        "Deleted": write_schema({"type": "null"}),
    }
    for resource, schema_name in SCHEMA_NAMES.items():
        if routes.PREFIX[resource] != routes.API_V1:
            schemas[schema_name] = document_schema(model.KINDS[resource])
        schemas[schema_name + "List"] = list_schema(resource)
        schemas[schema_name + "Written"] = write_schema(ref(schema_name))
    return {
        "schemas": schemas,
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": "a JWT signed by a key of --api-jwks-file or --api-jwt-key-file, "
                "with exp, sub and the audience of --api-audience; scopes in `scope` or `scp`",
            }
        },
    }


def operation(
    summary: str, operation_id: str, responses: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """One operation object."""
    return {"summary": summary, "operationId": operation_id, **extra, "responses": responses}


def collection(resource: str) -> dict[str, Any]:
    """The path item of a resource's collection."""
    schema_name = SCHEMA_NAMES[resource]
    kind = model.KINDS[resource]
    path: dict[str, Any] = {}
    for method in routes.COLLECTION_METHODS[resource]:
        if method == "GET":
            path["get"] = operation(
                f"List the {kind} policies at the tip of the source branch",
                f"list{schema_name}",
                {
                    "200": {
                        "description": "every policy, sorted by name",
                        "content": json_content(ref(schema_name + "List")),
                    },
                    **errors(READ_ERRORS),
                },
                description=scopes(resource, "read"),
            )
        elif method == "POST":
            path["post"] = operation(
                f"Create a {kind}: validated, committed and pushed",
                f"create{schema_name}",
                {
                    "201": {
                        "description": "committed and pushed",
                        "headers": {"ETag": ETAG, "Location": LOCATION},
                        "content": json_content(ref(schema_name + "Written")),
                    },
                    **errors(POST_ERRORS),
                },
                description=scopes(resource, "write"),
                requestBody={"required": True, "content": json_content(ref(schema_name))},
            )
    return path


def item(resource: str) -> dict[str, Any]:
    """The path item of one policy of a resource."""
    schema_name = SCHEMA_NAMES[resource]
    kind = model.KINDS[resource]
    path: dict[str, Any] = {"parameters": [NAME_PARAMETER]}
    for method in routes.ITEM_METHODS[resource]:
        if method == "GET":
            path["get"] = operation(
                f"Read one {kind} and its ETag",
                f"read{schema_name}",
                {
                    "200": {
                        "description": "the policy",
                        "headers": {"ETag": ETAG},
                        "content": json_content(ref(schema_name)),
                    },
                    **errors(ONE_ERRORS),
                },
                description=scopes(resource, "read"),
            )
        elif method == "PATCH":
            path["patch"] = operation(
                f"Change a {kind} by a JSON merge patch",
                f"patch{schema_name}",
                {
                    "200": {
                        "description": "committed and pushed",
                        "headers": {"ETag": ETAG},
                        "content": json_content(ref(schema_name + "Written")),
                    },
                    **errors(PATCH_ERRORS),
                },
                description=scopes(resource, "write") + " The name cannot change.",
                parameters=[IF_MATCH],
                requestBody={
                    "required": True,
                    "content": json_content(ref("MergePatch"), routes.MERGE_PATCH),
                },
            )
        elif method == "DELETE":
            path["delete"] = operation(
                f"Delete a {kind}",
                f"delete{schema_name}",
                {
                    "200": {
                        "description": "committed and pushed",
                        "content": json_content(ref("Deleted")),
                    },
                    **errors(DELETE_ERRORS),
                },
                description=scopes(resource, "write"),
                parameters=[IF_MATCH],
            )
    return path


def document() -> dict[str, Any]:
    """The whole OpenAPI 3.1 document."""
    paths: dict[str, Any] = {
        "/openapi.json": {
            "get": operation(
                "This document",
                "openapi",
                {
                    "200": {
                        "description": "the OpenAPI 3.1 document",
                        "content": json_content({"type": "object"}),
                    },
                    **errors((401, 500)),
                },
                description="Needs a valid token, whatever its scopes.",
            )
        }
    }
    for resource, prefix in routes.PREFIX.items():
        paths[f"{prefix}/{resource}"] = collection(resource)
        paths[f"{prefix}/{resource}/{{name}}"] = item(resource)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "dro REST API",
            "version": "v1",
            "description": "The DRO-DS draft's policy API, served by `dro run`: a front door to "
            "git. Reads serve the policies at the tip of the source branch; each write is "
            "validated as `dro validate` does, committed with the caller as author and "
            "pushed compare-and-swap.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": components(),
    }


def render() -> str:
    """The document's text, as checked in."""
    return json.dumps(document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """Check the checked-in document, or rewrite it with --write."""
    text = render()
    if "--write" in argv:
        TARGET.write_text(text, encoding="utf-8")
        return 0
    if TARGET.read_text(encoding="utf-8") != text:
        print(f"{TARGET.relative_to(ROOT)} is stale: run python scripts/openapi.py --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
