"""A file that used to crash every command (a segfault in PyYAML's composer) is a located
error in each of them, run as real processes: `validate`, `reconcile --once`, `plan` and
`run` exit 1 (or keep serving), print `FILE:LINE: POINTER: MESSAGE`, show no traceback and
commit nothing."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, SourceRepo, git, make_source_repo
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
    assert done.stdout.strip() == LOCATED, "stdout holds the problem lines only"


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
    assert invalid["first"] == [LOCATED]
    assert repo.branch_sha("dro/rendered") is None
    assert running.terminate() == 0
