"""The REST API's OpenAPI 3.1 document: checked in, current, served, and true to the routes."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route

from reconciler.service.api import auth, routes
from tests.apiserve import Keys, authenticator
from tests.apistore import MemoryPolicyStore

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = runpy.run_path(str(ROOT / "scripts" / "openapi.py"))
DOCUMENT: dict[str, Any] = json.loads(routes.openapi_document())
OPERATIONS = ("get", "post", "patch", "delete", "put")


def test_the_checked_in_document_is_what_the_generator_makes() -> None:
    """`python scripts/openapi.py --write` refreshes it."""
    checked_in = (ROOT / "reconciler" / "service" / "api" / "openapi.json").read_text("utf-8")
    assert checked_in == GENERATOR["render"]()
    assert routes.openapi_document().decode() == checked_in


@pytest.fixture(scope="module")
def served_routes(tmp_path_factory: pytest.TempPathFactory) -> list[Route]:
    found = routes.routes(MemoryPolicyStore(), authenticator(Keys(), tmp_path_factory.mktemp("k")))
    return [r for r in found if isinstance(r, Route)]


def routed(served_routes: list[Route]) -> set[tuple[str, str]]:
    pairs = set()
    for route in served_routes:
        endpoint = route.endpoint
        assert isinstance(endpoint, routes.Endpoint)
        for method in endpoint.methods:
            pairs.add((route.path, method.lower()))
    return pairs


def documented() -> set[tuple[str, str]]:
    return {
        (path, method)
        for path, item in DOCUMENT["paths"].items()
        for method in item
        if method in OPERATIONS
    }


def test_every_route_is_documented_and_every_operation_routed(served_routes: list[Route]) -> None:
    assert routed(served_routes) == documented()
    # the draft's paths, exactly
    assert ("/api/v1/propagationpolicies/{name}", "patch") in documented()
    assert (
        "/apis/multicluster.io/v1alpha1/clusteroverridepolicies/{name}",
        "delete",
    ) in documented()


def test_every_error_answer_has_the_error_schema() -> None:
    for path, item in DOCUMENT["paths"].items():
        for method in set(item) & set(OPERATIONS):
            for status, answer in item[method]["responses"].items():
                if int(status) >= 400:
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (path, method, status)
            statuses = set(item[method]["responses"])
            assert {"401", "500"} <= statuses, (path, method)
            if path != "/openapi.json":
                assert "403" in statuses, (path, method)
    error = DOCUMENT["components"]["schemas"]["Error"]
    assert error["required"] == ["code", "message", "details"]


def test_the_security_scheme_is_bearer_jwt_everywhere() -> None:
    assert DOCUMENT["openapi"] == "3.1.0"
    scheme = DOCUMENT["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"], scheme["bearerFormat"]) == ("http", "bearer", "JWT")
    assert DOCUMENT["security"] == [{"bearer": []}]
    assert all(
        "security" not in op
        for item in DOCUMENT["paths"].values()
        for op in item.values()
        if isinstance(op, dict)
    )


def test_write_operations_name_their_scope() -> None:
    for path, item in DOCUMENT["paths"].items():
        resource = path.split("/")[-1] if "{" not in path else path.split("/")[-2]
        for method in set(item) & {"post", "patch", "delete"}:
            assert f"`{resource}:write`" in item[method]["description"]
            assert f"`{auth.ALL_POLICIES}:write`" in item[method]["description"]


def readme_curls() -> set[tuple[str, str]]:
    """(path template, method) of each curl example of the README's REST API section."""
    found = set()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in readme.splitlines():
        if not line.startswith("curl -sS ") or '"$DRO/' not in line:
            continue
        url = line.rsplit('"$DRO', 1)[1].rstrip('"')
        given = re.search(r"-X (\w+)", line)
        method = given.group(1) if given else ("POST" if " -d " in line else "GET")
        parts = url.split("/")
        if parts[-1] not in routes.PREFIX and url != "/openapi.json":
            parts[-1] = "{name}"
        found.add(("/".join(parts), method.lower()))
    return found


def test_the_readme_shows_a_curl_for_every_operation() -> None:
    assert readme_curls() == documented()
