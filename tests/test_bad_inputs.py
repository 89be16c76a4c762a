"""Bad input through the whole pass: a clear FILE:LINE error, exit 1, and no commit at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from badinputs import CASES
from conftest import make_source_repo

from reconciler import cli


@pytest.mark.parametrize(
    ("files", "path", "line", "fragment"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_bad_input_is_reported_and_nothing_is_committed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str | None],
    path: str,
    line: int,
    fragment: str,
) -> None:
    repo = make_source_repo(tmp_path / "src")
    for relative, text in files.items():
        target = repo.work / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if text is None:  # the one case that needs raw bytes: invalid UTF-8
            target.write_bytes(b"apiVersion: v1\nkind: \xff\xfe\n")
        else:
            target.write_text(text)
    repo.commit("bad change")
    code = cli.main(
        ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "state")]
    )
    out = capsys.readouterr().err
    assert code == 1
    matching = [row for row in out.splitlines() if row.startswith(f"{path}:{line}: ")]
    assert matching, f"no error at {path}:{line} in:\n{out}"
    assert any(fragment in row for row in matching), out
    assert repo.branch_sha("dro/rendered") is None
    assert "hunter2" not in out


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40
    assert len({case[0] for case in CASES}) == len(CASES)


def test_a_bad_commit_leaves_the_last_good_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    args = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "s")]
    assert cli.main(args) == 0
    good = repo.branch_sha("dro/rendered")
    assert good is not None
    repo.write({"workloads/shop/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n"})
    repo.commit("bad")
    assert cli.main(args) == 1
    assert repo.branch_sha("dro/rendered") == good
    assert "workloads/shop/bad.yaml:3: " in capsys.readouterr().err
