"""Prediction end to end: `placed` and `forecast` in the status files, and the status history
read back from a real output branch that a few passes of `dro reconcile` built."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pygit2
import pytest
import yaml

from reconciler import cli, pipeline
from reconciler.branch import paths, statefiles
from reconciler.domain import durations
from reconciler.domain.reasons import MoveCode
from reconciler.git import gitrepo
from reconciler.load import history
from reconciler.settings import Settings
from tests.conftest import EXAMPLE, GIT_ENV, SourceRepo

START = 1_767_600_000.0  # 2026-01-05T08:00:00Z
STEP = 600.0
PREDICTION = """  prediction:
    enabled: true
    horizon: 1h
    window: 1d
    step: 10m
"""
EAST = 'allocated: {cpu: "300", memory: 1.2Ti, pods: "2100"}'
EAST_COST = "cost: {cpu: 0.028, memory: 0.0037}"
CHEAPEST = "cost: {cpu: 0.02, memory: 0.0025}"
"""us-east-1 made the cheapest cluster, so cost steering keeps replicas there until the
forecast moves them off."""


def passes(
    repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: list[int]
) -> tuple[Settings, list[pipeline.PassResult]]:
    """One pass every 10 minutes, us-east-1's declared cpu usage `cpus[i]` at pass i."""
    settings = Settings(repo=str(repo.bare), state_dir=tmp_path / "state")
    config = (repo.work / "dro.yaml").read_text()
    repo.write({"dro.yaml": config + PREDICTION})
    east = (repo.work / "clusters/us-east-1.yaml").read_text()
    assert EAST in east
    assert EAST_COST in east
    east = east.replace(EAST_COST, CHEAPEST)
    results = []
    for i, cpu in enumerate(cpus):
        repo.write({"clusters/us-east-1.yaml": east.replace('cpu: "300"', f'cpu: "{cpu}"', 1)})
        when = START + i * STEP
        # The output branch's commits carry their source commit's time.
        dated = {**os.environ, **GIT_ENV, "GIT_COMMITTER_DATE": f"@{int(when)} +0000"}
        for args in (
            ["add", "--all"],
            ["commit", "-qm", f"at {cpu}"],
            ["push", "-q", "origin", "main"],
        ):
            subprocess.run(["git", *args], cwd=repo.work, env=dated, check=True)
        monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda when=when: when))
        results.append(pipeline.reconcile_once(settings))
    return settings, results


def status_of(result: pipeline.PassResult, cluster: str) -> dict[str, object]:
    document = yaml.safe_load(result.planned.tree[paths.cluster_status_path(cluster)])
    status: dict[str, object] = document["status"]
    return status


