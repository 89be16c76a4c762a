"""The import contracts in pyproject.toml hold, and each kind fails on a deliberate violation.

A copy of the package gets one planted import at a time; `lint-imports` must then report the
contract that forbids it by name, and exit non-zero. The unmodified copy passes, so a failure
below is the planted import and nothing else.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

VIOLATIONS = {
    "domain imports a face": (
        "reconciler/domain/base.py",
        "from reconciler import cli",
        "the layers of reconciler/__init__.py",
    ),
    "one stage imports a sibling": (
        "reconciler/schedule/batch.py",
        "from reconciler import validate",
        "the layers of reconciler/__init__.py",
    ),
    "a pure stage imports git": (
        "reconciler/render/services.py",
        "from reconciler.git import gitrepo",
        "pure stages import neither git nor the cluster client",
    ),
    "a plugin imports another plugin": (
        "reconciler/schedule/plugins/balance.py",
        "from reconciler.schedule.plugins import capacity",
        "scheduler plugins are independent of each other",
    ),
    "a third-party library outside its module": (
        "reconciler/validate/names.py",
        "import yaml",
        "pyyaml only in reconciler.yamlio",
    ),
}


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "reconciler", tmp_path / "reconciler", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    """The project as it is: every contract kept."""
    done = _lint(_copy(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_a_planted_import_breaks_its_contract(tmp_path: Path, case: str) -> None:
    """One forbidden import, planted: the contract that forbids it is reported broken."""
    module, line, contract = VIOLATIONS[case]
    root = _copy(tmp_path)
    target = root / module
    text = target.read_text(encoding="utf-8")
    head, sep, tail = text.partition("from __future__ import annotations\n")
    assert sep, f"{module} has no __future__ import to plant after"
    target.write_text(head + sep + line + "\n" + tail, encoding="utf-8")

    done = _lint(root)

    assert done.returncode != 0, done.stdout
    broken = [row for row in done.stdout.splitlines() if " BROKEN" in row]
    assert any(row.startswith(contract) for row in broken), done.stdout
