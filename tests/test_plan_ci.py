"""The CI recipes in the README for `dro plan`: they parse, and their plan steps run as written.

The GitHub Actions "Plan" step and the GitLab job's `dro plan` lines are run by bash in a real
checkout (the example repo, `origin/main`, and a change checked out as HEAD), with the
variables the CI systems set. Installing dro and posting the comment need the network and are
only checked for shape.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, SourceRepo, git, make_source_repo

README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Reviewing a change") :]
BLOCKS = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", SECTION, flags=re.DOTALL)]
GITHUB: dict[str, Any] = next(b for b in BLOCKS if "jobs" in b)
GITLAB: dict[str, Any] = next(b for b in BLOCKS if "dro-plan" in b)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> SourceRepo:
    """A work tree with `origin/main` and the branches `scale` (valid) and `broken`."""
    repo = make_source_repo(tmp_path_factory.mktemp("ci"))
    git(repo.work, "fetch", "--quiet", "origin")
    frontend = repo.work / "workloads/shop/frontend.yaml"
    original = frontend.read_text()
    for branch, replicas in (("scale", "replicas: 8"), ("broken", "replicas: eight")):
        git(repo.work, "checkout", "--quiet", "-b", branch, "main")
        frontend.write_text(original.replace("replicas: 6", replicas, 1))
        git(repo.work, "commit", "--quiet", "-am", branch)
    return repo


def run_script(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def github_plan_step() -> str:
    steps = GITHUB["jobs"]["plan"]["steps"]
    (step,) = [s for s in steps if s.get("id") == "plan"]
    return str(step["run"])


def test_the_github_workflow_runs_on_pull_requests_with_full_history() -> None:
    assert "pull_request" in GITHUB[True]  # YAML 1.1 reads the key `on` as True
    steps = GITHUB["jobs"]["plan"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    assert GITHUB["permissions"]["pull-requests"] == "write"
    assert any("gh pr comment" in str(s.get("run", "")) for s in steps)
    (fail,) = [s for s in steps if s.get("if") == "steps.plan.outputs.status == '1'"]
    assert fail["run"] == "exit 1"


@pytest.mark.parametrize(("branch", "status"), [("scale", "2"), ("broken", "1")])
def test_the_github_plan_step_writes_the_comment(
    checkout: SourceRepo, tmp_path: Path, branch: str, status: str
) -> None:
    git(checkout.work, "checkout", "--quiet", branch)
    outputs = tmp_path / "github_output"
    done = run_script(
        github_plan_step(),
        checkout.work,
        {"GITHUB_BASE_REF": "main", "GITHUB_OUTPUT": str(outputs), "DRO_STATE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert outputs.read_text() == f"status={status}\n"
    comment = (checkout.work / "plan.md").read_text()
    assert comment.startswith("### dro plan: `origin/main` → `HEAD`")
    if status == "2":
        assert "shop/Deployment.apps/frontend" in comment
        assert (checkout.work / "plan.svg").read_bytes().startswith(b"<?xml")
    else:
        assert "workloads/shop/frontend.yaml:" in comment
        assert "::error::" in done.stdout


def test_the_gitlab_job_plans_merge_requests(checkout: SourceRepo, tmp_path: Path) -> None:
    job = GITLAB["dro-plan"]
    assert job["rules"][0]["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
    assert job["variables"]["GIT_DEPTH"] == "0"
    script = [str(line) for line in job["script"]]
    assert any("merge_requests/$CI_MERGE_REQUEST_IID/notes" in line for line in script)
    planning = "\n".join(
        line for line in script if line.startswith(("status=", "dro plan", "test "))
    )
    git(checkout.work, "checkout", "--quiet", "scale")
    env = {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "DRO_STATE_DIR": str(tmp_path)}
    assert run_script(planning, checkout.work, env).returncode == 0
    assert "replicas moved" in (checkout.work / "plan.md").read_text()
    git(checkout.work, "checkout", "--quiet", "broken")
    assert run_script(planning, checkout.work, env).returncode == 1, "an invalid head fails"
