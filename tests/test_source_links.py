"""Symbolic links and submodules in the source are errors at PATH:1, and file names are quoted.

A workload file replaced by a symbolic link used to drop its objects silently, and the next pass
pruned them. Now the pass fails at that path and commits nothing: the last good state stays.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, git, make_source_repo, without_example_warning

from reconciler import cli

CART = "workloads/shop/cart.yaml"


def test_a_workload_replaced_by_a_symlink_fails_the_pass_and_commits_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    args = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "st")]
    assert cli.main(args) == 0
    good = repo.branch_sha("dro/rendered")
    assert good is not None
    capsys.readouterr()
    shutil.move(repo.work / CART, repo.work / "cart.yaml")
    os.symlink("../../cart.yaml", repo.work / CART)
    repo.commit("cart is now a link")
    assert cli.main(args) == 1
    out = capsys.readouterr().err
    assert f"{CART}:1: /: {CART} is a symbolic link, which dro does not read" in out
    assert repo.branch_sha("dro/rendered") == good


def test_a_submodule_in_the_source_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    sha = git(repo.work, "rev-parse", "HEAD")
    git(repo.work, "update-index", "--add", "--cacheinfo", f"160000,{sha},workloads/vendor")
    git(repo.work, "commit", "--quiet", "-m", "a gitlink")
    git(repo.work, "push", "--quiet", "origin", "main")
    args = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "st")]
    assert cli.main(args) == 1
    out = capsys.readouterr().err
    assert "workloads/vendor:1: /: workloads/vendor is a submodule (gitlink)" in out
    assert repo.branch_sha("dro/rendered") is None


def test_links_and_nested_repositories_in_a_plain_directory_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    (tmp_path / "elsewhere").mkdir()
    shutil.move(source / CART, tmp_path / "elsewhere/cart.yaml")
    os.symlink(tmp_path / "elsewhere/cart.yaml", source / CART)
    os.symlink(tmp_path / "elsewhere", source / "workloads/linked")
    nested = source / "workloads/vendored"
    nested.mkdir()
    git(nested, "init", "--quiet")
    (source / "docs").mkdir()
    os.symlink(tmp_path / "elsewhere", source / "docs/ignored")  # not a source folder
    assert cli.main(["validate", str(source)]) == 1
    out = without_example_warning(capsys.readouterr().err.splitlines())
    assert [row.split(": ", 1)[0] for row in out] == [
        "workloads/linked:1",
        f"{CART}:1",
        "workloads/vendored:1",
    ]
    assert "is a symbolic link" in out[0]
    assert "is a submodule (gitlink)" in out[2]


FORGED = "workloads/shop/x\nworkloads/shop/fake.yaml:1: all good"


def test_a_file_name_with_a_newline_cannot_forge_a_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    bad = source / f"{FORGED}.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    assert cli.main(["validate", str(source)]) == 1
    out = "".join(
        f"{row}\n" for row in without_example_warning(capsys.readouterr().err.splitlines())
    )
    assert out.count("\n") == 1, out
    assert out.startswith('"workloads/shop/x\\nworkloads/shop/fake.yaml:1: all good.yaml":3: ')
    assert not any(row.startswith("workloads/shop/fake.yaml") for row in out.splitlines())


def test_a_file_name_from_git_is_quoted_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    repo.write({"workloads/shop/tab\there.yaml": "apiVersion: v1\nkind: [\n"})
    repo.commit("a tab in a name")
    args = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "st")]
    assert cli.main(args) == 1
    out = capsys.readouterr().err
    assert '"workloads/shop/tab\\there.yaml":3: /: malformed YAML' in out
    assert repo.branch_sha("dro/rendered") is None
