"""Property-based tests of the served REST API, generated from its OpenAPI document by
schemathesis: no server error, and every answer's status, content type and body as documented.

The API runs under uvicorn on loopback with a token of every scope. The store is the fixture
`api_store`: the in-memory store here, any `model.PolicyStore` (the git store) alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from reconciler.service.api import model, routes
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


@pytest.fixture(scope="module")
def api_store() -> model.PolicyStore:
    """The store behind the API under test."""
    return MemoryPolicyStore()


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
