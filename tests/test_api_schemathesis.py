"""Property-based tests of the served REST API, generated from its OpenAPI document by
schemathesis: no server error, and every answer's status, content type and body as documented.

The API runs under uvicorn on loopback with a token of every scope, over each store in turn:
the in-memory one of the tests, and the git store `dro run` uses, writing to a bare repository
that holds the example repo (so every write is validated against a real fleet and pushed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from conftest import make_source_repo
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from reconciler.service.api import model, routes, store
from tests.apiserve import Keys, authenticator, served
from tests.apistore import MemoryPolicyStore

SCHEMA = schemathesis.openapi.from_dict(json.loads(routes.openapi_document()))
# valid bodies and invalid ones (wrong types, missing fields): both must be answered as documented
SCHEMA.config.generation.update(modes=list(schemathesis.GenerationMode), deterministic=True)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
MAX_EXAMPLES = 40


@pytest.fixture(scope="module", params=["memory", "git"])
def api_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> model.PolicyStore:
    """The store behind the API under test."""
    if request.param == "memory":
        return MemoryPolicyStore()
    tmp = tmp_path_factory.mktemp("source")
    source = make_source_repo(tmp)
    return store.GitPolicyStore(str(source.bare), "main", tmp / "cache")


@pytest.fixture(scope="module")
def api_server(
    api_store: model.PolicyStore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """The served API's base URL and a token with every scope."""
    keys = Keys()
    tmp: Path = tmp_path_factory.mktemp("keys")
    with served(routes.routes(api_store, authenticator(keys, tmp))) as server:
        yield server.url, keys.token()


@SCHEMA.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_as_documented(
    case: schemathesis.Case, api_server: tuple[str, str]
) -> None:
    url, token = api_server
    case.call_and_validate(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS
    )
