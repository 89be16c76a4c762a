"""The wrong folder, an empty repository, a ref without dro's files and a `--repo` typo: each
command says what is missing on stderr, exits 1, crashes nowhere and leaves no cache behind."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLE, git, make_source_repo

from reconciler import cli, load

NOT_A_REPO = "is not a dro repository: it has no dro.yaml and no clusters/ folder"


def _commands(source: list[str], tmp_path: Path) -> dict[str, list[str]]:
    """Every command that reads a source, given `source` as its PATH or `--repo` arguments."""
    state = ["--state-dir", str(tmp_path / "state")]
    return {
        "validate": ["validate", *source, *state],
        "schedule": ["schedule", *source, *state, "-o", "json"],
        "explain": ["explain", *source, "shop/Deployment/web", *state],
        "render": ["render", *source, *state, "--out", str(tmp_path / "out")],
    }


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", ["validate", "schedule", "explain", "render"])
@pytest.mark.parametrize("content", ["empty", "readme", "workloads-only"])
def test_a_folder_that_is_no_dro_repository_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, content: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    if content == "readme":
        (folder / "README.md").write_text("# not dro\n")
    if content == "workloads-only":
        shutil.copytree(EXAMPLE / "workloads", folder / "workloads")
    code, out, err = _run(_commands([str(folder)], tmp_path)[command], capsys)
    assert code == 1
    assert out == ""
    assert f"dro {command}: {folder} {NOT_A_REPO}" in err
    if content == "workloads-only":
        assert "(only workloads/)" in err
    assert not (tmp_path / "out").exists()


def test_the_parent_of_a_dro_repository_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "example-repo")
    code, _, err = _run(["validate", str(tmp_path)], capsys)
    assert code == 1
    assert f"did you mean {tmp_path / 'example-repo'}?" in err


def test_a_dro_yaml_alone_schedules_nothing_without_crashing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No clusters and no workloads: an empty placement, not a numpy error."""
    (tmp_path / "src").mkdir()
    shutil.copy(EXAMPLE / "dro.yaml", tmp_path / "src/dro.yaml")
    code, out, _ = _run(["schedule", str(tmp_path / "src"), "-o", "json"], capsys)
    assert code == 0
    assert '"decisions": []' in out


@pytest.mark.parametrize("command", ["validate", "schedule", "explain", "render", "reconcile"])
def test_a_ref_without_dro_files_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    repo = make_source_repo(tmp_path / "src", content=None)
    repo.write({"README.md": "# not dro\n"})
    repo.commit("readme")
    argv = (
        ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "st")]
        if command == "reconcile"
        else _commands(["--repo", str(repo.bare)], tmp_path)[command]
    )
    code, _, err = _run(argv, capsys)
    assert code == 1
    assert f"{repo.bare} at main {NOT_A_REPO}" in err
    assert repo.branch_sha("dro/rendered") is None


def test_plan_of_a_head_without_dro_files_is_an_error_but_its_base_may_have_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src", content=None)
    git(repo.work, "branch", "before-dro")
    state = ["--state-dir", str(tmp_path / "st")]
    plan = ["plan", "--repo", str(repo.work), *state, "-o", "json"]
    code, _, err = _run([*plan, "--base", "before-dro", "--head", "main"], capsys)
    assert code == 1
    assert f"{repo.work} at main {NOT_A_REPO}" in err
    shutil.copytree(EXAMPLE, repo.work, dirs_exist_ok=True)
    repo.commit("adopt dro")
    code, out, _ = _run([*plan, "--base", "before-dro", "--head", "main"], capsys)
    assert code == 0, "the pull request that adds dro to a repository plans from nothing"
    assert '"clusters_added"' in out or "ap-south-1" in out


@pytest.mark.parametrize("command", ["validate", "schedule", "reconcile", "plan"])
def test_an_empty_repository_says_it_has_no_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    empty = tmp_path / "empty"
    git(tmp_path, "init", "--quiet", "--initial-branch=main", str(empty))
    argv = {
        "reconcile": ["reconcile", "--once", "--repo", str(empty)],
        "plan": ["plan", "--repo", str(empty), "--base", "main"],
    }.get(command, [command, "--repo", str(empty)])
    code, _, err = _run([*argv, "--state-dir", str(tmp_path / "state")], capsys)
    assert code == 1
    assert f"--repo {empty}: the repository has no commits yet" in err
    assert not (tmp_path / "state").exists(), "no cache is left behind"


@pytest.mark.parametrize(
    "command", ["validate", "schedule", "explain", "render", "reconcile", "plan"]
)
@pytest.mark.parametrize("form", ["path", "file-url"])
def test_a_missing_local_repo_is_named_and_leaves_no_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, form: str
) -> None:
    missing = tmp_path / "no-such-repo"
    location = str(missing) if form == "path" else f"file://{missing}"
    argv = {
        "reconcile": ["reconcile", "--once", "--repo", location],
        "plan": ["plan", "--repo", location, "--base", "main"],
    }.get(command) or _commands(["--repo", location], tmp_path)[command]
    state = tmp_path / "state"
    code, out, err = _run([*argv, "--state-dir", str(state)], capsys)
    assert code == 1
    assert out == ""
    assert f"--repo {location}: no such directory" in err
    assert "unsupported URL protocol" not in err
    assert not state.exists(), "no cache is left behind"


def test_a_failed_first_fetch_removes_the_cache_it_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL that cannot be fetched: the error as before, and the state directory as before."""
    state = tmp_path / "state"
    (state / "repos").mkdir(parents=True)
    (state / "repos" / "keep.txt").write_text("not dro's\n")
    not_git = tmp_path / "plain"
    not_git.mkdir()
    code, _, err = _run(["validate", "--repo", str(not_git), "--state-dir", str(state)], capsys)
    assert code == 1
    assert "fetch from" in err
    assert sorted(p.name for p in (state / "repos").iterdir()) == ["keep.txt"]


def test_the_wrong_working_directory_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dro validate` with no PATH in a folder that is no repo, next to one that is."""
    shutil.copytree(EXAMPLE, tmp_path / "example-repo")
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["validate"], capsys)
    assert code == 1
    assert f"the current directory ({tmp_path}) {NOT_A_REPO}; did you mean example-repo?" in err


def test_only_the_source_folders_are_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dro validate` in a big folder (a home directory, /tmp) reads the source folders only:
    a deep tree beside them is never walked, and what it holds is never read."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    deep = repo / "node_modules" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "dro.yaml").write_text("not: read\n")
    walked: list[str] = []
    real_walk = os.walk

    def recording_walk(top: Path) -> Iterator[tuple[str, list[str], list[str]]]:
        for entry in real_walk(top):
            walked.append(entry[0])
            yield entry

    monkeypatch.setattr(load.os, "walk", recording_walk)
    source = load.from_directory(repo)

    assert walked, "the walk was not observed"
    assert not [w for w in walked if "node_modules" in w]
    assert all(not f.path.startswith("node_modules") for f in source.files)
    assert any(f.path.startswith("workloads/") for f in source.files)
