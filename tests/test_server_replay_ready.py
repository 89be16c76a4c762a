"""`dro run` as a black box, for what webhooks and probes promise over time: a replayed
delivery starts no second pass, and `/readyz` fails before the first successful pass and
while passes fail, saying why."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests import rawhttp
from tests.conftest import make_source_repo
from tests.service import Service, wait_for

SECRET = b"replay-secret"


def github_push(running: Service, delivery: str) -> tuple[int, str]:
    content = json.dumps({"ref": "refs/heads/main", "after": "1" * 40}).encode()
    headers = {**rawhttp.signed(SECRET, content), "X-GitHub-Delivery": delivery}
    return send(running, headers, content)


def gitlab_push(running: Service, key: str) -> tuple[int, str]:
    content = json.dumps({"ref": "refs/heads/main", "user_username": "ann"}).encode()
    headers = {
        "X-Gitlab-Token": SECRET.decode(),
        "X-Gitlab-Event": "Push Hook",
        "Idempotency-Key": key,
        "X-Gitlab-Event-UUID": "same-for-every-hook-this-one-caused",
    }
    return send(running, headers, content)


def send(running: Service, headers: dict[str, str], content: bytes) -> tuple[int, str]:
    headers = {**headers, "Content-Length": str(len(content))}
    answer = rawhttp.exchange(running.port, rawhttp.request("POST", "/webhook", headers, content))
    return rawhttp.status(answer), rawhttp.body(answer)


def successes(running: Service) -> float:
    return running.metric("dro_reconcile_total", result="success")


def test_a_replayed_delivery_starts_no_second_pass(tmp_path: Path) -> None:
    repo = make_source_repo(tmp_path / "src")
    (tmp_path / "secret").write_bytes(SECRET)
    running = Service(
        tmp_path,
        *("--repo", str(repo.bare), "--state-dir", str(tmp_path / "state")),
        *("--interval", "10m", "--leader-elect=false"),
        *("--webhook-secret-file", str(tmp_path / "secret")),
    )
    try:
        wait_for(lambda: successes(running) == 1, "the first pass")
        assert github_push(running, "delivery-1")[0] == 202
        wait_for(lambda: successes(running) == 2, "the pass of delivery-1")
        status, text = github_push(running, "delivery-1")
        assert (status, "duplicate" in text) == (200, True), text

        assert gitlab_push(running, "key-1")[0] == 202
        wait_for(lambda: successes(running) == 3, "the pass of key-1")
        status, text = gitlab_push(running, "key-1")
        assert (status, "duplicate" in text) == (200, True), text
        assert gitlab_push(running, "key-2")[0] == 202, "Event-UUID alone makes no replay"
        wait_for(lambda: successes(running) == 4, "the pass of key-2")

        assert github_push(running, "delivery-2")[0] == 202
        wait_for(lambda: successes(running) == 5, "the pass of delivery-2")
        assert running.terminate() == 0
        (stopped,) = [e for e in running.events() if e.get("event") == "loop_stopped"]
        assert stopped["counted"] == {"success": 5}, "the replays started nothing"
    finally:
        running.close()


def readyz(running: Service) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{running.port}/healthz", timeout=5) as alive:
        assert alive.status == 200, "alive whatever the passes do"
    return running.get("/readyz")


def test_readyz_fails_before_the_first_success_and_while_passes_fail(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(SECRET)
    source = tmp_path / "src"
    running = Service(
        tmp_path,
        *("--repo", str(source / "remote.git"), "--state-dir", str(tmp_path / "state")),
        *("--interval", "2s", "--leader-elect=false"),
        *("--webhook-secret-file", str(tmp_path / "secret")),
    )
    try:
        status, why = readyz(running)
        assert status == 503, "not ready before a pass has succeeded"
        assert "not ready" in why
        wait_for(lambda: running.metric("dro_reconcile_total", result="failed"), "a failed pass")
        status, why = readyz(running)
        assert status == 503
        assert "the last pass" in why, why

        repo = make_source_repo(source)  # the source appears: the next pass succeeds
        wait_for(lambda: readyz(running)[0] == 200, "ready after a successful pass")
        assert "succeeded" in readyz(running)[1]

        bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: [1]\n"
        repo.write({"workloads/bad.yaml": bad})
        invalid = running.metric("dro_reconcile_total", result="invalid")  # while it appeared
        repo.commit("a bad commit")
        wait_for(
            lambda: running.metric("dro_reconcile_total", result="invalid") > invalid,
            "a pass to find the bad commit invalid",
        )
        status, why = readyz(running)
        assert status == 503, "a permanently invalid commit: alive, not ready"
        assert "invalid" in why, why

        repo.write({"workloads/bad.yaml": None})
        repo.commit("revert the bad commit")
        wait_for(lambda: readyz(running)[0] == 200, "ready again after the fix")
    finally:
        running.close()
