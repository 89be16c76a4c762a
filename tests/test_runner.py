"""The service's parts on values: webhook checks, the loop's results and retries, settings
precedence, and the HTTP endpoints on 127.0.0.1. The pass itself is a stand-in here; the
real pipeline under `dro run` is in `test_run_service.py`."""

from __future__ import annotations

import argparse
import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from reconciler import live, pipeline
from reconciler import service as runner
from reconciler.cli import run as cli_run
from reconciler.errors import GitError, Problem, ValidationFailed
from reconciler.service import deliveries, metrics, server, webhook
from reconciler.settings import Settings

SECRET = b"s3cret"
PUSH = json.dumps({"ref": "refs/heads/main", "after": "abc", "pusher": {"name": "ann"}}).encode()


# --- webhook ----------------------------------------------------------------------------------


def test_a_signed_github_push_to_the_source_ref_starts_a_pass() -> None:
    headers = {
        "x-hub-signature-256": webhook.github_signature(SECRET, PUSH),
        "x-github-event": "push",
    }
    event = webhook.verify(headers, PUSH, SECRET, "main")
    assert event.starts_pass
    assert (event.provider, event.pusher, event.after) == ("github", "ann", "abc")


@pytest.mark.parametrize(
    "headers",
    [
        {"x-hub-signature-256": webhook.github_signature(b"other", PUSH), "x-github-event": "push"},
        {"x-hub-signature-256": "sha256=00", "x-github-event": "push"},
        {"x-gitlab-token": "wrong", "x-gitlab-event": "Push Hook"},
        {"x-github-event": "push"},
    ],
)
def test_a_bad_or_missing_signature_is_rejected_with_401(headers: dict[str, str]) -> None:
    with pytest.raises(webhook.Rejected) as rejected:
        webhook.verify(headers, PUSH, SECRET, "main")
    assert rejected.value.status == 401


def test_gitlab_pushes_to_other_branches_and_pings_are_ignored() -> None:
    gitlab = {"x-gitlab-token": "s3cret", "x-gitlab-event": "Push Hook"}
    other = json.dumps({"ref": "refs/heads/dro/rendered", "user_username": "dro"}).encode()
    event = webhook.verify(gitlab, other, SECRET, "main")
    assert not event.starts_pass
    assert "refs/heads/dro/rendered" in event.why
    assert webhook.verify(gitlab, PUSH, SECRET, "main").starts_pass
    ping = {
        "x-hub-signature-256": webhook.github_signature(SECRET, b"{}"),
        "x-github-event": "ping",
    }
    assert not webhook.verify(ping, b"{}", SECRET, "main").starts_pass


# --- the loop ---------------------------------------------------------------------------------


SUCCEEDS = pipeline.PassResult(
    planned=pipeline.Planned(spec=cast(Any, None), decisions=(), tree={}),
    commit=None,
    pushed=False,
)
"""What a stand-in pass returns when it succeeds (offline: nothing applied)."""


class Passes:
    """A stand-in pass: raises the queued errors (or returns the queued results) in turn;
    then crashes, or succeeds when `succeed` is set."""

    def __init__(self, *errors: Exception | pipeline.PassResult, succeed: bool = False) -> None:
        self.errors = list(errors)
        self.succeed = succeed
        self.calls = 0

    def __call__(self, _settings: Settings, hook: pipeline.StageHook) -> pipeline.PassResult:
        self.calls += 1
        hook(pipeline.Stage.LOAD)
        if self.errors:
            queued = self.errors.pop(0)
            if isinstance(queued, pipeline.PassResult):
                return queued
            raise queued
        hook(pipeline.Stage.VALIDATE)
        if self.succeed:
            return SUCCEEDS
        raise AssertionError("the test ends the pass through an error or a result")


def make_runner(passes: Passes, **options: float) -> runner.Runner:
    loop = runner.Runner(
        Settings(repo="unused"),
        runner.RunOptions(interval=options.get("interval", 0.5), first_backoff=0.01),
        metrics.Metrics(),
        run_pass=passes,
    )
    loop.leading.set()
    return loop


def counted(loop: runner.Runner, result: str) -> float:
    value = loop.metrics.registry.get_sample_value("dro_reconcile_total", {"result": result})
    return value or 0.0


def test_transient_errors_are_retried_and_every_attempt_is_counted() -> None:
    bad = Problem(path="workloads/x.yaml", line=3, message="bad")
    passes = Passes(GitError("fetch failed"), GitError("again"), ValidationFailed([bad]))
    loop = make_runner(passes)
    assert loop.run_with_retries() == metrics.INVALID
    assert passes.calls == 3
    assert counted(loop, metrics.FAILED) == 2
    assert counted(loop, metrics.INVALID) == 1


def test_a_permanent_error_is_not_retried() -> None:
    passes = Passes(ValidationFailed([Problem(path="dro.yaml", line=1, message="bad")]))
    loop = make_runner(passes)
    assert loop.run_with_retries() == metrics.INVALID
    assert passes.calls == 1


def test_a_pass_stops_before_its_commit_on_shutdown() -> None:
    loop = make_runner(Passes())
    loop.shutdown()
    assert loop.attempt() == metrics.INTERRUPTED
    assert counted(loop, metrics.INTERRUPTED) == 1


def test_a_follower_is_ready_and_idle() -> None:
    passes = Passes()
    loop = make_runner(passes)
    loop.leading.clear()
    assert loop.ready() == (True, "ready: a follower, idle until it holds the lease")
    thread = threading.Thread(target=loop.loop)
    thread.start()
    loop.trigger("test")
    loop.shutdown()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert passes.calls == 0


# --- settings ---------------------------------------------------------------------------------


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_run.add_parser(parser.add_subparsers())
    return parser.parse_args(["run", *argv])


def test_flags_beat_environment_beats_config_file_beats_default() -> None:
    config = {"interval": "5m", "ref": "release", "lease-name": "from-file"}
    environ = {"DRO_INTERVAL": "30s", "DRO_LEASE_NAME": "from-env"}
    values = cli_run.resolve(parsed("--interval", "10s"), environ, config)
    assert values["interval"] == 10.0
    assert values["lease_name"] == "from-env"
    assert values["ref"] == "release"
    assert values["output_branch"] == "dro/rendered"
    assert cli_run.resolve(parsed(), environ, config)["interval"] == 30.0


def test_bad_values_and_unknown_config_keys_are_named(tmp_path: Path) -> None:
    with pytest.raises(cli_run.UsageError, match="DRO_LEADER_ELECT"):
        cli_run.resolve(parsed(), {"DRO_LEADER_ELECT": "maybe"}, {})
    config = tmp_path / "dro.yaml"
    config.write_text("interval: 30s\ninterval_typo: 1\n")
    with pytest.raises(cli_run.UsageError, match="interval_typo"):
        cli_run.load_config(config)


# --- HTTP -------------------------------------------------------------------------------------


@pytest.fixture
def served() -> Iterator[tuple[server.Server, runner.Runner]]:
    loop = make_runner(Passes())
    http = server.Server(loop, host="127.0.0.1", port=0, webhook_secret=SECRET)
    http.start()
    try:
        yield http, loop
    finally:
        http.close()


