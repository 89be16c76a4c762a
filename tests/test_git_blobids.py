"""`git.blobids`: the blob ids of a commit's folders, brought from the last commit's answer
through the trees' differences, equal a fresh walk of the commit, in the same order."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.git import blobids

WANTED = ("decisions/", "status/")
PATHS = [
    "decisions/shop/a.yaml",
    "decisions/shop/b.yaml",
    "decisions/web/a.yaml",
    "decisions.yaml",
    "status/clusters/eu.yaml",
    "status/x",
    "clusters/eu/a.yaml",
    "decisions/shop",  # a file where other steps make a folder
]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(PATHS),
        st.sampled_from(["write", "delete", "link", "executable"]),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=6,
)


def _tree(repo: pygit2.Repository, files: dict[str, tuple[bytes, int]]) -> pygit2.Oid:
    """The tree of `files` (path → (content, mode)); a file shadowed by a folder is left out."""
    folders = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    index = pygit2.Index()
    for path, (data, mode) in files.items():
        if path not in folders:
            index.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))
    return index.write_tree(repo)


def _fresh(repo: pygit2.Repository, commit: pygit2.Commit) -> list[tuple[str, str]]:
    return list(blobids._ids(repo, commit.tree, "", WANTED))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(passes=st.lists(STEPS, min_size=1, max_size=6))
def test_kept_ids_equal_a_fresh_walk(
    tmp_path_factory: pytest.TempPathFactory,
    passes: list[list[tuple[str, str, int]]],
) -> None:
    path: Path = tmp_path_factory.mktemp("repo")
    repo = pygit2.init_repository(str(path), bare=True)
    files: dict[str, tuple[bytes, int]] = {}
    modes = {
        "write": pygit2.enums.FileMode.BLOB,
        "link": pygit2.enums.FileMode.LINK,
        "executable": pygit2.enums.FileMode.BLOB_EXECUTABLE,
    }
    signature = pygit2.Signature("t", "t@example.com", 0, 0)
    parents: list[pygit2.Oid] = []
    for steps in passes:
        for name, action, content in steps:
            if action == "delete":
                files.pop(name, None)
            else:
                files[name] = (f"{content}".encode(), modes[action])
        oid = repo.create_commit(None, signature, signature, "m", _tree(repo, files), parents)
        parents = [oid]
        commit = repo[oid]
        assert isinstance(commit, pygit2.Commit)
        kept = blobids.blob_ids(repo, commit, WANTED)
        assert list(kept.items()) == _fresh(repo, commit)


def test_a_commit_of_the_same_tree_is_answered_from_the_last_walk(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    signature = pygit2.Signature("t", "t@example.com", 0, 0)
    tree = _tree(repo, {"decisions/a.yaml": (b"1", pygit2.enums.FileMode.BLOB)})
    first = repo[repo.create_commit(None, signature, signature, "1", tree, [])]
    second = repo[repo.create_commit(None, signature, signature, "2", tree, [first.id])]
    assert isinstance(first, pygit2.Commit)
    assert isinstance(second, pygit2.Commit)
    answer = blobids.blob_ids(repo, first, WANTED)
    answer["decisions/a.yaml"] = "changed by the caller"  # each caller gets its own dict
    assert blobids.blob_ids(repo, second, WANTED) == {
        "decisions/a.yaml": str(repo.create_blob(b"1"))
    }
