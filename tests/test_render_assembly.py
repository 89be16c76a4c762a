"""The output tree is assembled in one place: `render.tree`, which `pipeline.plan` commits and
`dro render` writes, so `dro render --out DIR` holds the files a reconcile pass commits,
`status/workloads/` among them when the clusters were observed."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from conftest import EXAMPLE, SourceRepo

from reconciler import cli, live, load, pipeline, render, schedule, validate
from reconciler.branch import paths
from reconciler.cli import render as cli_render
from reconciler.domain import Observation, Spec

OBSERVED_AT = "2024-05-01T12:00:00Z"


def _written(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by its relative path (without `dro render`'s marker)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != ".dro-render"
    }


def _branch_files(bare: Path, branch: str) -> dict[str, bytes]:
    """Every file of the tip of `branch` in the bare repository `bare`."""
    repo = pygit2.Repository(str(bare))
    files: dict[str, bytes] = {}

    def walk(tree: pygit2.Tree, prefix: str) -> None:
        for entry in tree:
            obj = repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                walk(obj, f"{prefix}{entry.name}/")
            else:
                assert isinstance(obj, pygit2.Blob)
                files[f"{prefix}{entry.name}"] = obj.data

    commit = repo.revparse_single(f"refs/heads/{branch}")
    assert isinstance(commit, pygit2.Commit)
    walk(commit.tree, "")
    return files


def _observer(spec: Spec) -> live.Observed:
    """Every cluster observed at its declared figures, every workload Healthy on it."""
    keys = [w.key for w in spec.workloads]
    return live.Observed(
        observations={
            c.name: Observation(
                cluster=c.name,
                capacity=dict(c.capacity),
                used=dict(c.allocated),
                largest_node_free=dict(c.largest_node_free),
                observed_at=OBSERVED_AT,
                health=dict.fromkeys(keys, ("Healthy", "")),
            )
            for c in spec.clusters
        }
    )


def test_dro_render_writes_the_tree_reconcile_once_commits(
    source_repo: SourceRepo, tmp_path: Path
) -> None:
    repo = ["--repo", str(source_repo.bare)]
    out = tmp_path / "out"
    assert cli.main(["render", *repo, "--state-dir", str(tmp_path / "a"), "--out", str(out)]) == 0
    state = ["--state-dir", str(tmp_path / "b")]
    assert cli.main(["reconcile", "--once", *repo, *state]) == 0
    committed = _branch_files(source_repo.bare, "dro/rendered")
    assert sorted(_written(out)) == sorted(committed)
    assert _written(out) == committed


def test_dro_render_writes_workload_health_as_the_pass_commits_it(tmp_path: Path) -> None:
    source = load.from_directory(EXAMPLE)
    planned, observed = pipeline.plan(source, observer=_observer)
    health = [p for p in planned.tree if p.startswith(paths.STATUS_WORKLOADS)]
    assert health, "a pass that observed its clusters commits status/workloads/"
    seen = cli_render.Seen(observations=observed.observations, suspended=observed.suspended)
    cli_render.render_to(tmp_path, planned.spec, planned.decisions, seen)
    written = _written(tmp_path)
    assert sorted(p for p in written if p.startswith(paths.STATUS_WORKLOADS)) == health
    assert written == planned.tree


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_the_shards_of_an_observed_tree_make_the_whole_tree(parts: int) -> None:
    spec = validate.spec(load.from_directory(EXAMPLE))
    decisions = schedule.place(spec)
    observations = _observer(spec).observations
    whole = render.tree(spec, decisions, observations=observations)
    union: dict[str, bytes] = {}
    for part in range(parts):
        shard = render.tree(spec, decisions, observations=observations, shard=(part, parts))
        assert not union.keys() & shard.keys()
        union.update(shard)
    assert union == whole
    assert any(p.startswith(paths.STATUS_WORKLOADS) for p in whole)
