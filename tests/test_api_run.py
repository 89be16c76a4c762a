"""The REST API as `dro run` serves it: a real process, a real git daemon, real HTTP.

A write through the API is a commit on the remote by the token's caller; the next pass reads
it; `dro audit` lists it; the probes stay open while everything else needs a token; and the
API is refused over plain HTTP on an address other than loopback.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from conftest import SourceRepo, git

from tests.apiserve import Keys
from tests.service import DRO, Service, wait_for

RPP = "/apis/multicluster.io/v1alpha1/resourceplacementpolicies"
POLICY = {
    "apiVersion": "multicluster.io/v1alpha1",
    "kind": "ResourcePlacementPolicy",
    "metadata": {"name": "api-made"},
    "spec": {
        "resourceSelector": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "api-only"},
        "targetClusters": [{"selectorType": "name", "values": ["eu-west-1"]}],
    },
}
SECRET = b"api-run-webhook-secret"


def call(
    service: Service, method: str, path: str, token: str | None, body: Any = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One request to the running service: status, JSON body, headers."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(
        f"http://127.0.0.1:{service.port}{path}", data=data, headers=headers, method=method
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null"), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), dict(error.headers)


def start(tmp_path: Path, url: str, keys: Keys, *extra: str) -> Service:
    """`dro run` on loopback with the API on (key, audience) and a webhook secret."""
    (tmp_path / "key.pem").write_bytes(keys.public_pem)
    (tmp_path / "webhook").write_bytes(SECRET)
    return Service(
        tmp_path,
        "--repo",
        url,
        "--leader-elect=false",
        "--interval",
        "1h",
        "--state-dir",
        str(tmp_path / "state"),
        "--webhook-secret-file",
        str(tmp_path / "webhook"),
        "--api-jwt-key-file",
        str(tmp_path / "key.pem"),
        "--api-audience",
        "dro",
        *extra,
    )


def test_a_write_through_the_api_is_a_commit_the_next_pass_reads(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    keys = Keys()
    token = keys.token(aud="dro", name="Ada Lovelace", email="ada@example.com")
    service = start(tmp_path, url, keys)
    try:
        before = repo.branch_sha("main")
        status, body, headers = call(service, "POST", RPP, token, POLICY)
        assert status == 201, body
        assert body["branch"] == "main"
        assert headers["etag"].strip('"')
        assert repo.branch_sha("main") == body["commit"] != before
        author = git(repo.bare, "log", "-1", "--format=%an <%ae>|%cn", "main")
        assert author == "Ada Lovelace <ada@example.com>|dro"
        assert git(repo.bare, "show", "main:policies/api-made.yaml").startswith("apiVersion:")

        status, listed, _ = call(service, "GET", RPP, token)
        assert status == 200
        assert "api-made" in [item["metadata"]["name"] for item in listed["items"]]

        # the next pass (started by a signed push event) reads the API's commit
        assert service.push_event(SECRET) == 202
        wait_for(
            lambda: any(
                e.get("event") == "source_loaded" and e.get("source") == body["commit"]
                for e in service.events()
            ),
            "a pass over the API's commit",
        )
        audits = [e for e in service.events() if e.get("event") == "api_audit"]
        assert [(e["method"], e["status"], e["commit"]) for e in audits] == [
            ("POST", 201, body["commit"])
        ]
        assert token not in service.log.read_text()
    finally:
        service.close()

    trail = subprocess.run(
        [DRO, "audit", "--repo", str(repo.bare), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    writes = json.loads(trail.stdout)
    assert [(w["caller"], w["sha"], w["request"]) for w in writes] == [
        ("alice", body["commit"], f"POST {RPP}")
    ]


def test_the_probes_stay_open_and_everything_else_needs_a_token(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    _, url = served_repo
    keys = Keys()
    service = start(tmp_path, url, keys)
    try:
        assert service.get("/healthz")[0] == 200
        assert service.get("/metrics")[0] == 200
        for path in ("/openapi.json", RPP, "/api/v1/propagationpolicies"):
            status, body, headers = call(service, "GET", path, None)
            assert (status, body["code"]) == (401, "UNAUTHENTICATED"), path
            assert headers["www-authenticate"].startswith("Bearer")
        status, document, _ = call(service, "GET", "/openapi.json", keys.token(aud="dro"))
        assert status == 200
        assert document["openapi"].startswith("3.1")
        # a token for another audience is refused
        status, body, _ = call(service, "GET", RPP, keys.token(aud="someone-else"))
        assert (status, body["code"]) == (401, "UNAUTHENTICATED")
    finally:
        service.close()


def test_branch_mode_leaves_the_source_branch_alone(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    keys = Keys()
    service = start(tmp_path, url, keys, "--api-write-mode", "branch")
    try:
        before = repo.branch_sha("main")
        status, body, _ = call(service, "POST", RPP, keys.token(aud="dro"), POLICY)
        assert status == 201, body
        assert body["branch"].startswith("dro-api/resourceplacementpolicies/api-made/")
        assert repo.branch_sha("main") == before
        assert repo.branch_sha(body["branch"]) == body["commit"]
    finally:
        service.close()


def test_the_api_over_plain_http_beyond_loopback_is_refused(tmp_path: Path) -> None:
    keys = Keys()
    (tmp_path / "key.pem").write_bytes(keys.public_pem)
    done = subprocess.run(
        [
            "timeout",
            "60",
            DRO,
            "run",
            "--repo",
            str(tmp_path / "nowhere.git"),
            "--listen",
            "0.0.0.0:0",
            "--leader-elect=false",
            "--api-jwt-key-file",
            str(tmp_path / "key.pem"),
            "--api-audience",
            "dro",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "--allow-plain-http" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
