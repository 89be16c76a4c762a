"""A rollout whose template in force comes from a source commit that is gone (the source's
history rewritten and force-pushed, read by a dro with a fresh cache): the clusters not yet
reached keep the objects the output branch last rendered, never the new template; the
decision's `status.rollout` and a warning event say so, and the rollout goes on. Without those
objects either, the workload fails for the pass with an error naming the commit, and nothing
of it changes."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
import yaml
from structlog.testing import capture_logs

from reconciler import cli, laststate, load, pipeline
from reconciler.branch import paths
from reconciler.domain import ResourceKey
from tests.conftest import git
from tests.rolloutfleet import NAMES, rollout_fleet, web

KEY = ResourceKey("apps", "Deployment", "shop", "web")


def test_a_gone_template_commit_keeps_the_objects_last_rendered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 2}") as fleet:
        fleet.reconcile(0)
        first = fleet.rollout()["commit"]
        fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        fleet.reconcile(100)
        reached = dict.fromkeys(NAMES[:2], "web:2") | dict.fromkeys(NAMES[2:], "web:1")
        assert fleet.rendered_images() == reached
        # the source's history squashed and force-pushed; a dro with a fresh cache reads it
        work = fleet.repo.work
        git(work, "checkout", "--quiet", "--orphan", "squashed")
        git(work, "commit", "--quiet", "-m", "squashed history")
        git(work, "push", "--quiet", "--force", "origin", "squashed:main")
        git(fleet.repo.bare, "reflog", "expire", "--expire=now", "--all")
        git(fleet.repo.bare, "gc", "--quiet", "--prune=now")
        assert first not in git(fleet.repo.bare, "rev-list", "--all").split()
        fleet.settings = dataclasses.replace(fleet.settings, state_dir=tmp_path / "fresh")
        laststate.MEMO.clear()  # a new dro process: nothing remembered from earlier passes
        with capture_logs() as events:
            fleet.reconcile(200)
        assert fleet.rendered_images() == reached, "never the new template, silently"
        assert fleet.live_images() == reached
        gone = [e for e in events if e["event"] == "rollout_template_gone"]
        assert [(e["log_level"], e["commit"], e["clusters"]) for e in gone] == [
            ("warning", first, list(NAMES[2:]))
        ]
        message = fleet.rollout()["message"]
        assert f"the template of commit {first[:12]} is gone" in message
        assert ", ".join(NAMES[2:]) + " keep the objects last rendered" in message
        capsys.readouterr()
        where = ["--repo", str(fleet.repo.bare), "--state-dir", str(fleet.settings.state_dir)]
        assert cli.main(["explain", *where, "shop/deploy/web"]) == 0
        explained = " ".join(capsys.readouterr().out.split())
        assert f"the template of commit {first[:12]} is gone" in explained
        at = 300.0
        while fleet.rollout()["phase"] != "Complete":
            assert at < 2000, "the rollout goes on from there"
            fleet.reconcile(at)
            at += 100
        assert fleet.live_images() == dict.fromkeys(NAMES, "web:2")


def test_without_the_last_rendered_objects_the_workload_fails_and_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 1}") as fleet:
        fleet.reconcile(0)
        first = fleet.rollout()["commit"]
        fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        fleet.reconcile(100)
        last = laststate.online(fleet.settings)
        planned_before = {
            p: d for p, d in fleet_tree(fleet).items() if "shop" in p and "deployment-web" in p
        }
    source = load.from_directory(fleet.repo.work)
    before = dataclasses.replace(last, templates=lambda commit, key: None, kept=lambda path: None)
    with capture_logs() as events:  # offline, eu-west-2 would start; the others keep web:1
        planned, _ = pipeline.plan(source, before=before, now=pipeline_now(fleet))
    (failed,) = [e for e in events if e["event"] == "rollout_template_missing"]
    assert failed["log_level"] == "error"
    assert failed["commit"] == first
    assert first in failed["error"]
    assert "\n" not in failed["error"], "one line"
    decision = next(d for d in planned.decisions if d.key == KEY)
    previous = next(d for d in last.decisions if d.key == KEY)
    assert decision == previous, "the last pass's decision stands"
    after = {p: d for p, d in planned.tree.items() if "shop" in p and "deployment-web" in p}
    path = paths.decision_path(KEY)
    assert after[path] == planned_before[path], "its decision file stays as it was"
    reached = paths.object_path(NAMES[0], KEY)  # the new template, as the last pass rendered it
    assert after[reached] == planned_before[reached]
    for name in NAMES[1:]:  # no object of the old template to keep: none, never web:2
        assert paths.object_path(name, KEY) not in after


def fleet_tree(fleet: object) -> dict[str, bytes]:
    """Every file of dro/rendered's tip."""
    bare = fleet.repo.bare  # type: ignore[attr-defined]
    names = git(bare, "ls-tree", "-r", "--name-only", "dro/rendered").split()
    return {
        n: subprocess.run(
            ["git", "show", f"dro/rendered:{n}"], cwd=bare, check=True, capture_output=True
        ).stdout
        for n in names
    }


def pipeline_now(fleet: object) -> float:
    return float(fleet.clock[0]) + 100  # type: ignore[attr-defined]


def test_dro_render_renders_every_rollout_at_its_end_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["render", "--help"])
    assert "rendered at its end state" in " ".join(capsys.readouterr().out.split())
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 1}") as fleet:
        fleet.reconcile(0)
        fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        fleet.reconcile(100)
        assert fleet.rendered_images() == {n: "web:2" if n == NAMES[0] else "web:1" for n in NAMES}
        out = tmp_path / "out"
        settings = ["--state-dir", str(tmp_path / "cli")]
        assert (
            cli.main(["render", "--repo", str(fleet.repo.bare), "--out", str(out), *settings]) == 0
        )
    for name in NAMES:
        (doc,) = yaml.safe_load_all((out / paths.object_path(name, KEY)).read_text())
        assert doc["spec"]["template"]["spec"]["containers"][0]["image"] == "web:2"
