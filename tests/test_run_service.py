"""`dro run` as a process on a real git repository: a pass at start, probes and metrics, a
webhook-triggered pass for a new commit, audit events, and a clean SIGTERM."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SourceRepo, git, make_source_repo
from tests.livefleet import running_fleet
from tests.service import DRO, Service, wait_for

SECRET = b"webhook-secret"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[Service, SourceRepo]]:
    repo = make_source_repo(tmp_path / "src")
    secret = tmp_path / "webhook-secret"
    secret.write_bytes(SECRET + b"\n")
    running = Service(
        tmp_path,
        *("--repo", str(repo.bare), "--state-dir", str(tmp_path / "state")),
        *("--interval", "10m", "--leader-elect=false", "--webhook-secret-file", str(secret)),
    )
    try:
        yield running, repo
    finally:
        running.close()


def rendered_log(repo: SourceRepo) -> list[str]:
    return git(repo.bare, "log", "--format=%H", "dro/rendered").splitlines()


def test_run_passes_at_start_then_on_a_webhook(service: tuple[Service, SourceRepo]) -> None:
    running, repo = service
    wait_for(lambda: running.metric("dro_reconcile_total", result="success") == 1, "first pass")
    assert len(rendered_log(repo)) == 1
    assert running.get("/readyz")[0] == 200
    assert running.metric("dro_leader") == 1
    assert running.metric("dro_cluster_water_level", cluster="eu-west-1", resource="cpu") > 0

    frontend = repo.work / "workloads/shop/frontend.yaml"
    frontend.write_text(frontend.read_text().replace("replicas: 6", "replicas: 8", 1))
    head = repo.commit("scale the frontend")
    assert running.push_event(b"wrong") == 401
    assert running.push_event(SECRET, ref="refs/heads/dro/rendered") == 200, "ignored"
    assert running.push_event(SECRET) == 202
    wait_for(lambda: running.metric("dro_reconcile_total", result="success") == 2, "second pass")
    commits = rendered_log(repo)
    assert len(commits) == 2, "one new commit for one new source commit"
    trailers = git(repo.bare, "log", "-1", "--format=%(trailers:only,unfold)", "dro/rendered")
    assert f"Dro-Source-Commit: {head}" in trailers

    events = running.events()
    skipped = [e for e in events if e.get("event") == "apply_skipped"]
    assert len(skipped) == 2, "apply is skipped without cluster credentials, and said so"
    audits = [e for e in events if e.get("event") == "audit"]
    assert [a["action"] for a in audits] == ["commit", "push", "commit", "push"]
    assert audits[-1]["source"] == head
    assert audits[-1]["author"] == "Test <test@example.com>"
    assert all(e.get("source") for e in events if e.get("event") == "committed")

    assert running.terminate() == 0
    events = running.events()
    (stopped,) = [e for e in events if e.get("event") == "loop_stopped"]
    assert stopped["counted"] == {"success": 2}, "every pass is in the metrics"
    ended = [e["pass"] for e in events if e.get("event") == "pass_ended"]
    assert ended == [1, 2]
    assert {e["pass"] for e in events if e.get("event") == "audit"} == {1, 2}


@pytest.mark.parametrize(
    ("args", "said"),
    [((), "needs --repo"), (("--repo", "."), "--leader-elect=false")],
    ids=["no repo", "leader election outside a cluster"],
)
def test_run_refuses_to_start_and_says_why(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = subprocess.run(
        ["timeout", "60", DRO, "run", "--listen", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1
    assert said in done.stderr


def test_sigterm_before_the_commit_stops_the_pass_cleanly(tmp_path: Path) -> None:
    with running_fleet(tmp_path) as fleet:
        for api in fleet.apis.values():
            api.delay(1.0)  # observing takes seconds: the signal lands before the commit
        running = Service(
            tmp_path,
            *("--repo", str(fleet.repo.bare), "--state-dir", str(tmp_path / "run-state")),
            *("--kubeconfig", str(fleet.settings.kubeconfig), "--leader-elect=false"),
            *("--interval", "10m", "--cluster-timeout", "5s"),
        )
        try:
            wait_for(
                lambda: any(e.get("event") == "source_loaded" for e in running.events()),
                "the pass to start",
            )
            assert running.terminate() == 0
            events = running.events()
            assert [e["result"] for e in events if e.get("event") == "pass_ended"] == [
                "interrupted"
            ]
            assert not [e for e in events if e.get("event") == "audit"], "nothing was written"
            assert fleet.repo.branch_sha("dro/rendered") is None
            assert fleet.writes() == 0
        finally:
            running.close()
