"""The output branch on the remote is the truth, and so is the source ref: `dro reconcile
--once` against three API emulators, through the CLI.

- A pass compares its tree with the remote's branch, never with the cache's own: a commit whose
  push was lost, or a `--no-push` trial, is pushed by the next pass.
- Nothing is applied that the remote does not hold: a failed push applies nothing, and a
  `--no-push` trial only observes.
- A source branch or tag deleted on the remote is an error naming it (the fetch prunes), and
  nothing is committed, applied or pruned.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reconciler import cli
from tests.conftest import Daemon, git
from tests.livefleet import Fleet, running_fleet

BRANCH = "dro/rendered"


def reconcile(fleet: Fleet, repo: str, *extra: str) -> int:
    """`dro reconcile --once` with the fleet's kubeconfig and state directory."""
    return cli.main(
        [
            *("reconcile", "--once", "--repo", repo, "--state-dir", str(fleet.settings.state_dir)),
            *("--kubeconfig", str(fleet.settings.kubeconfig), "--move-wait", "0s"),
            *extra,
        ]
    )


def tip(bare: Path) -> str | None:
    """The output branch's tip in a bare repository, or None."""
    found = git(bare, "for-each-ref", "--format=%(objectname)", f"refs/heads/{BRANCH}")
    return found or None


def serve(fleet: Fleet, daemon: Daemon) -> tuple[Path, str]:
    """The fleet's source repository served by the git daemon: its path and URL."""
    served = daemon.base / "fleet.git"
    shutil.copytree(fleet.repo.bare, served)
    git(served, "symbolic-ref", "HEAD", "refs/heads/main")
    return served, daemon.url("fleet.git")


def refuse_pushes(served: Path) -> Path:
    """A pre-receive hook that declines every push while the returned file exists."""
    switch = served / "refuse"
    hook = served / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nif [ -e '{switch}' ]; then echo 'refused' >&2; exit 1; fi\n")
    hook.chmod(0o755)
    switch.write_text("")
    return switch


def test_a_lost_first_push_is_pushed_by_the_next_pass_and_nothing_is_applied_before(
    tmp_path: Path, git_daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_fleet(tmp_path) as fleet:
        served, url = serve(fleet, git_daemon)
        switch = refuse_pushes(served)
        assert reconcile(fleet, url) == 1
        assert "push" in capsys.readouterr().err
        assert tip(served) is None
        assert fleet.writes() == 0, "a tree the remote does not hold was applied"

        switch.unlink()  # the remote accepts pushes again; the source did not change
        assert reconcile(fleet, url) == 0
        out = capsys.readouterr().out
        assert "pushed to" in out, out
        pushed = tip(served)
        assert pushed is not None, "the lost commit was never pushed"
        assert fleet.replicas() == {"a": 2, "b": 2, "c": 2}
        assert fleet.live("a", "ConfigMap", "web") is not None


def test_a_no_push_trial_applies_nothing_and_the_next_pass_pushes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_fleet(tmp_path) as fleet:
        bare = fleet.repo.bare
        assert reconcile(fleet, str(bare), "--no-push") == 0
        out = capsys.readouterr().out
        assert "committed in the cache of" in out
        assert "apply skipped: the rendered tree was not pushed (--no-push)" in out
        assert tip(bare) is None
        assert fleet.writes() == 0, "a --no-push trial wrote to the clusters"

        assert reconcile(fleet, str(bare)) == 0
        out = capsys.readouterr().out
        assert "pushed to" in out, "the trial's tree was taken for the remote's"
        assert tip(bare) is not None
        assert fleet.replicas() == {"a": 2, "b": 2, "c": 2}


def test_an_offline_trial_is_pushed_as_the_same_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_fleet(tmp_path) as fleet:
        bare = str(fleet.repo.bare)
        state = ("--state-dir", str(tmp_path / "offline"))
        assert cli.main(["reconcile", "--once", "--repo", bare, "--no-push", *state]) == 0
        trial = capsys.readouterr().out.split("output branch dro/rendered: ")[1].split()[0]
        assert cli.main(["reconcile", "--once", "--repo", bare, *state]) == 0
        pushed = tip(fleet.repo.bare)
        assert pushed is not None
        assert pushed.startswith(trial), "the next pass pushes the commit the trial made"
        assert cli.main(["reconcile", "--once", "--repo", bare, *state]) == 0
        assert "unchanged (no commit)" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["branch", "tag"])
def test_a_deleted_source_ref_is_an_error_naming_it(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_fleet(tmp_path) as fleet:
        bare = fleet.repo.bare
        if kind == "branch":
            git(fleet.repo.work, "push", "--quiet", "origin", "main:release")
        else:
            git(fleet.repo.work, "tag", "release")
            git(fleet.repo.work, "push", "--quiet", "origin", "release")
        assert reconcile(fleet, str(bare), "--ref", "release") == 0
        before = tip(bare)
        assert fleet.replicas() == {"a": 2, "b": 2, "c": 2}
        # the source drops a workload, then the ref goes away: nothing may be pruned
        fleet.repo.write({"workloads/web.yaml": None})
        fleet.repo.commit("remove web")
        git(bare, "branch" if kind == "branch" else "tag", "-d", "release")
        fleet.reset_counters()
        capsys.readouterr()

        assert reconcile(fleet, str(bare), "--ref", "release") == 1
        err = capsys.readouterr().err
        assert f"dro reconcile: ref 'release' not found in {bare}" in err, err
        assert "Traceback" not in err
        assert fleet.writes() == 0, "a pass on a ref that no longer exists wrote"
        assert tip(bare) == before
        assert fleet.replicas() == {"a": 2, "b": 2, "c": 2}
