"""`dro audit`: the REST API's writes read back from git history, on the source branch and on
unmerged review branches, as a table or JSON, filtered by --since."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reconciler import cli
from reconciler.service.api import model, store, trail
from tests.conftest import SourceRepo, git, make_source_repo

ALICE = model.Caller(subject="user-42", name="Alice Doe", email="alice@example.com")
BOB = model.Caller(subject="bob", name="Bob", email="bob@example.com")
DAY = 86400.0


def _draft(name: str) -> dict[str, object]:
    return {"name": name, "resourceType": "Job", "namespace": "ml", "targetClusters": ["eu-west-1"]}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[SourceRepo, list[model.Written]]:
    """A repo with three API writes: two on main three days ago (a create, then a patch in
    the same second) and one review branch an hour ago; and a person's commit between."""
    tmp = tmp_path_factory.mktemp("audit")
    repo = make_source_repo(tmp / "origin")
    then = time.time() - 3 * DAY
    direct = store.GitPolicyStore(str(repo.bare), "main", tmp / "a", clock=lambda: then)
    done = [direct.create("propagationpolicies", _draft("batch"), ALICE)]
    done.append(direct.patch("propagationpolicies", "batch", {"namespace": "shop"}, ALICE, None))
    git(repo.work, "pull", "--quiet", "origin", "main")
    repo.write({"notes.txt": "a person's commit\n"})
    repo.commit("a person's commit")
    recent = time.time() - 3600
    review = store.GitPolicyStore(
        str(repo.bare), "main", tmp / "b", mode="branch", clock=lambda: recent
    )
    done.append(review.delete("resourceplacementpolicies", "orders", BOB, None))
    return repo, done


def _audit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, repo: SourceRepo, *extra: str
) -> tuple[int, str, str]:
    argv = ["audit", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "state"), *extra]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_lists_every_api_write_oldest_first_with_its_branch(
    written: tuple[SourceRepo, list[model.Written]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    repo, done = written
    code, out, err = _audit(capsys, tmp_path, repo, "-o", "json")
    assert (code, err) == (0, "")
    listed = json.loads(out)
    assert [e["sha"] for e in listed] == [w.sha for w in done]
    assert [(e["action"], e["kind"], e["name"]) for e in listed] == [
        ("create", "PropagationPolicy", "batch"),
        ("patch", "PropagationPolicy", "batch"),
        ("delete", "ResourcePlacementPolicy", "orders"),
    ]
    assert [e["caller"] for e in listed] == ["user-42", "user-42", "bob"]
    assert listed[0]["author"] == "Alice Doe <alice@example.com>"
    assert listed[1]["request"] == "PATCH /api/v1/propagationpolicies/batch"
    assert [e["branch"] for e in listed] == ["main", "main", done[2].branch]
    assert done[2].branch.startswith("dro-api/resourceplacementpolicies/orders/")
    for entry in listed:
        epoch = int(git(repo.bare, "log", "-1", "--format=%ct", entry["sha"]))
        assert entry["time"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def test_since_takes_a_duration_or_an_iso_time(
    written: tuple[SourceRepo, list[model.Written]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    repo, done = written
    _, out, _ = _audit(capsys, tmp_path, repo, "--since", "24h", "-o", "json")
    assert [e["sha"] for e in json.loads(out)] == [done[2].sha]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 2 * DAY))
    _, out, _ = _audit(capsys, tmp_path, repo, "--since", when, "-o", "json")
    assert [e["sha"] for e in json.loads(out)] == [done[2].sha]
    _, out, _ = _audit(capsys, tmp_path, repo, "--since", "7d", "-o", "json")
    assert len(json.loads(out)) == 3
    code, out, err = _audit(capsys, tmp_path, repo, "--since", "1m")
    assert (code, out) == (0, "")
    assert err == "no writes by the REST API since 1m\n"


def test_the_table_has_one_row_per_write(
    written: tuple[SourceRepo, list[model.Written]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    repo, done = written
    code, out, _ = _audit(capsys, tmp_path, repo)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["TIME", "CALLER", "REQUEST", "COMMIT", "POLICY", "BRANCH"]
    assert [row.split()[-3:] for row in rows] == [
        [done[0].sha[:12], "PropagationPolicy/batch", "main"],
        [done[1].sha[:12], "PropagationPolicy/batch", "main"],
        [done[2].sha[:12], "ResourcePlacementPolicy/orders", done[2].branch],
    ]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--since", "yesterday"), "dro audit: --since 'yesterday': expected an ISO date"),
        (("--ref", "nope"), "dro audit: ref 'nope' not found"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_1(
    written: tuple[SourceRepo, list[model.Written]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    extra: tuple[str, ...],
    said: str,
) -> None:
    repo, _ = written
    code, out, err = _audit(capsys, tmp_path, repo, *extra)
    assert (code, out) == (1, "")
    assert err.startswith(said)
    assert err.count("\n") == 1


def test_outside_a_repository_it_asks_for_repo(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["audit"]) == 1
    assert capsys.readouterr().err == (
        f"dro audit: {tmp_path} is not inside a git repository; give --repo URL|PATH\n"
    )


def test_a_local_clone_is_read_in_place(
    written: tuple[SourceRepo, list[model.Written]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, done = written
    monkeypatch.chdir(repo.work)
    assert cli.main(["audit", "-o", "json"]) == 0
    assert [e["sha"] for e in json.loads(capsys.readouterr().out)] == [w.sha for w in done[:2]]


def test_trailers_are_read_from_the_last_paragraph_only() -> None:
    text = trail.message("create", "PropagationPolicy", "x", "sub\nject", "POST /p")
    assert text.endswith("\n\nDro-Api-Caller: sub ject\nDro-Api-Request: POST /p\n")
    assert trail.trailers("Dro-Api-Request: POST /x\n\nbody") == {}
    assert trail.trailers(text) == {"Dro-Api-Caller": "sub ject", "Dro-Api-Request": "POST /p"}
