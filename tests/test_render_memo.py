"""A warm render (`render.memo`, kept in `pipeline.Warm` by `dro run`) gives the same bytes and
the same commits as a cold one, over a sequence of changes to the source.

Two output branches of one source repository: `warm` is written by passes that share one
`Warm`, `cold` by passes that each start from nothing. Every pass of both runs at the same
frozen time, so the trees and the commit ids must be equal, while the warm passes reuse the
renders of the workloads that did not change.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from reconciler import load, pipeline, render, schedule, settings, validate
from reconciler.branch import paths, statefiles
from reconciler.domain import Decision
from tests.conftest import EXAMPLE, SourceRepo, make_source_repo

NOW = 1_790_000_000.0


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(work: Path) -> None:
        text = (work / path).read_text()
        assert old in text, f"{path} no longer holds {old!r}"
        (work / path).write_text(text.replace(old, new, 1))

    return change


def _add_workload(work: Path) -> None:
    text = (work / "workloads/shop/edge-cache.yaml").read_text()
    (work / "workloads/shop/edge-cache-2.yaml").write_text(text.replace("edge-cache", "edge-two"))


def _remove_workload(work: Path) -> None:
    (work / "workloads/shop/edge-cache-2.yaml").unlink()
    (work / "workloads/shop/search.yaml").unlink()


STEPS: list[tuple[str, Callable[[Path], None] | None]] = [
    ("first pass", None),
    ("nothing changed", None),
    ("workload edited", _edit("workloads/shop/frontend.yaml", "replicas: 6", "replicas: 9")),
    ("workload added", _add_workload),
    ("workloads removed", _remove_workload),
    (
        "policy changed",
        _edit(
            "policies/shop.yaml",
            "{labels: {region: ap-south}, weight: 1}",
            "{labels: {region: ap-south}, weight: 3}",
        ),
    ),
    (
        "override changed",
        _edit("policies/overrides.yaml", "shop/frontend:3.4.1", "shop/frontend:3.5.0"),
    ),
    (
        "cluster capacity changed",
        _edit("clusters/eu-west-1.yaml", 'capacity: {cpu: "256"', 'capacity: {cpu: "128"'),
    ),
    (
        "an override's cluster leaves its region",
        _edit("clusters/eu-west-2.yaml", "region: eu-west", "region: eu-central"),
    ),
]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SourceRepo:
    """The example repo, with every pass's clock frozen at NOW."""
    monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda: NOW))
    return make_source_repo(tmp_path / "source")


def _pass(repo: SourceRepo, state: Path, branch: str, warm: pipeline.Warm) -> pipeline.PassResult:
    chosen = settings.Settings(repo=str(repo.bare), state_dir=state, output_branch=branch)
    return pipeline.reconcile_once(chosen, warm=warm)


def test_warm_passes_write_the_bytes_and_commits_of_cold_ones(
    repo: SourceRepo, tmp_path: Path
) -> None:
    warm = pipeline.Warm()
    reused = []
    for step, change in STEPS:
        if change is not None:
            change(repo.work)
            repo.commit(step)
        hits = warm.render.hits
        warmed = _pass(repo, tmp_path / "warm", "warm", warm)
        cold_state = tmp_path / "cold"
        cold = _pass(repo, cold_state, "cold", pipeline.Warm())
        shutil.rmtree(cold_state)  # the next cold pass starts from the remote alone
        assert warmed.planned.tree == cold.planned.tree, step
        assert warmed.commit == cold.commit, step
        reused.append(warm.render.hits - hits)
    assert reused[0] == 0
    assert all(count > 0 for count in reused[1:]), reused


def _read_back(tree: dict[str, bytes], decisions: list[Decision]) -> list[Decision]:
    """The decisions as the next pass has them: their diagnosis is the text written."""
    return [
        replace(d, recorded=statefiles.decision(path, tree[path]).recorded)
        for d in decisions
        for path in [paths.decision_path(d.key)]
    ]


def test_only_the_workload_whose_input_changed_is_rendered_again() -> None:
    spec = validate.spec(load.from_directory(EXAMPLE))
    decisions = _read_back(render.tree(spec, schedule.place(spec)), schedule.place(spec))
    memo = render.memo.Memo()
    first = render.tree(spec, decisions, remembered=memo)
    assert (memo.hits, memo.misses) == (0, len(decisions))
    assert render.tree(spec, decisions, remembered=memo) == first
    assert (memo.hits, memo.misses) == (len(decisions), len(decisions))

    edited = next(w for w in spec.workloads if w.key.name == "frontend")
    manifest = {**edited.manifest, "spec": {**edited.manifest["spec"], "minReadySeconds": 7}}
    changed = replace(
        spec,
        workloads=tuple(
            replace(w, manifest=manifest) if w is edited else w for w in spec.workloads
        ),
    )
    warm = render.tree(changed, decisions, remembered=memo)
    assert warm == render.tree(changed, decisions)
    assert warm != first
    assert (memo.hits, memo.misses) == (2 * len(decisions) - 1, len(decisions) + 1)


def test_a_number_written_otherwise_is_a_change() -> None:
    """`1 == 1.0 == True` in Python, but YAML writes them apart: the memo must too."""
    spec = validate.spec(load.from_directory(EXAMPLE))
    decisions = _read_back(render.tree(spec, schedule.place(spec)), schedule.place(spec))
    memo = render.memo.Memo()
    edited = next(w for w in spec.workloads if w.key.name == "frontend")
    trees = []
    for value in (1, 1.0, True):
        manifest = {
            **edited.manifest,
            "spec": {**edited.manifest["spec"], "minReadySeconds": value},
        }
        workloads = tuple(
            replace(w, manifest=manifest) if w is edited else w for w in spec.workloads
        )
        changed = replace(spec, workloads=workloads)
        warm = render.tree(changed, decisions, remembered=memo)
        assert warm == render.tree(changed, decisions), value
        trees.append(warm)
    assert trees[0] != trees[1] != trees[2]
