"""The REST API's routes over HTTP: every endpoint, every error code, the audit event.

The routes are served by uvicorn on loopback and reached with httpx, as a client reaches
`dro run`; the store is the in-memory one (tests/apistore.py) with the git store's semantics.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from reconciler.service.api import model, routes
from tests.apiserve import Keys, authenticator, bearer, served
from tests.apistore import MemoryPolicyStore, blob_id

PP = "/api/v1/propagationpolicies"
RPP = "/apis/multicluster.io/v1alpha1/resourceplacementpolicies"
COP = "/apis/multicluster.io/v1alpha1/clusteroverridepolicies"
MERGE = {"Content-Type": "application/merge-patch+json"}


def placement(name: str = "webapp-placement") -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ResourcePlacementPolicy",
        "metadata": {"name": name},
        "spec": {
            "resourceSelector": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "webapp"},
            "targetClusters": [{"selectorType": "name", "values": ["cluster-east"]}],
        },
    }


def override(name: str = "gpu-override") -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ClusterOverridePolicy",
        "metadata": {"name": name},
        "spec": {"overrides": [{"clusterSelector": {"names": ["gpu-cluster"]}}]},
    }


DRAFT_BODY = {
    "name": "cross-region-policy",
    "resourceType": "Deployment",
    "targetClusters": ["aws-us-east", "azure-europe"],
}


class Api:
    """A served API, its store, and a client holding a token with every scope."""

    def __init__(self, url: str, keys: Keys, store: MemoryPolicyStore) -> None:
        self.url = url
        self.keys = keys
        self.store = store
        self.client = httpx.Client(base_url=url, headers=bearer(keys.token()), timeout=10)


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture
def api(keys: Keys, tmp_path: Path) -> Iterator[Api]:
    store = MemoryPolicyStore()
    with served(routes.routes(store, authenticator(keys, tmp_path))) as server:
        found = Api(server.url, keys, store)
        yield found
        found.client.close()


def error_of(answer: httpx.Response, status: int, code: str) -> Mapping[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == code
    assert "Traceback" not in answer.text
    return body


def test_the_drafts_propagation_policy_round_trip(api: Api) -> None:
    created = api.client.post(PP, json=DRAFT_BODY)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["policy"] == DRAFT_BODY
    assert body["branch"] == "main"
    assert body["commit"] == api.store.commits[-1][0]
    assert created.headers["location"] == f"{PP}/cross-region-policy"
    path = api.store.index[("propagationpolicies", "cross-region-policy")]
    assert created.headers["etag"] == f'"{blob_id(api.store.files[path])}"'

    one = api.client.get(f"{PP}/cross-region-policy")
    assert one.status_code == 200
    assert one.json() == DRAFT_BODY
    assert one.headers["etag"] == created.headers["etag"]
    assert api.client.get(PP).json() == {"items": [DRAFT_BODY]}

    patched = api.client.patch(
        f"{PP}/cross-region-policy",
        content=json.dumps({"targetClusters": ["aws-us-east"], "namespace": "shop"}),
        headers={**MERGE, "If-Match": one.headers["etag"]},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["policy"]["targetClusters"] == ["aws-us-east"]
    assert patched.json()["policy"]["namespace"] == "shop"
    assert patched.headers["etag"] != one.headers["etag"]
    assert "location" not in patched.headers
    assert len(api.store.commits) == 2


@pytest.mark.parametrize(("path", "make"), [(RPP, placement), (COP, override)])
def test_documents_are_created_listed_read_and_deleted(api: Api, path: str, make: Any) -> None:
    first, second = make("b-policy"), make("a-policy")
    for document in (first, second):
        assert api.client.post(path, json=document).status_code == 201
    listed = api.client.get(path).json()
    kind = first["kind"]
    assert listed["apiVersion"] == "multicluster.io/v1alpha1"
    assert listed["kind"] == f"{kind}List"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a-policy", "b-policy"]
    assert api.client.get(f"{path}/b-policy").json() == first

    deleted = api.client.delete(f"{path}/b-policy")
    assert deleted.status_code == 200
    assert deleted.json() == {"commit": api.store.commits[-1][0], "branch": "main", "policy": None}
    assert "etag" not in deleted.headers
    error_of(api.client.get(f"{path}/b-policy"), 404, model.POLICY_NOT_FOUND)
    assert len(api.store.commits) == 3


def test_head_reads_like_get_without_a_body(api: Api) -> None:
    api.client.post(RPP, json=placement())
    answer = api.client.head(f"{RPP}/webapp-placement")
    assert answer.status_code == 200
    assert answer.content == b""
    assert answer.headers["etag"] == api.client.get(f"{RPP}/webapp-placement").headers["etag"]


def test_if_match_is_passed_as_sent(api: Api) -> None:
    created = api.client.post(RPP, json=placement())
    etag = created.headers["etag"]
    stale = api.client.delete(f"{RPP}/webapp-placement", headers={"If-Match": '"' + "0" * 40 + '"'})
    error_of(stale, 412, model.PRECONDITION_FAILED)
    weak = api.client.delete(f"{RPP}/webapp-placement", headers={"If-Match": f"W/{etag}"})
    error_of(weak, 412, model.PRECONDITION_FAILED)
    assert len(api.store.commits) == 1
    assert api.client.delete(f"{RPP}/webapp-placement", headers={"If-Match": etag}).is_success


def test_a_taken_name_is_the_drafts_conflict(api: Api) -> None:
    assert api.client.post(PP, json=DRAFT_BODY).status_code == 201
    body = error_of(api.client.post(PP, json=DRAFT_BODY), 409, model.POLICY_CONFLICT)
    assert body["details"] == {"policyName": "cross-region-policy"}
    assert len(api.store.commits) == 1


def test_validation_problems_are_located(api: Api) -> None:
    bad = {**DRAFT_BODY, "targetClusters": ["Not A Name"]}
    body = error_of(api.client.post(PP, json=bad), 422, model.VALIDATION_FAILED)
    (problem,) = body["details"]["problems"]
    assert problem["pointer"] == "/targetClusters/0"
    assert set(problem) == {"file", "line", "pointer", "message"}
    assert api.store.commits == []


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'"text"', "not an object"),
        (b'{"name": NaN}', "NaN is not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
        (b"", "empty"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_invalid(api: Api, content: bytes, why: str) -> None:
    answer = api.client.post(PP, content=content, headers={"Content-Type": "application/json"})
    error_of(answer, 400, model.INVALID_BODY)
    assert api.store.commits == [], why


def test_a_shape_error_from_the_store_is_invalid_body(api: Api) -> None:
    wrong_kind = {**placement(), "kind": "ClusterOverridePolicy"}
    error_of(api.client.post(RPP, json=wrong_kind), 400, model.INVALID_BODY)
    error_of(api.client.post(PP, json={**DRAFT_BODY, "name": "../x"}), 400, model.INVALID_BODY)
    assert api.client.post(PP, json=DRAFT_BODY).is_success
    rename = api.client.patch(
        f"{PP}/cross-region-policy", content=b'{"name": "other"}', headers=MERGE
    )
    error_of(rename, 400, model.INVALID_BODY)


def test_a_body_over_one_mebibyte_is_refused(api: Api) -> None:
    big = b'{"name": "' + b"a" * routes.BODY_LIMIT + b'"}'
    declared = api.client.post(PP, content=big, headers={"Content-Type": "application/json"})
    error_of(declared, 413, routes.BODY_TOO_LARGE)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while reading
        yield big[: len(big) // 2]
        yield big[len(big) // 2 :]

    streamed = api.client.post(PP, content=chunks(), headers={"Content-Type": "application/json"})
    error_of(streamed, 413, routes.BODY_TOO_LARGE)
    assert api.store.commits == []


def test_the_wrong_media_type_is_415(api: Api) -> None:
    api.client.post(PP, json=DRAFT_BODY)
    as_json = api.client.patch(f"{PP}/cross-region-policy", json={"namespace": "x"})
    body = error_of(as_json, 415, routes.UNSUPPORTED_MEDIA_TYPE)
    assert body["details"] == {"accepted": ["application/merge-patch+json"]}
    form = api.client.post(RPP, data={"a": "b"})
    error_of(form, 415, routes.UNSUPPORTED_MEDIA_TYPE)
    assert len(api.store.commits) == 1


def test_a_method_the_path_lacks_is_405_with_allow(api: Api) -> None:
    answer = api.client.delete(f"{PP}/cross-region-policy")
    error_of(answer, 405, routes.METHOD_NOT_ALLOWED)
    assert answer.headers["allow"] == "GET, HEAD, PATCH"
    answer = api.client.put(RPP, json=placement())
    error_of(answer, 405, routes.METHOD_NOT_ALLOWED)
    assert answer.headers["allow"] == "GET, HEAD, POST"


def test_an_unknown_api_path_is_a_json_404(api: Api) -> None:
    error_of(api.client.get("/apis/multicluster.io/v1alpha1/nothing"), 404, routes.NOT_FOUND)
    error_of(api.client.get(f"{PP}/a/b"), 404, routes.NOT_FOUND)
    error_of(httpx.get(api.url + "/api/v2/x"), 401, "UNAUTHENTICATED")


class Exploding(MemoryPolicyStore):
    def list(self, resource: str) -> list[model.Policy]:
        raise RuntimeError("secret-looking internals /var/lib/dro")

    def create(self, resource: str, body: Mapping[str, Any], caller: model.Caller) -> model.Written:
        raise model.ApiError(503, model.SOURCE_UNAVAILABLE, "the source repository is unreachable")


def test_a_failure_inside_dro_is_500_without_a_traceback(keys: Keys, tmp_path: Path) -> None:
    store = Exploding()
    with (
        served(routes.routes(store, authenticator(keys, tmp_path))) as server,
        capture_logs() as logs,
        httpx.Client(base_url=server.url, headers=bearer(keys.token())) as client,
    ):
        answer = client.get(RPP)
        body = error_of(answer, 500, routes.INTERNAL_ERROR)
        assert "internals" not in body["message"]
        error_of(client.post(RPP, json=placement()), 503, model.SOURCE_UNAVAILABLE)
    (event,) = [e for e in logs if e["event"] == "api_internal_error"]
    assert event["error"] == "RuntimeError"
    assert "exc_info" not in event
    assert all("internals" not in json.dumps(e, default=str) for e in logs)


def test_every_write_is_audited_whatever_its_outcome(api: Api) -> None:
    token = api.keys.token(scope="policies:read")
    with capture_logs() as logs:
        created = api.client.post(PP, json=DRAFT_BODY)
        api.client.post(PP, json=DRAFT_BODY)  # 409
        httpx.post(api.url + PP, json=DRAFT_BODY)  # no token: 401
        httpx.post(api.url + PP, json=DRAFT_BODY, headers=bearer(token))  # 403
        api.client.delete(f"{PP}/cross-region-policy")  # 405
        api.client.get(PP)  # a read: not audited
    events = [e for e in logs if e["event"] == "api_audit"]
    assert [(e["who"], e["status"], e["code"]) for e in events] == [
        ("alice", 201, None),
        ("alice", 409, model.POLICY_CONFLICT),
        ("anonymous", 401, "UNAUTHENTICATED"),
        ("alice", 403, "INSUFFICIENT_SCOPE"),
        ("alice", 405, routes.METHOD_NOT_ALLOWED),
    ]
    first = events[0]
    assert first["commit"] == created.json()["commit"]
    assert (first["method"], first["path"], first["resource"], first["name"]) == (
        "POST",
        PP,
        "propagationpolicies",
        "cross-region-policy",
    )
    assert all(e["commit"] is None for e in events[1:])
    text = json.dumps(logs, default=str)
    assert token not in text
    assert "aws-us-east" not in text  # never the body
    assert api.client.headers["authorization"].split()[1] not in text


def test_the_openapi_document_is_served_to_any_valid_token(api: Api) -> None:
    answer = httpx.get(api.url + "/openapi.json", headers=bearer(api.keys.token(scope=None)))
    assert answer.status_code == 200
    assert answer.content == routes.openapi_document()
    assert answer.json()["openapi"] == "3.1.0"


def test_concurrent_writes_each_get_one_answer_and_one_commit(api: Api) -> None:
    names = [f"p-{index}" for index in range(20)]

    def create(name: str) -> int:
        with httpx.Client(base_url=api.url, headers=bearer(api.keys.token())) as client:
            body = {**DRAFT_BODY, "name": name}
            return client.post(PP, json=body).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(create, [*names, "p-0", "p-0"]))
    assert sorted(statuses) == [201] * 20 + [409] * 2
    assert len(api.store.commits) == 20
    listed = api.client.get(PP).json()["items"]
    assert sorted(item["name"] for item in listed) == sorted(names)
