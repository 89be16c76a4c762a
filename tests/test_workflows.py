"""The e2e workflow, written here but run only where kind can: it must parse and run `make e2e`;
and `make e2e` fails when it collects nothing."""

from __future__ import annotations

import os
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
