"""`dro plan`: golden pull-request comments for typical changes, on real git repositories.

One source repository (the example repo) gets an output branch from a real offline reconcile,
then one branch per kind of change. Each case plans `main` → its branch through the CLI and
compares the Markdown with `tests/golden/plan/<case>.md` (refresh with DRO_UPDATE_GOLDEN=1 and
review the diff).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from reconciler import cli, pipeline, settings
from reconciler.branch import statefiles
from tests.builders.plan import CASES, NEW_PASSWORD, OLD_PASSWORD, plan
from tests.conftest import ROOT, SourceRepo, git, make_source_repo

GOLDEN = ROOT / "tests" / "golden" / "plan"
UPDATE = os.environ.get("DRO_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_matches_golden(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    code, markdown = plan(reviewed, capsys, "--head", case, "-o", "markdown", "--exit-code")
    expected_code = {"readme-only": 0, "invalid-head": 1}.get(case, 2)
    assert code == expected_code, markdown
    golden = GOLDEN / f"{case}.md"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(markdown)
    assert markdown == golden.read_text(), "refresh with DRO_UPDATE_GOLDEN=1 and review the diff"


def test_policy_change_reports_who_moves_where_and_why(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = plan(reviewed, capsys, "--head", "policy-moves-workloads", "-o", "json")
    assert code == 0  # differences, but no --exit-code
    document = json.loads(out)
    moved = {w["workload"]: w for w in document["workloads"] if w["moved"]}
    assert moved, "a heavier ap-south weight moves replicas"
    for change in moved.values():
        assert change["after"].get("ap-south-1", 0) > change["before"].get("ap-south-1", 0)
        assert change["why"], "every moved workload says why"
    assert document["counts"]["replicasMoved"] == sum(w["moved"] for w in moved.values())
    assert document["head"]["commit"] == git(reviewed.work, "rev-parse", "policy-moves-workloads")


def test_cluster_added_and_tainted_change_the_placement(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _, added = plan(reviewed, capsys, "--head", "cluster-added", "-o", "json")
    assert json.loads(added)["clustersAdded"] == ["eu-west-3"]
    _, tainted = plan(reviewed, capsys, "--head", "cluster-tainted", "-o", "json")
    document = json.loads(tainted)
    assert document["workloads"], "a NoExecute taint moves what does not tolerate it"
    for change in document["workloads"]:
        assert "eu-west-2" in change["before"]
        assert "eu-west-2" not in change["after"]


@pytest.mark.parametrize("output", ["markdown", "json", "text"])
def test_secret_values_never_appear(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    code, out = plan(reviewed, capsys, "--head", "secret-changed", "-o", output, "--exit-code")
    assert code == 2
    assert "secret-ledger-db-credentials.yaml" in out
    assert "POSTGRES_PASSWORD" in out, "the name of a changed key may be shown"
    assert OLD_PASSWORD not in out
    assert NEW_PASSWORD not in out


def test_readme_only_has_no_differences(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = plan(reviewed, capsys, "--head", "readme-only", "-o", "json", "--exit-code")
    assert code == 0
    assert json.loads(out)["differs"] is False


def test_invalid_head_names_file_and_line(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = plan(reviewed, capsys, "--head", "invalid-head", "-o", "json")
    assert code == 1
    problems = json.loads(out)["head"]["problems"]
    assert any(re.match(r"workloads/shop/cart\.yaml:\d+: /spec/replicas: ", p) for p in problems)


def test_invalid_base_is_compared_with_the_state_in_force(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = plan(reviewed, capsys, "--head", "main", "--exit-code", "-o", "json")
    assert code == 0, "main against itself"
    capsys.readouterr()
    code = cli.main(
        [
            *("plan", "--repo", str(reviewed.work), "--base", "invalid-head", "--head", "main"),
            *("-o", "json", "--exit-code"),
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert "state in force" in document["base"]["note"]
    assert document["base"]["ref"] == "dro/rendered (in force)"
    assert code == 0, "main renders exactly what the output branch holds"


def test_plan_reads_a_remote_by_url(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    git(reviewed.work, "push", "--quiet", "origin", "replicas-changed")
    capsys.readouterr()
    code = cli.main(
        [
            *("plan", "--repo", f"file://{reviewed.bare}", "--base", "main"),
            *("--head", "replicas-changed", "--state-dir", str(tmp_path), "-o", "json"),
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    (change,) = document["workloads"]
    assert change["workload"] == "shop/Deployment.apps/frontend"
    # `after`/`before` are what runs (us-east-1 runs the example's override, 5); the division's
    # counts, where an override differs, are in `dividedAfter`/`dividedBefore`
    assert change["after"]["us-east-1"] == 5
    assert sum({**change["after"], **change["dividedAfter"]}.values()) == 9
    assert sum({**change["before"], **change["dividedBefore"]}.values()) == 6


def test_plan_uses_the_last_committed_observations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    pipeline.reconcile_once(settings.Settings(repo=str(repo.bare), state_dir=tmp_path / "state"))
    rendered = tmp_path / "rendered"
    git(tmp_path, "clone", "--quiet", "--branch", "dro/rendered", str(repo.bare), str(rendered))
    observed = (  # as dro writes it, seal included (`statefiles`)
        "apiVersion: multicluster.io/v1alpha1\nkind: ClusterObservation\n"
        "metadata: {name: eu-west-1}\n"
        "status:\n  source: observed\n  observedAt: '2026-01-01T00:00:00Z'\n"
        "  capacity: {cpu: 100, memory: 1000000000000, pods: 1000}\n"
        "  used: {cpu: 95, memory: 500000000000, pods: 500}\n"
    )
    (rendered / "status/clusters/eu-west-1.yaml").write_bytes(statefiles.seal(observed.encode()))
    git(rendered, "commit", "--quiet", "-am", "observed")
    git(rendered, "push", "--quiet", "origin", "dro/rendered")
    git(repo.work, "fetch", "--quiet", "origin")
    CASES["replicas-changed"](repo.work)
    git(repo.work, "checkout", "--quiet", "-b", "more")
    git(repo.work, "commit", "--quiet", "-am", "more")
    code, out = plan(repo, capsys, "--head", "more", "-o", "json")
    assert code == 0
    levels = {c["cluster"]: c for c in json.loads(out)["waterLevels"]}
    # observed 95 % used, less what re-balancing moves off so full a cluster
    assert 0.85 < levels["eu-west-1"]["before"]["cpu"] <= 0.95
    assert levels["eu-west-2"]["before"]["cpu"] < 0.5, "declared figures where none observed"


def test_plan_names_each_changed_file_by_its_path_on_the_output_branch(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base side's files are on `dro/rendered` at exactly the paths the plan names."""
    _, out = plan(reviewed, capsys, "--head", "cluster-tainted", "-o", "json")
    files = [f for c in json.loads(out)["manifests"] for f in c["files"]]
    assert files
    branch = set(git(reviewed.work, "ls-tree", "-r", "--name-only", "origin/dro/rendered").split())
    for file in files:
        assert file["path"].startswith("clusters/"), file["path"]
        if file["status"] != "added":
            assert file["path"] in branch
            assert f"--- a/{file['path']}\n" in file["diff"]
        else:
            assert f"+++ b/{file['path']}\n" in file["diff"]