def request(
    http: server.Server, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, str]:
    url = f"http://127.0.0.1:{http.port}{path}"
    sent = urllib.request.Request(url, data=body, headers=headers, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(sent, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_probes_and_metrics(served: tuple[server.Server, runner.Runner]) -> None:
    http, loop = served
    assert request(http, "/healthz") == (200, "ok\n")
    assert request(http, "/readyz")[0] == 503, "no pass has succeeded yet"
    loop.attempt()
    status, text = request(http, "/metrics")
    assert status == 200
    assert 'dro_reconcile_total{result="failed"} 1.0' in text
    assert "dro_build_info{" in text
    assert 'dro_reconcile_duration_seconds_count{stage="total"} 1.0' in text
    assert request(http, "/nothing")[0] == 404


def test_readyz_fails_when_passes_stop(served: tuple[server.Server, runner.Runner]) -> None:
    http, loop = served
    now = [1000.0]
    loop.clock = lambda: now[0]
    loop.run_pass = Passes(succeed=True)
    loop.attempt()
    assert request(http, "/readyz")[0] == 200
    now[0] += 10 * loop.options.interval
    status, why = request(http, "/readyz")
    assert status == 503
    assert "last pass finished" in why


def test_readyz_follows_the_result_of_the_last_pass(
    served: tuple[server.Server, runner.Runner],
) -> None:
    http, loop = served
    unreachable = pipeline.PassResult(
        planned=SUCCEEDS.planned,
        commit=None,
        pushed=False,
        applied=live.Applied(),
        unreachable={"eu": "timed out"},
    )
    loop.run_pass = Passes(
        ValidationFailed([Problem(path="a.yaml", line=1, message="bad")]),
        GitError("fetch failed"),
        unreachable,
        succeed=True,
    )
    said = []
    for expected in (metrics.INVALID, metrics.FAILED, metrics.PARTIAL, metrics.SUCCESS):
        if expected == metrics.FAILED:
            with pytest.raises(GitError):  # raised for the retry
                loop.attempt()
        else:
            assert loop.attempt() == expected
        said.append(request(http, "/readyz"))
    assert [status for status, _ in said] == [503, 503, 503, 200]
    assert "invalid" in said[0][1]
    assert "unavailable" in said[1][1]
    assert "unreachable" in said[2][1]
    assert all("ready when its last pass succeeded within" in why for _, why in said)
    loop.shutdown()
    assert loop.attempt() == metrics.INTERRUPTED
    assert request(http, "/readyz")[0] == 200, "an interrupted pass changes nothing"


def test_a_delivery_whose_pass_could_not_start_is_served_on_retry(
    served: tuple[server.Server, runner.Runner],
) -> None:
    http, loop = served
    leader_reachable = [False]
    loop.leading.clear()
    loop.forward = lambda: leader_reachable[0]
    headers = {
        "X-Hub-Signature-256": webhook.github_signature(SECRET, PUSH),
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "d-1",
    }
    assert request(http, "/webhook", PUSH, **headers)[0] == 503
    leader_reachable[0] = True
    assert request(http, "/webhook", PUSH, **headers)[0] == 202, "the retry is served"
    status, text = request(http, "/webhook", PUSH, **headers)
    assert (status, "duplicate delivery d-1" in text) == (200, True)


def test_recent_deliveries_are_bounded_and_expire() -> None:
    now = [0.0]
    recent = deliveries.RecentDeliveries(capacity=3, ttl=60, clock=lambda: now[0])
    assert all(recent.claim(f"d-{i}") for i in range(5))
    assert len(recent) == 3
    assert recent.claim("d-0"), "the oldest was dropped"
    assert not recent.claim("d-4")
    now[0] += 61
    assert recent.claim("d-4"), "expired"
    assert recent.claim("x" * 10_000)
    assert not recent.claim("x" * 10_000), "long ids are kept as their digest"


def test_the_webhook_triggers_and_rejects(served: tuple[server.Server, runner.Runner]) -> None:
    http, loop = served
    signature = webhook.github_signature(SECRET, PUSH)
    status, _ = request(
        http, "/webhook", PUSH, **{"X-Hub-Signature-256": signature, "X-GitHub-Event": "push"}
    )
    assert status == 202
    assert loop._wake.is_set()
    bad = request(
        http, "/webhook", PUSH, **{"X-Hub-Signature-256": "sha256=0", "X-GitHub-Event": "push"}
    )
    assert bad[0] == 401
    sample = loop.metrics.registry.get_sample_value
    assert sample("dro_webhook_requests_total", {"result": "triggered"}) == 1
    assert sample("dro_webhook_requests_total", {"result": "rejected"}) == 1


def test_the_readme_documents_every_metric_and_its_alerts_use_real_ones() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    exposed = {
        line.split()[2]
        for line in metrics.Metrics().exposition().decode().splitlines()
        if line.startswith("# TYPE")
    }
    documented = set(re.findall(r"^\| `(dro_[a-z_]+)", readme, flags=re.MULTILINE))
    counters = {name.removesuffix("_total") for name in documented}
    assert counters | documented >= exposed, "every metric has a row in the README"
    (rules,) = [b for b in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL) if "groups:" in b]
    for rule in yaml.safe_load(rules)["groups"][0]["rules"]:
        for name in re.findall(r"dro_[a-z_]+", rule["expr"]):
            assert name.removesuffix("_total") in exposed, name


def test_a_pass_abandoned_at_shutdown_is_counted_once_when_its_stage_then_fails() -> None:
    loop: runner.Runner

    def interrupted(_settings: Settings, hook: pipeline.StageHook) -> pipeline.PassResult:
        hook(pipeline.Stage.LOAD)
        assert loop.abandon()  # SIGTERM's watcher: counted as interrupted, the process exits
        raise GitError("fetch failed: Interrupted system call")  # the signal broke a syscall

    loop = runner.Runner(
        Settings(repo="unused"), runner.RunOptions(), metrics.Metrics(), run_pass=interrupted
    )
    loop.leading.set()
    worker = threading.Thread(target=loop.attempt, daemon=True)
    worker.start()
    worker.join(timeout=1.0)
    assert worker.is_alive(), "the abandoned pass waits for the process to exit"
    assert counted(loop, metrics.INTERRUPTED) == 1
    assert counted(loop, metrics.FAILED) == 0, "counted twice"


@pytest.mark.parametrize(
    ("stage", "abandoned"),
    [(None, False), ("load", True), ("observe", True), ("commit", False), ("apply", False)],
)
def test_only_a_pass_that_wrote_nothing_is_abandoned(stage: str | None, abandoned: bool) -> None:
    loop = make_runner(Passes())
    loop.stage = stage
    assert loop.abandon() is abandoned
    assert counted(loop, metrics.INTERRUPTED) == (1 if abandoned else 0)
