"""Where a rollout stands, as users see it: `dro explain`, `dro plan`, the output README, the
commit subjects and the metrics; offline passes (no kubeconfig) move one wave each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler import cli
from reconciler.branch import summary
from reconciler.render import rolloutview
from reconciler.service.metrics import Metrics
from tests.conftest import SourceRepo, git, make_source_repo
from tests.rolloutfleet import NAMES, cluster_file, dro_yaml, web

WEB = "shop/Deployment.apps/web"


def _repo(tmp_path: Path) -> SourceRepo:
    repo = make_source_repo(tmp_path / "src", None)
    repo.write(
        {"dro.yaml": dro_yaml("{maxClusters: 2}"), "workloads/web.yaml": web("web:1")}
        | {f"clusters/{name}.yaml": cluster_file(name) for name in NAMES}
    )
    repo.commit("web:1")
    return repo


def _pass(repo: SourceRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "s")]
    assert cli.main(args) == 0, capsys.readouterr().err
    capsys.readouterr()


def _subject(repo: SourceRepo) -> str:
    return git(repo.bare, "log", "-1", "--format=%s", "dro/rendered").strip()


def test_explain_readme_and_subjects_follow_an_offline_rollout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path)
    _pass(repo, tmp_path, capsys)
    assert "Rollouts in progress" not in git(repo.bare, "show", "dro/rendered:README.md")
    repo.write({"workloads/web.yaml": web("web:2")})
    repo.commit("web:2")
    _pass(repo, tmp_path, capsys)
    assert _subject(repo) == "rollout shop/web 1/2: eu-west-1, eu-west-2"
    readme = git(repo.bare, "show", "dro/rendered:README.md")
    assert "## Rollouts in progress" in readme
    (row,) = [line for line in readme.splitlines() if line.startswith(f"| `{WEB}`") and "→" in line]
    assert row.endswith("| 1/2 | Progressing | eu-west-1, eu-west-2 |")

    where = ["--repo", str(repo.bare), "--state-dir", str(tmp_path / "s")]
    assert cli.main(["explain", WEB, *where]) == 0
    shown = capsys.readouterr().out
    assert "wave 1/2 Progressing" in shown
    assert "2 of 4 clusters on the new template" in shown
    assert "wave 2: us-east-1 Waiting, us-east-2 Waiting" in shown
    assert cli.main(["explain", WEB, *where, "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["rollout"]["phase"] == "Progressing"
    assert [c["state"] for c in document["rollout"]["clusters"]] == [
        "Updating",
        "Updating",
        "Waiting",
        "Waiting",
    ]

    _pass(repo, tmp_path, capsys)  # unobserved: the next wave at the next pass
    assert _subject(repo) == "rollout shop/web 2/2: us-east-1, us-east-2"
    _pass(repo, tmp_path, capsys)
    assert _subject(repo).startswith("rollout shop/web complete: revision ")
    assert "Rollouts in progress" not in git(repo.bare, "show", "dro/rendered:README.md")


def test_plan_shows_the_waves_a_change_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path)
    _pass(repo, tmp_path, capsys)
    git(repo.work, "fetch", "--quiet", "origin")
    repo.write({"workloads/web.yaml": web("web:2")})
    repo.commit("web:2")
    args = ["plan", "--repo", str(repo.work), "--base", "HEAD~1", "--head", "HEAD"]
    assert cli.main([*args, "--state-dir", str(tmp_path / "p"), "-o", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (sentence,) = [s for s in plan["followUps"] if s.startswith("Rollout of")]
    assert "in 2 waves (eu-west-1, eu-west-2 → us-east-1, us-east-2)" in sentence
    assert "this pass gives it to eu-west-1, eu-west-2" in sentence
    changed = {c["cluster"] for c in plan["manifests"]}
    assert changed == {"eu-west-1", "eu-west-2"}  # the others keep web:1


def test_metrics_count_rollouts_by_phase(tmp_path: Path) -> None:
    decisions = []
    for phase in ("Progressing", "Paused", "Progressing"):
        raw = {"revision": "b", "commit": "c2", "phase": phase, "from": {"revision": "a"}}
        raw |= {"wave": 1, "waves": ["1"], "clusters": []}
        decision = summary.decision_from_document(
            {
                "kind": "PlacementDecision",
                "status": {
                    "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": phase},
                    "rollout": raw,
                },
            }
        )
        decisions.append(decision)
    metrics = Metrics()
    metrics.record_plan({}, 0, rolloutview.counts(decisions))
    text = metrics.exposition().decode()
    assert 'dro_rollouts{phase="Progressing"} 2.0' in text
    assert 'dro_rollouts{phase="Paused"} 1.0' in text
    assert 'dro_rollouts{phase="AwaitingApproval"} 0.0' in text
