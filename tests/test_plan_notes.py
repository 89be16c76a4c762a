"""`dro plan` says what it leaves out and what comes after, in every format: uncommitted
changes in the work tree, a missing output branch, every trigger of a change, the passes
that will follow, and a chart with the water-level limit and each cluster's change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler import cli
from tests.builders.plan import CASES, plan
from tests.conftest import SourceRepo, git, make_source_repo

FORMATS = ("markdown", "json", "text")


@pytest.fixture
def dirty(reviewed: SourceRepo) -> Iterator[SourceRepo]:
    """The reviewed work tree with a modified workload, a new one and a README edit, none
    committed; restored afterwards."""
    work = reviewed.work
    frontend = work / "workloads/shop/frontend.yaml"
    kept = frontend.read_text()
    frontend.write_text(kept.replace("replicas: 6", "replicas: 12"))
    (work / "workloads/shop/extra.yaml").write_text(
        (work / "workloads/shop/cart.yaml").read_text().replace("name: cart", "name: extra")
    )
    (work / "README.md").write_text("notes\n")
    try:
        yield reviewed
    finally:
        git(work, "checkout", "--quiet", "--", ".")
        (work / "workloads/shop/extra.yaml").unlink()
        git(work, "clean", "--quiet", "-f")


@pytest.mark.parametrize("output", FORMATS)
def test_uncommitted_changes_are_named(
    dirty: SourceRepo, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    code, out = plan(dirty, capsys, "--head", "HEAD", "-o", output, "--exit-code")
    assert code == 0, "the edits are not planned: HEAD against main has no differences"
    text = " ".join(json.loads(out)["notes"]) if output == "json" else " ".join(out.split())
    assert "2 uncommitted changes that this plan does not include" in text
    assert "workloads/shop/frontend.yaml (modified)" in text
    assert "workloads/shop/extra.yaml (untracked)" in text
    assert "README.md" not in text, "only source files are planned, so only they are named"


def test_a_clean_work_tree_says_nothing(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = plan(reviewed, capsys, "--head", "replicas-changed", "-o", "json")
    assert json.loads(out)["notes"] == []
    _, markdown = plan(reviewed, capsys, "--head", "replicas-changed", "-o", "markdown")
    assert "Not in this plan" not in markdown


@pytest.mark.parametrize("output", FORMATS)
def test_no_output_branch_says_declared_capacity_was_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    repo = make_source_repo(tmp_path)
    git(repo.work, "checkout", "--quiet", "-b", "more")
    CASES["replicas-changed"](repo.work)
    git(repo.work, "commit", "--quiet", "-am", "more")
    code, out = plan(repo, capsys, "--head", "more", "-o", output)
    assert code == 0
    text = " ".join(json.loads(out)["notes"]) if output == "json" else " ".join(out.split())
    assert "No output branch `dro/rendered` was found" in text.replace("'", "`")
    assert "declared capacity and allocation were used" in text


def test_why_lists_every_trigger(reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = plan(reviewed, capsys, "--head", "policy-and-replicas", "-o", "json")
    assert code == 0
    (frontend,) = (
        w for w in json.loads(out)["workloads"] if w["workload"] == "shop/Deployment.apps/frontend"
    )
    assert "the placement changed" in frontend["triggers"]
    assert "replicas changed from 6 to 9" in frontend["triggers"]
    assert frontend["why"] == "; ".join(frontend["triggers"])
    _, markdown = plan(reviewed, capsys, "--head", "policy-and-replicas", "-o", "markdown")
    assert "- the placement changed\n- replicas changed from 6 to 9\n" in markdown
    _, text = plan(reviewed, capsys, "--head", "policy-and-replicas", "-o", "text")
    assert "the placement changed" in text
    assert "replicas changed from 6 to 9" in text


@pytest.mark.parametrize("output", FORMATS)
def test_later_passes_are_announced(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    _, out = plan(reviewed, capsys, "--head", "cluster-added", "-o", output)
    said = " ".join(json.loads(out)["followUps"]) if output == "json" else " ".join(out.split())
    assert "Moves in flight: 2 old replicas of payments/Deployment.apps/fraud-scoring" in said
    assert "a later pass retires them once the new copies are observed Healthy" in said
    assert "Filling eu-west-3: this pass moves 2 replicas in; later passes move more" in said
    assert "at most 10% of the movable replicas per pass" in said


def test_nothing_follows_a_plain_scale(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = plan(reviewed, capsys, "--head", "replicas-changed", "-o", "json")
    assert json.loads(out)["followUps"] == []


def test_chart_draws_the_limit_and_the_changes(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chart = tmp_path / "levels.svg"
    code, out = plan(
        reviewed, capsys, "--head", "cluster-tainted", "-o", "json", "--chart", str(chart)
    )
    assert code == 0
    document = json.loads(out)
    assert document["waterLevelLimits"] == {"cpu": 0.85, "memory": 0.9}, "dro.yaml's"
    svg = chart.read_text(encoding="utf-8")
    assert "limit 85%" in svg, "cpu's panel"
    assert "limit 90%" in svg, "memory's panel"
    assert "water-level limit" in svg
    levels = {c["cluster"]: c for c in document["waterLevels"]}
    cpu = levels["eu-west-2"]
    change = (cpu["after"]["cpu"] - cpu["before"]["cpu"]) * 100
    assert f"−{abs(change):.1f} pp" in svg, "the tainted cluster loses load"
    assert "ap-south-staging" in svg


def test_work_tree_of_a_bare_repository_is_not_read(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = cli.main(
        ["plan", "--repo", str(reviewed.bare), "--base", "main", "--head", "main", "-o", "json"]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []
