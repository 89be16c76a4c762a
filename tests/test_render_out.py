"""`dro render --out DIR` writes only inside DIR, and `--clean` deletes only what dro made.

Each refusal is exit 1 with one line on stderr, and every file that was there is still there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, git

from reconciler import cli, render
from reconciler.cli import outdir
from reconciler.errors import Problem, ValidationFailed

EVIL = (
    "apiVersion: example.com/v1\nkind: ../../../../x\nmetadata:\n  name: evil\n  namespace: shop\n"
)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _source(where: Path) -> Path:
    """The example repo as a git work tree, with a commit, as a user's checkout."""
    shutil.copytree(EXAMPLE, where)
    git(where, "init", "--quiet", "--initial-branch=main")
    git(where, "add", "--all")
    git(where, "commit", "--quiet", "-m", "initial")
    return where


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], reason: str) -> None:
    code = cli.main(["render", *args])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1, err
    assert err.startswith("dro render: --out ")
    assert reason in err, err


def test_a_kind_that_climbs_out_is_refused_and_nothing_is_written_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    (source / "workloads/shop/evil.yaml").write_text(EVIL)
    before = _files(tmp_path)
    code = cli.main(["render", str(source), "--out", str(tmp_path / "a/b/out")])
    out = capsys.readouterr().err
    assert code == 1
    assert "workloads/shop/evil.yaml:2: /kind: kind '../../../../x'" in out
    assert _files(tmp_path) == before


def test_out_dot_clean_in_the_source_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path / "src")
    before = _files(tmp_path)
    monkeypatch.chdir(source)
    _refused(capsys, [".", "--out", ".", "--clean"], "refusing to delete the working directory")
    assert _files(tmp_path) == before
    assert git(source, "status", "--porcelain") == ""


def test_out_dot_dot_clean_keeps_the_parent_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path / "src")
    (tmp_path / "sibling.txt").write_text("mine")
    before = _files(tmp_path)
    monkeypatch.chdir(source)
    _refused(
        capsys,
        [".", "--out", "..", "--clean"],
        "refusing to delete an ancestor of the working directory",
    )
    assert _files(tmp_path) == before
    assert (tmp_path / "sibling.txt").read_text() == "mine"


def test_the_source_and_its_ancestors_are_kept_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path / "deep/src")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    before = _files(tmp_path)
    _refused(
        capsys, [str(source), "--out", str(source), "--clean"], "refusing to delete the source"
    )
    _refused(
        capsys,
        [str(source), "--out", str(tmp_path / "deep"), "--clean"],
        "refusing to delete an ancestor of the source folder",
    )
    assert _files(tmp_path) == before


def test_a_folder_holding_git_is_kept_even_with_the_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    target.mkdir()
    git(target, "init", "--quiet")
    (target / outdir.MARKER).write_bytes(outdir.MARKER_TEXT)
    before = _files(tmp_path)
    _refused(capsys, [str(EXAMPLE), "--out", str(target), "--clean"], "a folder that holds .git")
    assert _files(tmp_path) == before


def test_a_folder_dro_did_not_make_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "photos"
    target.mkdir()
    (target / "holiday.jpg").write_bytes(b"\xff\xd8")
    _refused(
        capsys,
        [str(EXAMPLE), "--out", str(target), "--clean"],
        "refusing to delete a folder that dro render did not make (it has no .dro-render file)",
    )
    assert (target / "holiday.jpg").read_bytes() == b"\xff\xd8"


def test_a_symbolic_link_as_out_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real"
    assert cli.main(["render", str(EXAMPLE), "--out", str(real)]) == 0
    capsys.readouterr()
    (tmp_path / "link").symlink_to(real)
    before = _files(tmp_path)
    _refused(capsys, [str(EXAMPLE), "--out", str(tmp_path / "link"), "--clean"], "symbolic link")
    assert _files(tmp_path) == before


def test_clean_replaces_a_folder_dro_made_and_leaves_no_temporary_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    assert cli.main(["render", str(EXAMPLE), "--out", str(target)]) == 0
    assert (target / outdir.MARKER).read_bytes() == outdir.MARKER_TEXT
    rendered = _files(target)
    (target / "clusters/stale.yaml").write_text("left over")
    assert cli.main(["render", str(EXAMPLE), "--out", str(target), "--clean"]) == 0
    assert _files(target) == rendered
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    capsys.readouterr()


def test_a_failed_render_leaves_the_old_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    assert cli.main(["render", str(EXAMPLE), "--out", str(target)]) == 0
    before = {p: (target / p).read_bytes() for p in _files(target) if (target / p).is_file()}

    def broken(*args: object, **kwargs: object) -> dict[str, bytes]:
        """As an override that fails on one cluster fails the render today."""
        raise ValidationFailed([Problem(path="policies/x.yaml", line=3, message="failed")])

    monkeypatch.setattr(render, "tree", broken)
    assert cli.main(["render", str(EXAMPLE), "--out", str(target), "--clean"]) == 1
    assert "policies/x.yaml:3: /: failed" in capsys.readouterr().err
    after = {p: (target / p).read_bytes() for p in _files(target) if (target / p).is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_invalid_input_with_clean_leaves_the_old_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    target = tmp_path / "out"
    assert cli.main(["render", str(source), "--out", str(target)]) == 0
    before = _files(target)
    (source / "workloads/shop/evil.yaml").write_text(EVIL)
    assert cli.main(["render", str(source), "--out", str(target), "--clean"]) == 1
    assert _files(target) == before
    capsys.readouterr()


def test_an_empty_working_directory_is_filled_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert cli.main(["render", str(EXAMPLE), "--out", "."]) == 0
    assert (here / "clusters/eu-west-1/kustomization.yaml").is_file()
    assert (here / outdir.MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]
    capsys.readouterr()


@pytest.mark.parametrize(
    "relative", ["../x.yaml", "a/../../x.yaml", "/etc/x.yaml", "a/.git/config", "a//b.yaml"]
)
def test_the_writer_refuses_a_path_that_would_escape(tmp_path: Path, relative: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(ValueError, match="refusing to write"):
        outdir.write_files(root, [(relative, b"x")])
    assert _files(tmp_path) == {"root"}


def test_the_writer_refuses_a_folder_that_resolves_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "clusters").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="resolves outside"):
        outdir.write_files(root, [("clusters/x.yaml", b"x")])
    assert list((tmp_path / "elsewhere").iterdir()) == []
