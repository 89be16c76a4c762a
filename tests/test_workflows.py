"""The e2e workflow, written here but run only where kind can: it must parse and run `make e2e`."""

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


def test_make_e2e_refuses_to_run_without_a_cluster() -> None:
    done = subprocess.run(
        ["make", "-s", "e2e", "DRO_E2E_KUBECONFIG="],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DRO_E2E_KUBECONFIG": ""},
        check=False,
    )
    assert done.returncode != 0
    assert "set DRO_E2E_KUBECONFIG" in done.stdout
