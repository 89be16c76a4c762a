"""The API contract suite (tests/contract), which `make test` runs against the emulator, run
against a real API server of the fleet: every client-only test must pass there, and the only
tests skipped are the emulator-only ones (seeding, counters, faults, the emulator's CLI).

It runs as its own pytest process with DRO_E2E_KUBECONFIG and DRO_E2E_CONTEXT naming one of
the fleet's clusters, the way an operator runs it against a cluster of theirs; its JUnit report
says what passed and what was skipped, and why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from tests.e2e.controlplane import ROOT, Fleet

CLUSTER = "e2e-a"
EMULATOR_ONLY = "emulator-only"


def outcomes(report: Path) -> dict[str, str]:
    """Each test case of a JUnit report (module::name) and its outcome, or its skip reason."""
    found = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = child.tag
            elif child.tag == "skipped":
                outcome = f"skipped: {child.get('message', '')}"
        found[name] = outcome
    return found


def collected() -> set[str]:
    """The suite's test cases (module::name), as `make test` collects them."""
    env = {**os.environ, "DRO_E2E_KUBECONFIG": ""}
    listing = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "tests/contract"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    names = set()
    for line in listing.splitlines():
        path, _, name = line.partition("::")
        if name and path.endswith(".py"):
            names.add(f"{path.removesuffix('.py').replace('/', '.')}::{name}")
    return names


def test_the_contract_suite_passes_against_a_real_api_server(fleet: Fleet, tmp_path: Path) -> None:
    report = tmp_path / "contract.xml"
    env = {**os.environ, "DRO_E2E_KUBECONFIG": str(fleet.kubeconfig), "DRO_E2E_CONTEXT": CLUSTER}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/contract",
         f"--junitxml={report}", "-o", "junit_family=xunit2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    results = outcomes(report)
    assert set(results) == collected()  # every test ran here, none dropped out
    emulator_only = {name for name in results if ".test_emulator::" in name}
    assert emulator_only
    for name, outcome in results.items():
        if name in emulator_only:
            assert outcome.startswith(f"skipped: {EMULATOR_ONLY}"), (name, outcome)
        else:
            assert outcome == "passed", (name, outcome)
