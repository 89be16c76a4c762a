"""Writers racing on one branch through the REST API's store, against a real `git daemon`:
the push is compare-and-swap, so two writers of one policy give one success and one refusal,
and concurrent writes of different policies all land, none lost or duplicated."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler.git import gitrepo
from reconciler.service.api import model, store
from tests.conftest import SourceRepo, git

RPP = "resourceplacementpolicies"
PP = "propagationpolicies"


def _caller(number: int) -> model.Caller:
    return model.Caller(subject=f"user-{number}", name=f"User {number}", email=f"u{number}@x.io")


def _draft(name: str) -> dict[str, Any]:
    return {"name": name, "resourceType": "Job", "namespace": "ml", "targetClusters": ["eu-west-1"]}


def _at_once(calls: list[Callable[[], model.Written]]) -> list[model.Written | model.ApiError]:
    """Run `calls` on one thread each, released together; their results in order."""
    start = threading.Barrier(len(calls))
    results: list[model.Written | model.ApiError | None] = [None] * len(calls)

    def run(index: int) -> None:
        start.wait(timeout=30)
        try:
            results[index] = calls[index]()
        except model.ApiError as error:
            results[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(r is not None for r in results), "every writer answered"
    return [r for r in results if r is not None]


def _replicas(url: str, tmp_path: Path, count: int) -> list[store.GitPolicyStore]:
    """Stores with their own caches: as many `dro run` replicas writing to one remote."""
    return [store.GitPolicyStore(url, "main", tmp_path / f"replica-{i}") for i in range(count)]


def _api_commits(repo: SourceRepo, since: str) -> list[str]:
    return git(repo.bare, "log", "--format=%s", f"{since}..main").splitlines()


def test_two_creates_of_one_name_give_one_commit_and_one_conflict(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    before = repo.branch_sha("main")
    first, second = _replicas(url, tmp_path, 2)
    results = _at_once(
        [
            lambda: first.create(PP, _draft("web"), _caller(1)),
            lambda: second.create(PP, _draft("web"), _caller(2)),
        ]
    )
    written = [r for r in results if isinstance(r, model.Written)]
    refused = [r for r in results if isinstance(r, model.ApiError)]
    assert len(written) == 1
    assert [(e.status, e.code, dict(e.details)) for e in refused] == [
        (409, model.POLICY_CONFLICT, {"policyName": "web"})
    ]
    assert _api_commits(repo, str(before)) == ["api: create PropagationPolicy web"]
    assert repo.branch_sha("main") == written[0].sha


def test_two_patches_with_one_if_match_give_one_commit_and_one_412(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    before = repo.branch_sha("main")
    first, second = _replicas(url, tmp_path, 2)
    etag = first.get(RPP, "europe").etag
    results = _at_once(
        [
            lambda: first.patch(
                RPP, "europe", {"metadata": {"labels": {"by": "one"}}}, _caller(1), f'"{etag}"'
            ),
            lambda: second.patch(
                RPP, "europe", {"metadata": {"labels": {"by": "two"}}}, _caller(2), f'"{etag}"'
            ),
        ]
    )
    written = [r for r in results if isinstance(r, model.Written)]
    refused = [r for r in results if isinstance(r, model.ApiError)]
    assert len(written) == 1
    assert [(e.status, e.code) for e in refused] == [(412, model.PRECONDITION_FAILED)]
    assert _api_commits(repo, str(before)) == ["api: patch ResourcePlacementPolicy europe"]
    winner = "one" if written[0] is results[0] else "two"
    assert f"by: {winner}" in git(repo.bare, "show", "main:policies/analytics.yaml")


def test_twenty_concurrent_creates_all_land_once(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    before = repo.branch_sha("main")
    (policies,) = _replicas(url, tmp_path, 1)
    names = [f"batch-{i:02d}" for i in range(20)]
    results = _at_once(
        [lambda name=name: policies.create(PP, _draft(name), _caller(1)) for name in names]
    )
    assert all(isinstance(r, model.Written) for r in results), results
    subjects = _api_commits(repo, str(before))
    assert sorted(subjects) == [f"api: create PropagationPolicy {n}" for n in names]
    shas = {r.sha for r in results if isinstance(r, model.Written)}
    assert len(shas) == 20
    assert shas == set(git(repo.bare, "log", "--format=%H", f"{before}..main").splitlines())
    listed = {p.name for p in policies.list(PP)}
    assert set(names) <= listed


def test_writes_from_two_replicas_at_once_all_land(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    before = repo.branch_sha("main")
    replicas = _replicas(url, tmp_path, 2)
    names = [f"pair-{i:02d}" for i in range(6)]
    results = _at_once(
        [
            lambda name=name, i=i: replicas[i % 2].create(PP, _draft(name), _caller(i))
            for i, name in enumerate(names)
        ]
    )
    assert all(isinstance(r, model.Written) for r in results), results
    subjects = _api_commits(repo, str(before))
    assert sorted(subjects) == [f"api: create PropagationPolicy {n}" for n in names]


def _someone_pushes_first(
    monkeypatch: pytest.MonkeyPatch, repo: SourceRepo, times: int
) -> list[str]:
    """Before each of dro's next `times` pushes, a person pushes a commit of their own to
    main (as another writer would, between dro's fetch and its push); their shas."""
    pushed: list[str] = []
    real = gitrepo.push

    def push(*args: Any, **kwargs: Any) -> None:
        if len(pushed) < times:
            repo.write({f"notes/{len(pushed)}.txt": "a person's change\n"})
            pushed.append(repo.commit(f"a person's change {len(pushed)}"))
        real(*args, **kwargs)

    monkeypatch.setattr(gitrepo, "push", push)
    return pushed


def test_a_refused_push_is_redone_on_the_new_tip(
    served_repo: tuple[SourceRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, url = served_repo
    (policies,) = _replicas(url, tmp_path, 1)
    etag = policies.get(RPP, "europe").etag
    theirs = _someone_pushes_first(monkeypatch, repo, 2)
    written = policies.patch(RPP, "europe", {"spec": {"priority": 5}}, _caller(1), etag)
    assert len(theirs) == 2
    assert git(repo.bare, "rev-parse", f"{written.sha}^") == theirs[-1], "on the new tip"
    assert repo.branch_sha("main") == written.sha
    assert git(repo.bare, "diff", "--name-only", theirs[-1], written.sha) == (
        "policies/analytics.yaml"
    )


def test_a_branch_that_keeps_moving_is_409_and_nothing_of_the_write_lands(
    served_repo: tuple[SourceRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, url = served_repo
    (policies,) = _replicas(url, tmp_path, 1)
    theirs = _someone_pushes_first(monkeypatch, repo, store.MAX_ATTEMPTS)
    with pytest.raises(model.ApiError) as caught:
        policies.create(PP, _draft("web"), _caller(1))
    assert (caught.value.status, caught.value.code) == (409, model.POLICY_CONFLICT)
    assert "the branch kept moving" in caught.value.message
    assert len(theirs) == store.MAX_ATTEMPTS
    assert repo.branch_sha("main") == theirs[-1]


def test_a_stale_if_match_after_a_refused_push_is_412(
    served_repo: tuple[SourceRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, url = served_repo
    (policies,) = _replicas(url, tmp_path, 1)
    etag = policies.get(RPP, "europe").etag
    real = gitrepo.push

    def push(*args: Any, **kwargs: Any) -> None:
        # someone changes the same file between dro's fetch and its push
        path = repo.work / "policies/analytics.yaml"
        path.write_text(path.read_text() + "# reviewed\n")
        repo.commit("a person edits analytics.yaml")
        monkeypatch.setattr(gitrepo, "push", real)
        real(*args, **kwargs)

    monkeypatch.setattr(gitrepo, "push", push)
    with pytest.raises(model.ApiError) as caught:
        policies.patch(RPP, "europe", {"spec": {"priority": 5}}, _caller(1), etag)
    assert (caught.value.status, caught.value.code) == (412, model.PRECONDITION_FAILED)
    assert git(repo.bare, "log", "-1", "--format=%s", "main") == "a person edits analytics.yaml"
