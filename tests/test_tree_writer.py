"""`git.trees.TreeWriter`: a tree updated where the files changed is the tree written from
nothing, to the byte, whether the writer holds its last tree or starts from a parent commit's;
only the changed files are hashed and the folders above them rebuilt; the push sends only the
new objects."""

from __future__ import annotations

import random
import subprocess
from functools import partial
from pathlib import Path

import pygit2
import pytest

from reconciler import commit
from reconciler.branch import outputtree
from reconciler.git import gitrepo, trees


def _fleet(rng: random.Random, size: int) -> dict[str, bytes]:
    files = {}
    for i in range(size):
        depth = rng.randint(0, 3)
        folders = [f"d{rng.randint(0, 3)}" for _ in range(depth)]
        files["/".join([*folders, f"f{i}.yaml"])] = f"file {i}\n".encode()
    return files


def _changed(rng: random.Random, files: dict[str, bytes], step: int) -> dict[str, bytes]:
    """Some files edited, some removed (whole folders at times), some added deeper."""
    result = dict(files)
    for path in rng.sample(sorted(result), k=min(5, len(result))):
        result[path] = f"edited at {step}\n".encode()
    for path in rng.sample(sorted(result), k=min(3, len(result))):
        del result[path]
    if step % 3 == 0:
        gone = f"d{rng.randint(0, 3)}/"
        result = {p: d for p, d in result.items() if not p.startswith(gone)}
    for i in range(rng.randint(0, 4)):
        result[f"new{step}/n{rng.randint(0, 2)}/a{i}.yaml"] = b"new\n"
    return result


def _repo(tmp_path: Path, name: str = "cache.git") -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / name), bare=True)


def _fresh(tmp_path: Path, files: dict[str, bytes]) -> str:
    """The tree id of `files` written from nothing, in a repository of its own."""
    folder = tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}.git"
    return str(trees.TreeWriter(pygit2.init_repository(str(folder), bare=True)).write(files))


@pytest.mark.parametrize("big", [trees.BIG_FOLDER, 3])
def test_updated_trees_are_the_trees_written_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big: int
) -> None:
    """With `big` 3 every folder keeps its serialised entries between writes."""
    monkeypatch.setattr(trees, "BIG_FOLDER", big)
    rng = random.Random(7)
    repo = _repo(tmp_path)
    held = trees.TreeWriter(repo)
    files = _fleet(rng, 60)
    previous = held.write(files)
    for step in range(1, 13):
        files = _changed(rng, files, step)
        updated = held.write(files)
        started = trees.TreeWriter(repo).write(files, base=previous)
        expected = _fresh(tmp_path, files)
        assert str(updated) == str(started) == expected, step
        tree = repo[updated]
        assert isinstance(tree, pygit2.Tree)
        read = {path: blob.data for path, blob in gitrepo.walk(repo, tree)}  # type: ignore[union-attr]
        assert read == files
        previous = updated
    assert str(held.write({})) == _fresh(tmp_path, {})


def test_one_changed_file_hashes_one_blob_and_rebuilds_the_folders_above_it(
    tmp_path: Path,
) -> None:
    files = {
        f"clusters/c{c}/shop/app-{a}.yaml": b"x %d %d\n" % (c, a)
        for c in range(20)
        for a in range(30)
    }
    repo = _repo(tmp_path)
    base = trees.TreeWriter(repo).write(files)
    changed = {**files, "clusters/c3/shop/app-4.yaml": b"changed\n"}
    started = trees.TreeWriter(repo)
    new = started.write(changed, base=base)
    assert started.blobs_hashed == len(files)  # the base's bytes are not known, only ids
    assert started.folders_rebuilt == 4  # shop/, c3/, clusters/ and the root
    assert str(new) == _fresh(tmp_path, changed)
    held = trees.TreeWriter(repo)
    held.write(files)
    assert str(held.write(changed)) == str(new)
    assert held.blobs_hashed == 1
    assert held.folders_rebuilt == 4


