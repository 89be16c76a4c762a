"""Load, commit and push against real repositories and a real git daemon on 127.0.0.1."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import Daemon, SourceRepo, git, make_source_repo

from reconciler import commit, load
from reconciler.branch import statefiles
from reconciler.errors import UsageError
from reconciler.git import gitrepo


def test_clone_and_fetch_over_git_protocol(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    first = load.from_git(url, "main", tmp_path / "state")
    assert first.commit == git(repo.work, "rev-parse", "HEAD")
    assert "dro.yaml" in {f.path for f in first.files}
    repo.write(
        {
            "workloads/shop/extra.yaml": "apiVersion: v1\nkind: ConfigMap\n"
            "metadata: {name: extra, namespace: shop}\n"
        }
    )
    second_sha = repo.commit("add a ConfigMap")
    second = load.from_git(url, "main", tmp_path / "state")
    assert second.commit == second_sha
    assert "workloads/shop/extra.yaml" in {f.path for f in second.files}
    assert "workloads/shop/extra.yaml" not in {f.path for f in first.files}


@pytest.mark.parametrize("kind", ["branch", "tag", "sha"])
def test_ref_resolves_as_branch_tag_or_sha(
    source_repo: SourceRepo, tmp_path: Path, kind: str
) -> None:
    sha = git(source_repo.work, "rev-parse", "HEAD")
    git(source_repo.work, "tag", "v1")
    git(source_repo.work, "push", "--quiet", "origin", "v1")
    git(source_repo.work, "checkout", "--quiet", "-b", "feature")
    source_repo.write(
        {"workloads/new.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\n"}
    )
    git(source_repo.work, "add", "--all")
    git(source_repo.work, "commit", "--quiet", "-m", "feature")
    git(source_repo.work, "push", "--quiet", "origin", "feature")
    ref = {"branch": "main", "tag": "v1", "sha": sha}[kind]
    source = load.from_git(str(source_repo.bare), ref, tmp_path / "state")
    assert source.commit == sha


def test_missing_ref_names_the_ref(source_repo: SourceRepo, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="'nope'"):
        load.from_git(str(source_repo.bare), "nope", tmp_path / "state")


def test_only_source_folders_are_read(tmp_path: Path) -> None:
    repo = make_source_repo(tmp_path)
    repo.write(
        {"notes.txt": "hello", "clusters/.hidden.yaml": "a: 1\n", "workloads/readme.md": "# no"}
    )
    repo.commit()
    source = load.from_git(str(repo.bare), "main", tmp_path / "state")
    paths = {f.path for f in source.files}
    assert "notes.txt" not in paths
    assert "clusters/.hidden.yaml" not in paths
    assert "workloads/readme.md" not in paths
    assert all(load.is_source_path(p) for p in paths)


def test_a_source_read_through_the_blob_cache_reads_only_changed_blobs(tmp_path: Path) -> None:
    repo = make_source_repo(tmp_path)
    blobs = load.BlobCache()
    state = tmp_path / "state"
    first = load.from_git(str(repo.bare), "main", state, blobs=blobs)
    assert blobs.read == len(first.files) > 1
    again = load.from_git(str(repo.bare), "main", state, blobs=blobs)
    assert (blobs.read, again.files) == (0, first.files)
    repo.write({"workloads/extra.yaml": "apiVersion: v1\nkind: ConfigMap\n"})
    repo.commit()
    changed = load.from_git(str(repo.bare), "main", state, blobs=blobs)
    assert blobs.read == 1
    assert changed.files == load.from_git(str(repo.bare), "main", state).files
    assert len(changed.files) == len(first.files) + 1


def test_publish_commits_once_with_trailers(source_repo: SourceRepo, tmp_path: Path) -> None:
    url, state = str(source_repo.bare), tmp_path / "state"
    load.from_git(url, "main", state)
    tree = {"README.md": b"hi\n", "clusters/a/x.yaml": b"a: 1\n"}
    first = commit.publish(
        url, state, branch="dro/rendered", tree=tree, source_sha="abc123", commit_time=1_700_000_000
    )
    assert first.commit is not None
    assert first.pushed
    assert source_repo.branch_sha("dro/rendered") == first.commit
    body = git(source_repo.bare, "log", "-1", "--format=%B", "dro/rendered")
    assert "Dro-Source-Commit: abc123" in body
    assert "Dro-Observations: declared" in body
    again = commit.publish(
        url,
        state,
        branch="dro/rendered",
        tree=dict(tree),
        source_sha="def456",
        commit_time=1_700_000_100,
    )
    assert again.commit is None
    assert source_repo.branch_sha("dro/rendered") == first.commit


def test_one_changed_file_changes_one_path(source_repo: SourceRepo, tmp_path: Path) -> None:
    url, state = str(source_repo.bare), tmp_path / "state"
    load.from_git(url, "main", state)
    tree = {f"clusters/c{i}/x.yaml": f"n: {i}\n".encode() for i in range(20)}
    first = commit.publish(url, state, branch="out", tree=tree, source_sha="a", commit_time=1)
    tree["clusters/c7/x.yaml"] = b"n: changed\n"
    second = commit.publish(url, state, branch="out", tree=tree, source_sha="b", commit_time=2)
    assert first.commit
    assert second.commit
    changed = git(source_repo.bare, "diff", "--name-only", first.commit, second.commit)
    assert changed.splitlines() == ["clusters/c7/x.yaml"]
    assert git(source_repo.bare, "rev-parse", f"{second.commit}^") == first.commit


def two_caches(url: str, tmp_path: Path) -> tuple[Path, Path]:
    """Two independent dro state directories, each with a fetched cache of `url`."""
    states = tmp_path / "a", tmp_path / "b"
    for state in states:
        load.from_git(url, "main", state)
    return states


def test_concurrent_push_race_rebuilds_on_the_new_tip(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    state_a, state_b = two_caches(url, tmp_path)
    barrier = threading.Barrier(2)
    results: dict[str, commit.PublishResult] = {}

    def run(name: str, state: Path) -> None:
        barrier.wait()
        results[name] = commit.publish(
            url,
            state,
            branch="dro/rendered",
            tree={"who.txt": name.encode()},
            source_sha=name,
            commit_time=10,
        )

    threads = [
        threading.Thread(target=run, args=(n, s)) for n, s in (("a", state_a), ("b", state_b))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert set(results) == {"a", "b"}
    assert all(r.pushed for r in results.values())
    loser = max(results, key=lambda n: results[n].attempts)
    winner = "a" if loser == "b" else "b"
    tip = repo.branch_sha("dro/rendered")
    assert tip == results[loser].commit
    assert git(repo.bare, "rev-parse", f"{tip}^") == results[winner].commit
    assert git(repo.bare, "show", f"{tip}:who.txt") == loser


def test_non_fast_forward_is_retried_on_the_new_tip(
    served_repo: tuple[SourceRepo, str], tmp_path: Path
) -> None:
    repo, url = served_repo
    state_a, state_b = two_caches(url, tmp_path)
    first = commit.publish(
        url, state_b, branch="out", tree={"f": b"b"}, source_sha="b", commit_time=5
    )
    second = commit.publish(
        url, state_a, branch="out", tree={"f": b"a"}, source_sha="a", commit_time=6
    )
    assert second.attempts == 2
    assert second.pushed
    assert git(repo.bare, "rev-parse", "out^") == first.commit


def test_credentials_never_appear_in_urls_shown() -> None:
    assert (
        gitrepo.redact("https://user:s3cret@example.com/org/repo.git")
        == "https://example.com/org/repo.git"
    )
    assert "s3cret" not in str(
        gitrepo.cache_path(Path("/state"), "https://user:s3cret@example.com/r.git")
    )


def test_previous_state_reads_only_decisions_and_status(
    source_repo: SourceRepo, tmp_path: Path
) -> None:
    url, state = str(source_repo.bare), tmp_path / "state"
    load.from_git(url, "main", state)
    commit.publish(
        url,
        state,
        branch="dro/rendered",
        commit_time=1,
        source_sha="x",
        tree={
            "decisions/shop/d.yaml": statefiles.seal(b"d\n"),
            "status/clusters/c.yaml": statefiles.seal(b"s\n"),
            "clusters/c/shop/d.yaml": b"m\n",
            "README.md": b"r\n",
        },
    )
    assert load.previous_state(url, "dro/rendered", state) == {
        "decisions/shop/d.yaml": statefiles.seal(b"d\n"),
        "status/clusters/c.yaml": statefiles.seal(b"s\n"),
    }


def test_daemon_is_loopback_only(git_daemon: Daemon) -> None:
    assert git_daemon.url("x").startswith("git://127.0.0.1:")


def test_written_packs_pass_git_fsck(source_repo: SourceRepo, tmp_path: Path) -> None:
    url, state = str(source_repo.bare), tmp_path / "state"
    load.from_git(url, "main", state)
    tree = {f"clusters/c{i % 7}/ns/obj-{i}.yaml": f"n: {i % 11}\n".encode() for i in range(300)}
    tree["README.md"] = b"# x\n"
    first = commit.publish(url, state, branch="out", tree=tree, source_sha="a", commit_time=1)
    tree["clusters/c3/ns/obj-3.yaml"] = b"n: changed\n"
    commit.publish(url, state, branch="out", tree=tree, source_sha="b", commit_time=2)
    cache = gitrepo.cache_path(state, url)
    git(cache, "fsck", "--strict", "--no-dangling")
    git(source_repo.bare, "fsck", "--strict", "--no-dangling")
    listed = git(source_repo.bare, "ls-tree", "-r", "--name-only", str(first.commit))
    assert sorted(listed.splitlines()) == sorted(p for p in tree)
    assert git(source_repo.bare, "show", "out:clusters/c3/ns/obj-3.yaml") == "n: changed"
