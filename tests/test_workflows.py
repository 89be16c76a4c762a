"""The e2e workflow, written here but run only where kind can: it must parse and run `make e2e`;
`make e2e` fails when it collects nothing, and in one line when Go is missing or too old; .ci/run
runs both suites."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_e2e_workflow_runs_the_contract_suite_against_kind() -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows/e2e.yaml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["contract"]["steps"]
    assert any(str(step.get("uses", "")).startswith("helm/kind-action@") for step in steps)
    (run,) = [step for step in steps if step.get("run") == "make e2e"]
    assert run["env"]["DRO_E2E_KUBECONFIG"].endswith("/kubeconfig")


def test_make_e2e_fails_when_it_collects_no_tests(tmp_path: Path) -> None:
    # E2E_BUILD and E2E_TESTS stand in for the Go build and tests/e2e: an empty folder.
    done = subprocess.run(
        ["make", "-s", "e2e", "E2E_BUILD=true", f"E2E_TESTS={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DRO_E2E_KUBECONFIG": ""},
        check=False,
    )
    assert done.returncode != 0
    assert "pytest collected no tests: failing" in done.stdout


# What `make e2e` runs before it needs Go: make itself and the shell tools of scripts/e2e-build.sh.
TOOLS = ("make", "sh", "bash", "dirname", "awk", "sort", "head", "tail")


def tools_without_go(folder: Path, go_version: str | None) -> dict[str, str]:
    """An environment whose PATH is `folder`: TOOLS, and a `go` of that version unless None."""
    folder.mkdir()
    for name in TOOLS:
        found = shutil.which(name)
        assert found, name
        (folder / name).symlink_to(found)
    if go_version is not None:
        (folder / "go").write_text(f"#!/bin/sh\necho {go_version}\n")
        (folder / "go").chmod(0o755)
    return {**os.environ, "PATH": str(folder), "DRO_E2E_KUBECONFIG": ""}


def make_e2e(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "e2e"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def test_make_e2e_says_in_one_line_that_go_is_missing(tmp_path: Path) -> None:
    done = make_e2e(tools_without_go(tmp_path / "bin", None))
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert said == [
        "e2e-build: Go 1.26.0 or newer is needed to build the e2e control plane, and there is "
        "no go on PATH (install it from https://go.dev/dl/)"
    ]
    assert "pytest" not in done.stdout + done.stderr


def test_make_e2e_says_in_one_line_that_go_is_too_old(tmp_path: Path) -> None:
    done = make_e2e(tools_without_go(tmp_path / "bin", "go1.22.5"))
    assert done.returncode != 0
    (said,) = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert said.startswith("e2e-build: Go 1.26.0 or newer is needed")
    assert said.endswith(
        f"{tmp_path / 'bin' / 'go'} is go1.22.5 (install a newer one from https://go.dev/dl/)"
    )


def test_ci_checks_go_first_then_installs_chromium_and_runs_make_test_and_make_e2e() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [line for line in script.splitlines() if line and not line.startswith(("#", " "))]
    commands = [s for s in steps if s.startswith(("make", "bash"))]
    assert commands == [
        "bash scripts/e2e-build.sh --check",
        "make browser",
        "make test",
        "make e2e",
    ]
    assert "set -euo pipefail" in steps
