"""A workload that falls to `defaultPlacement` by a likely slip is warned about at its line;
a repo that uses the default on purpose stays quiet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE

from reconciler import cli

FRONTEND = "workloads/shop/frontend.yaml"


def _validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str) -> list[str]:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    path = repo / FRONTEND
    if edit == "typo":
        path.write_text(path.read_text().replace("namespace: shop\n", "namespace: shopp\n", 1))
    elif edit == "no-namespace":
        path.write_text(path.read_text().replace("  namespace: shop\n", "", 1))
    assert cli.main(["validate", str(repo)]) == 0, "a warning, not an error"
    captured = capsys.readouterr()
    assert captured.out == ""
    return [row for row in captured.err.splitlines() if "defaultPlacement" in row]


def test_a_namespace_typo_is_warned_at_its_line_with_the_clusters_it_lands_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (row,) = _validate(tmp_path, capsys, "typo")
    assert row.startswith(f"{FRONTEND}:5: /metadata/namespace: warning: Deployment shopp/frontend")
    assert "has namespace 'shopp', which no placement policy selects" in row
    # Duplicated on every production cluster the default targets; the gpu cluster's taint
    # keeps it off there, as the scheduler would
    assert (
        "6 replicas on each of ap-south-1, eu-west-1, eu-west-2, us-east-1, us-east-2 "
        "(30 in all);" in row
    )
    assert "ResourcePlacementPolicy shop-web (policies/shop.yaml)" in row
    assert "did you mean 'shop'?" in row


def test_a_missing_namespace_is_warned_when_a_policy_selects_it_by_its_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (row,) = _validate(tmp_path, capsys, "no-namespace")
    assert row.startswith(f"{FRONTEND}:3: /metadata: warning: Deployment default/frontend")
    assert "has no namespace (so 'default')" in row
    assert "did you mean 'shop'?" in row


def test_the_example_repo_uses_the_default_on_purpose_and_gets_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """platform/status-page is placed by defaultPlacement on purpose: nothing is said."""
    assert _validate(tmp_path, capsys, "none") == []
    code = cli.main(["schedule", str(EXAMPLE), "-o", "json"])
    assert code == 0
    assert '"name": "status-page"' in capsys.readouterr().out