def test_history_is_read_back_from_the_output_branch(
    source_repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus = [300, 320, 340, 360, 380]
    settings, results = passes(source_repo, tmp_path, monkeypatch, cpus)
    now = START + (len(cpus) - 1) * STEP
    read = history.reader(str(source_repo.bare), settings.output_branch, settings.state_dir)
    found = read(now, 86_400.0)
    east = found["us-east-1"]
    assert [s.at for s in east] == [START + i * STEP for i in range(len(cpus))]
    assert [s.used["cpu"] for s in east] == [float(c) for c in cpus]
    placed = status_of(results[-1], "us-east-1")["placed"]
    assert isinstance(placed, dict)
    assert east[-1].placed["cpu"] == pytest.approx(float(placed["cpu"].rstrip("m")) / 1000)
    assert east[-1].background["cpu"] == pytest.approx(380 - east[-1].placed["cpu"])
    # A window shorter than the history keeps only the newest passes.
    assert len(read(now, 2 * STEP)["us-east-1"]) == 3
    # Clusters whose figures never changed have one sample per pass too.
    assert len(found["eu-west-1"]) == len(cpus)


def test_status_files_show_the_forecast_and_placed(
    source_repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, results = passes(source_repo, tmp_path, monkeypatch, [300, 320, 340, 360])
    first = status_of(results[0], "us-east-1")["forecast"]
    assert isinstance(first, dict)
    assert first["model"] == "last-value", "the first pass has only its own sample"
    last = status_of(results[-1], "us-east-1")
    forecast = last["forecast"]
    assert isinstance(forecast, dict)
    assert forecast["model"] == "holt", "four samples: Holt's linear trend"
    assert forecast["peakAt"] == "2026-01-05T09:30:00Z", "a rising trend peaks at the horizon"
    placed = last["placed"]
    assert isinstance(placed, dict)
    level = float(str(forecast["level"]["cpu"]).rstrip("m")) / 1000
    background_now = 360 - float(str(placed["cpu"]).rstrip("m")) / 1000
    assert level > background_now + 20, "20 more cores every 10 minutes, for an hour ahead"


def test_without_prediction_status_files_have_no_forecast(
    source_repo: SourceRepo, tmp_path: Path
) -> None:
    settings = Settings(repo=str(source_repo.bare), state_dir=tmp_path / "state")
    result = pipeline.reconcile_once(settings)
    status = status_of(result, "us-east-1")
    assert "forecast" not in status
    assert "placed" in status


def test_observed_figures_are_read_by_their_time_not_the_commits(tmp_path: Path) -> None:
    """Passes over an unchanged source commit carry its (old) time; the observations they
    record are recent, and the history follows `observedAt`."""
    repo = pygit2.init_repository(str(tmp_path / "out.git"), bare=True)
    old = int(START - 30 * 86_400)  # the source commit, a month before
    tip = None
    for i in range(6):
        body = {
            "apiVersion": "multicluster.io/v1alpha1",
            "kind": "ClusterObservation",
            "metadata": {"name": "a"},
            "status": {
                "source": "observed",
                "observedAt": durations.rfc3339(START + i * STEP),
                "capacity": {"cpu": "100"},
                "used": {"cpu": str(40 + i)},
                "placed": {"cpu": "4"},
                **({"stale": True} if i == 2 else {}),
            },
        }
        data = statefiles.seal(yaml.safe_dump(body).encode())
        tree = gitrepo.TreeWriter(repo).write({"status/clusters/a.yaml": data})
        oid = gitrepo.commit(
            repo, branch="out", tree=tree, parent=tip, message=f"{i}", author=("t", "t@t"), time=old
        )
        tip = repo[oid]
    found = history.read(repo, tip, now=START + 5 * STEP, window=3 * STEP)
    # i = 2 is stale (the last figures copied forward): left out; i < 2 is before the window.
    assert [s.used["cpu"] for s in found["a"]] == [43.0, 44.0, 45.0]
    assert [s.at for s in found["a"]] == [START + i * STEP for i in (3, 4, 5)]
    assert found["a"][-1].background == {"cpu": 41.0}


def test_explain_shows_each_clusters_forecast(
    source_repo: SourceRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _ = passes(source_repo, tmp_path, monkeypatch, [300, 320, 340, 360])
    capsys.readouterr()
    where = ["--repo", str(source_repo.bare), "--state-dir", str(settings.state_dir)]
    assert cli.main(["explain", "shop/Deployment/frontend", *where]) == 0
    out = capsys.readouterr().out
    assert "forecast background load" in out
    east = next(
        line for line in out.splitlines() if line.startswith("us-east-1") and "holt" in line
    )
    assert "cpu " in east
    assert cli.main(["explain", "shop/Deployment/frontend", *where, "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["forecasts"]["us-east-1"]["model"] == "holt"
    assert document["forecasts"]["us-east-1"]["samples"] == 4


def test_passes_over_an_unchanged_source_converge_with_prediction_on(
    source_repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rising trend moves replicas off us-east-1 ahead of its peak; the passes after it
    retire the old copies, record the new `placed`, and then commit nothing more."""
    settings, results = passes(source_repo, tmp_path, monkeypatch, [300, 340, 380, 420])
    moves = [m for r in results for d in r.planned.decisions for m in d.moves]
    assert any(m.reason.code is MoveCode.FORECAST and m.source == "us-east-1" for m in moves)
    commits = [pipeline.reconcile_once(settings).commit for _ in range(4)]
    assert commits[-2:] == [None, None], commits
    steady = pipeline.reconcile_once(settings)
    assert steady.commit is None
    made = {(d.key, m) for r in results for d in r.planned.decisions for m in d.moves}
    assert not [m for d in steady.planned.decisions for m in d.moves if (d.key, m) not in made]


def test_render_writes_the_forecast_the_same_bytes_twice(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    shutil.copytree(EXAMPLE, source)
    (source / "dro.yaml").write_text((source / "dro.yaml").read_text() + PREDICTION)
    trees = []
    for name in ("one", "two"):
        assert cli.main(["render", str(source), "--out", str(tmp_path / name)]) == 0
        trees.append(
            {
                p.relative_to(tmp_path / name): p.read_bytes()
                for p in (tmp_path / name).rglob("*.yaml")
            }
        )
    assert trees[0] == trees[1]
    status = yaml.safe_load(trees[0][Path(paths.cluster_status_path("us-east-1"))])["status"]
    assert status["forecast"]["model"] == "last-value", "a directory has no history"
    assert status["forecast"]["level"]["cpu"] == status["allocated"]["cpu"]
