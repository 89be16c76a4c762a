"""The `dro` commands on the example repo: pinned JSON, deterministic render, reconcile."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from conftest import EXAMPLE, SourceRepo, git

from reconciler import cli
from reconciler.cli import report
from reconciler.domain import Decision, Placed, ResourceKey
from reconciler.review import tables


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(list(args))
    return code, capsys.readouterr().out


def test_validate_example_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "validate", str(EXAMPLE))
    assert code == 0
    assert out == ""


def test_schedule_json_has_the_pinned_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "schedule", str(EXAMPLE), "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert set(document) == {"source", "decisions"}
    assert document["source"] is None
    decisions = document["decisions"]
    keys = [
        (d["resource"]["namespace"], d["resource"]["kind"], d["resource"]["name"])
        for d in decisions
    ]
    assert keys == sorted(keys)
    for decision in decisions:
        assert set(decision) == {"resource", "policy", "clusters", "unschedulable"}
        assert set(decision["resource"]) == {"apiVersion", "kind", "namespace", "name"}
        names = [c["name"] for c in decision["clusters"]]
        assert names == sorted(names)
    by_name = {(d["resource"]["kind"], d["resource"]["name"]): d for d in decisions}
    frontend = by_name[("Deployment", "frontend")]
    assert frontend["policy"] == {
        "kind": "ResourcePlacementPolicy",
        "namespace": None,
        "name": "shop-web",
    }
    assert sum(c["replicas"] for c in frontend["clusters"]) == 6
    assert by_name[("Deployment", "status-page")]["policy"] is None
    assert all(c["replicas"] is None for c in by_name[("Service", "frontend")]["clusters"])
    recommender = by_name[("Deployment", "recommender")]
    assert [c["name"] for c in recommender["clusters"]] == ["us-east-gpu"]
    assert "us-east-gpu" not in [c["name"] for c in frontend["clusters"]]


def test_schedule_yaml_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "schedule", str(EXAMPLE), "-o", "yaml")
    assert code == 0
    assert out.startswith("decisions:")
    code, out = run(capsys, "schedule", str(EXAMPLE), "-o", "table")
    assert code == 0
    assert "shop/Deployment.apps/frontend" in out
    assert "us-east-gpu" in out


def test_unschedulable_message_counts_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / "policies" / "gpu-only.yaml").write_text(
        "apiVersion: multicluster.io/v1alpha1\nkind: ResourcePlacementPolicy\n"
        "metadata: {name: gpu-only, namespace: shop}\nspec:\n"
        "  resourceSelector: {apiVersion: apps/v1, kind: Deployment, name: cart}\n"
        "  targetClusters: [{selectorType: label, values: ['accelerator=nvidia-a100']}]\n"
    )
    code, out = run(capsys, "schedule", str(repo), "-o", "json")
    assert code == 0
    cart = next(
        d
        for d in json.loads(out)["decisions"]
        if d["resource"]["name"] == "cart" and d["resource"]["kind"] == "Deployment"
    )
    assert cart["clusters"] == []
    assert cart["unschedulable"] == (
        "0/7 clusters are available: 6 not targeted by the placement, 1 untolerated taint"
    )


def test_render_is_byte_identical_across_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    assert run(capsys, "render", str(EXAMPLE), "--out", str(first))[0] == 0
    assert run(capsys, "render", str(EXAMPLE), "--out", str(second))[0] == 0
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    assert Path("clusters/eu-west-1/kustomization.yaml") in files
    assert Path("decisions/shop/deployment-frontend.yaml") in files
    assert Path("clusters/eu-west-1/_cluster/namespace-shop.yaml") in files
    assert (
        Path("clusters/eu-west-1/payments/horizontalpodautoscaler.autoscaling-checkout.yaml")
        in files
    )


def test_render_refuses_a_non_empty_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code = cli.main(["render", str(EXAMPLE), "--out", str(tmp_path)])
    assert code == 1
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_reconcile_commits_once_then_nothing(
    source_repo: SourceRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = (
        "reconcile",
        "--once",
        "--repo",
        str(source_repo.bare),
        "--state-dir",
        str(tmp_path / "state"),
    )
    code, out = run(capsys, *args)
    assert code == 0
    assert "apply skipped" in out
    tip = source_repo.branch_sha("dro/rendered")
    assert tip is not None
    source_sha = git(source_repo.bare, "rev-parse", "main")
    assert f"Dro-Source-Commit: {source_sha}" in git(
        source_repo.bare, "log", "-1", "--format=%B", tip
    )
    code, out = run(capsys, *args)
    assert code == 0
    assert "unchanged (no commit)" in out
    assert source_repo.branch_sha("dro/rendered") == tip
    # A change to one workload touches only that workload's files.
    frontend = source_repo.work / "workloads/shop/frontend.yaml"
    frontend.write_text(frontend.read_text().replace("replicas: 6", "replicas: 7"))
    source_repo.commit("scale frontend")
    assert run(capsys, *args)[0] == 0
    new_tip = source_repo.branch_sha("dro/rendered")
    changed = git(source_repo.bare, "diff", "--name-only", tip, str(new_tip)).splitlines()
    assert changed
    # ... and the status files of the clusters whose `placed` (dro's own requests) changed.
    assert all(
        "frontend" in path or path == "README.md" or path.startswith("status/clusters/")
        for path in changed
    )
    for path in (p for p in changed if p.startswith("status/clusters/")):
        cluster = path.removeprefix("status/clusters/").removesuffix(".yaml")
        assert f"clusters/{cluster}/shop/deployment-frontend.yaml" in changed
    assert "decisions/shop/deployment-frontend.yaml" in changed


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("dro ")
    for command in ("validate", "schedule", "render", "reconcile"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main([command, "--help"])
        assert exit_info.value.code == 0
        assert "usage: dro" in capsys.readouterr().out


def test_large_fleet_table_lists_clusters_per_row() -> None:
    names = [f"c{i:02d}" for i in range(report.MATRIX_COLUMNS + 1)]
    key = ResourceKey(group="apps", kind="Deployment", namespace="shop", name="web")
    placed = (Placed("c03", 2), Placed("c11", 1))
    decision = Decision(key=key, api_version="apps/v1", policy=None, clusters=placed)
    out = StringIO()
    tables.render(report.placement_table([decision], names), out)
    row = next(line for line in out.getvalue().splitlines() if "shop/" in line)
    assert row.split() == ["shop/Deployment.apps/web", "3", "c03=2", "c11=1"]
    assert "c12" not in out.getvalue()


def test_validate_warns_about_a_removed_cluster_that_holds_replicas(
    source_repo: SourceRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = ("--state-dir", str(tmp_path / "state"))
    assert run(capsys, "reconcile", "--once", "--repo", str(source_repo.bare), *state)[0] == 0
    source_repo.write({"clusters/us-east-2.yaml": None})
    source_repo.commit("remove us-east-2 without draining it")
    code = cli.main(["validate", "--repo", str(source_repo.bare), *state])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == ""
    (warning,) = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert "cluster us-east-2 was removed while it still holds" in warning
    assert "Deployment.apps" in warning
