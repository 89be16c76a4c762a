"""Input that used to crash or stall every command.

A file nested 30,000 deep (a segfault in PyYAML's composer) is a located error in each
command, run as real processes: `validate`, `reconcile --once`, `plan` and `run` exit 1 (or
keep serving), print `FILE:LINE: POINTER: MESSAGE`, show no traceback and commit nothing.
`replicas: 2147483647` (the int32 maximum) is valid, and is scheduled in well under a second
instead of about 13 minutes."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler import cli
from tests.conftest import EXAMPLE, SourceRepo, git, make_source_repo, without_example_warning
from tests.service import DRO, Service, wait_for

DEEP = "a: " + "[" * 30000 + "]" * 30000 + "\n"
"""A 60 KB file nested 30,000 deep: PyYAML's C composer recursed until SIGSEGV (exit 139)."""
LOCATED = "workloads/deep.yaml:1: /a/0/0/0: nesting deeper than 100 levels"


def dro(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed `dro` executable, as a user runs it."""
    return subprocess.run(
        ["timeout", "120", DRO, *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def assert_located(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert LOCATED in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_validate_reports_deep_nesting_instead_of_a_segfault(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    shutil.copytree(EXAMPLE, source)
    (source / "workloads/deep.yaml").write_text(DEEP)
    done = dro("validate", str(source), cwd=tmp_path)
    assert_located(done)
    shown = without_example_warning(done.stderr.strip().splitlines())
    assert shown == [LOCATED], "stderr holds the problem lines only"
    assert done.stdout == "", "stdout carries data only"


def test_reconcile_reports_it_and_commits_nothing(tmp_path: Path) -> None:
    repo = make_source_repo(tmp_path / "src")
    repo.write({"workloads/deep.yaml": DEEP})
    repo.commit("deep")
    state = str(tmp_path / "state")
    assert_located(
        dro("reconcile", "--once", "--repo", str(repo.bare), "--state-dir", state, cwd=tmp_path)
    )
    assert repo.branch_sha("dro/rendered") is None


def test_plan_reports_it_on_the_head(tmp_path: Path) -> None:
    repo = make_source_repo(tmp_path / "src")
    git(repo.work, "checkout", "--quiet", "-b", "deep")
    repo.write({"workloads/deep.yaml": DEEP})
    git(repo.work, "add", "--all")
    git(repo.work, "commit", "--quiet", "-m", "deep")
    done = dro("plan", "--repo", str(repo.work), "--base", "main", "--head", "deep", cwd=tmp_path)
    assert_located(done)


@pytest.fixture
def deep_service(tmp_path: Path) -> Iterator[tuple[Service, SourceRepo]]:
    repo = make_source_repo(tmp_path / "src")
    repo.write({"workloads/deep.yaml": DEEP})
    repo.commit("deep")
    running = Service(
        tmp_path,
        *("--repo", str(repo.bare), "--state-dir", str(tmp_path / "state")),
        *("--interval", "10m", "--leader-elect=false"),
    )
    try:
        yield running, repo
    finally:
        running.close()


def test_run_reports_it_and_keeps_serving(deep_service: tuple[Service, SourceRepo]) -> None:
    running, repo = deep_service
    wait_for(lambda: running.metric("dro_reconcile_total", result="invalid") == 1, "a pass")
    assert running.healthy(), "the service is still up"
    assert running.process.poll() is None
    (invalid,) = [e for e in running.events() if e.get("event") == "pass_invalid_source"]
    assert without_example_warning(invalid["first"]) == [LOCATED]
    assert repo.branch_sha("dro/rendered") is None
    assert running.terminate() == 0


def test_the_int32_maximum_of_replicas_is_scheduled_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "repo"
    shutil.copytree(EXAMPLE, source)
    cart = source / "workloads/shop/cart.yaml"  # StaticWeight 3:2:1 by region
    cart.write_text(cart.read_text().replace("replicas: 4", "replicas: 2147483647", 1))
    started = time.perf_counter()
    assert cli.main(["schedule", str(source), "-o", "json"]) == 0
    assert time.perf_counter() - started < 30, "one replica at a time took about 13 minutes"
    decisions = json.loads(capsys.readouterr().out)["decisions"]
    (decision,) = [
        d
        for d in decisions
        if d["resource"]["name"] == "cart" and d["resource"]["kind"] == "Deployment"
    ]
    counts = {c["name"]: c["replicas"] for c in decision["clusters"]}
    assert sum(counts.values()) == 2147483647
    per_weight = counts["ap-south-1"]  # weight 1; eu-west weighs 2, us-east 3
    assert all(abs(counts[f"eu-west-{n}"] - 2 * per_weight) <= 1 for n in (1, 2))
    assert all(abs(counts[f"us-east-{n}"] - 3 * per_weight) <= 1 for n in (1, 2))