def test_a_base_with_entries_dro_never_writes_comes_out_as_from_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "a").mkdir()
    (work / "a/run.sh").write_text("#!/bin/sh\n")
    (work / "a/run.sh").chmod(0o755)
    (work / "a/plain.yaml").write_text("x\n")
    (work / "link").symlink_to("a/plain.yaml")
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    repo = pygit2.Repository(str(work))
    base = repo.index.write_tree()
    for files in (
        {"a/run.sh": b"#!/bin/sh\n", "a/plain.yaml": b"x\n"},
        {"a/plain.yaml": b"x\n", "link": b"a/plain.yaml"},
        {"a/plain.yaml": b"x\n"},
    ):
        written = trees.TreeWriter(repo).write(files, base=base)
        assert str(written) == _fresh(tmp_path, files)


def test_a_refused_path_changes_nothing_the_writer_holds(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    writer = trees.TreeWriter(repo)
    files = {"a/b.yaml": b"1\n", "c.yaml": b"2\n"}
    writer.write(files)
    with pytest.raises(ValueError, match="refusing to commit"):
        writer.write({"a/b.yaml": b"3\n", "a/.git/x": b"4\n"})
    changed = {"a/b.yaml": b"5\n", "c.yaml": b"2\n"}
    assert str(writer.write(changed)) == _fresh(tmp_path, changed)


def _objects(git_dir: Path) -> set[str]:
    listed = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        cwd=git_dir,
        check=True,
        capture_output=True,
        text=True,
    )
    return set(listed.stdout.split())


def test_a_push_after_one_change_sends_only_the_new_objects(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    files = {
        f"clusters/c{c}/app-{a}.yaml": b"%d %d\n" % (c, a) for c in range(10) for a in range(10)
    }
    state = tmp_path / "state"
    writers = commit.Writers()
    first = commit.publish(
        str(remote), state, branch="out", tree=files, source_sha="a", commit_time=1,
        writers=writers,
    )  # fmt: skip
    assert first.pushed
    before = _objects(remote)
    changed = {**files, "clusters/c2/app-3.yaml": b"changed\n"}
    # a later process: a writer of its own, started from the branch's tip
    second = commit.publish(
        str(remote), state, branch="out", tree=changed, source_sha="b", commit_time=2
    )
    assert second.pushed
    assert second.commit is not None
    sent = _objects(remote) - before
    # the commit, the blob, and the trees of clusters/c2/, clusters/ and the root
    assert len(sent) == 5, sent
    assert second.commit in sent


def test_a_writer_told_the_changed_paths_writes_the_tree_written_from_nothing(
    tmp_path: Path,
) -> None:
    """`since` (trees patched from one another, `branch.outputtree`): only the paths that
    differ are compared, and the tree is the same; a tree of no common ancestor is compared
    whole."""
    rng = random.Random(11)
    writer = trees.TreeWriter(_repo(tmp_path))
    tree = outputtree.Tree(_fleet(rng, 60))
    writer.write(tree)
    for step in range(1, 9):
        files = _changed(rng, dict(tree), step)
        removed = [p for p in tree if p not in files]
        updates = {p: d for p, d in files.items() if tree.get(p) != d}
        tree = outputtree.Tree.patched(tree, updates, removed)
        told = writer.write(tree, since=partial(outputtree.difference, tree))
        assert str(told) == _fresh(tmp_path, dict(tree)), step
        assert writer.blobs_hashed <= len(tree.changed), step
        assert writer.paths_compared <= len(tree.changed) + 1, step  # + the side's
        if step % 2:  # a tree patched from this one is written too (drift, held status)
            side = outputtree.Tree.patched(tree, {f"status/s{step}.yaml": b"s\n"}, [])
            told = writer.write(side, since=partial(outputtree.difference, side))
            assert str(told) == _fresh(tmp_path, dict(side)), step
            assert writer.paths_compared == 1, step
    stranger = outputtree.Tree({**tree, "elsewhere.yaml": b"x\n"})
    whole = writer.write(stranger, since=partial(outputtree.difference, stranger))
    assert str(whole) == _fresh(tmp_path, dict(stranger))
    assert writer.paths_compared == len(stranger)
