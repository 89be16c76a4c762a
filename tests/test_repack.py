"""`git.repack`: a cache's many small packs are merged into one, and no object is lost on the way
(real repositories, checked by real `git fsck`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest
import structlog
from conftest import SourceRepo

from reconciler import pipeline
from reconciler import service as runner
from reconciler.git import gitrepo, repack, trees
from reconciler.service import metrics
from reconciler.settings import Settings


@pytest.fixture(autouse=True)
def _merge_at_once() -> object:
    repack.defer(False)
    yield
    repack.defer(False)


def _grown(folder: Path, writes: int, *, files: int = 600) -> pygit2.Repository:
    """A bare repository after `writes` tree writes and commits, as a change pass makes them:
    one pack per write (a 600-file folder rewritten each time), one loose commit each."""
    repo = pygit2.init_repository(str(folder), bare=True)
    writer = trees.TreeWriter(repo)
    content = {f"clusters/c{i:04d}.yaml": f"name: c{i}\n".encode() for i in range(files)}
    parents: list[pygit2.Oid] = []
    signature = pygit2.Signature("dro", "dro@example.com", 1_700_000_000, 0)
    for step in range(writes):
        content[f"clusters/c{step % files:04d}.yaml"] = f"step: {step}\n".encode()
        tree = writer.write(content)
        oid = repo.create_commit(None, signature, signature, f"pass {step}", tree, parents)
        parents = [oid]
    repo.references.create("refs/heads/dro/rendered", parents[0])
    return repo


def _objects(folder: Path) -> set[bytes]:
    """Every object id the repository stores, from its pack indexes and loose files."""
    found: set[bytes] = set()
    for index in (folder / "objects" / "pack").glob("*.idx"):
        found.update(repack.index_names(index))
    for sub in (folder / "objects").glob("[0-9a-f][0-9a-f]"):
        found.update(bytes.fromhex(sub.name + p.name) for p in sub.iterdir())
    return found


def _fsck(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(folder), "fsck", "--full", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        check=False,
    )


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in (folder / "objects").rglob("*") if p.is_file())


def test_many_packs_become_few_and_every_object_stays_readable(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 12)
    stored = _objects(folder)
    opened_before = pygit2.Repository(str(folder))  # reads no object before the merge
    size = _size(folder)

    merged = repack.auto(repo, limit=4)

    # the first write's pack holds the 600 files, more than twice what came after: it stays
    assert merged is not None
    assert merged.packs == 11
    assert merged.loose == 12
    assert len(list((folder / "objects" / "pack").glob("*.idx"))) == 2
    assert not list((folder / "objects").glob("[0-9a-f][0-9a-f]/*"))
    assert _objects(folder) == stored
    assert _size(folder) < size / 3  # the rewritten folder trees are deltas now
    for handle in (opened_before, repo, pygit2.Repository(str(folder))):
        assert all(len(handle[pygit2.Oid(raw=raw)].read_raw()) >= 0 for raw in stored)
    checked = _fsck(folder)
    assert checked.returncode == 0, checked.stderr


def test_a_repository_within_the_limit_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 3)
    before = sorted(p.name for p in (folder / "objects").rglob("*"))
    assert repack.auto(repo, limit=4) is None
    assert sorted(p.name for p in (folder / "objects").rglob("*")) == before


def test_a_large_base_pack_is_not_rewritten_by_later_merges(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 8, files=2000)  # one write of 2,000 blobs, then small ones
    base = max((folder / "objects" / "pack").glob("*.pack"), key=lambda p: p.stat().st_size)
    merged = repack.auto(repo, limit=2)
    assert merged is not None
    assert merged.packs == 7
    assert base.exists()


def test_chosen_rolls_up_the_small_packs_geometrically() -> None:
    def pack(count: int) -> repack.Pack:
        return repack.Pack(Path(f"pack-{count:06d}.pack"), count)

    ordered = [pack(n) for n in (3, 3, 4, 5, 30, 1000)]
    assert [p.objects for p in repack.chosen(ordered)] == [3, 3, 4, 5]
    assert [p.objects for p in repack.chosen([pack(1), pack(2), pack(4)])] == [1]


def test_a_kept_pack_is_never_merged(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 6)
    kept = repack.packs(folder / "objects" / "pack")[0].path  # one of the small ones
    kept.with_suffix(".keep").write_text("pinned\n")
    merged = repack.auto(repo, limit=2)
    assert merged is not None
    assert merged.packs == 4
    assert kept.exists()
    assert kept.with_suffix(".idx").exists()


def test_a_merge_under_way_elsewhere_is_not_started_again(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 6)
    before = sorted(p.name for p in (folder / "objects").rglob("*"))
    held = os.open(folder / repack.LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert repack.auto(repo, limit=2) is None
    finally:
        os.close(held)
    assert sorted(p.name for p in (folder / "objects").rglob("*")) == before
    assert repack.auto(repo, limit=2) is not None


def test_a_merge_that_fails_removes_nothing_and_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 6)
    loose = next((folder / "objects").glob("[0-9a-f][0-9a-f]/*"))
    loose.chmod(0o644)
    loose.write_bytes(b"not zlib")  # an object the pack builder cannot read
    before = sorted(p.name for p in (folder / "objects" / "pack").iterdir())
    with structlog.testing.capture_logs() as logs:
        assert repack.auto(repo, limit=2) is None
    assert [e["event"] for e in logs] == ["cache_repack_failed"]
    assert sorted(p.name for p in (folder / "objects" / "pack").iterdir()) == before
    assert loose.exists()


def test_what_a_killed_merge_leaves_is_harmless_and_tidied(tmp_path: Path) -> None:
    folder = tmp_path / "cache.git"
    repo = _grown(folder, 6)
    stored = _objects(folder)
    pack_folder = folder / "objects" / "pack"
    spare = tmp_path / "spare.idx"
    first = sorted(pack_folder.glob("*.idx"))[0]
    shutil.copy(first, spare)
    assert repack.auto(repo, limit=2) is not None
    orphan = pack_folder / first.name  # killed between removing a pack and its index
    shutil.copy(spare, orphan)
    fresh = pygit2.Repository(str(folder))
    assert all(fresh[pygit2.Oid(raw=raw)] is not None for raw in stored)
    _grown_more(repo, 4)
    assert repack.auto(repo, limit=2) is not None
    assert orphan.exists()  # young: it may be a fetch's index written before its pack
    temporary = pack_folder / "pack_git2_0123456789abcdef"  # a pack being written, killed
    temporary.write_bytes(b"PACK")
    _grown_more(repo, 4, "fresh")
    assert repack.auto(repo, limit=2) is not None
    assert temporary.exists()  # young: a fetch may be writing it
    for stale in (orphan, temporary):
        os.utime(stale, (1_000_000_000, 1_000_000_000))
    _grown_more(repo, 4, "later")
    assert repack.auto(repo, limit=2) is not None
    assert not orphan.exists()
    assert not temporary.exists()
    assert _objects(folder) >= stored


def _grown_more(repo: pygit2.Repository, writes: int, tag: str = "") -> None:
    """`writes` more packs, of files named by `tag` (a write the repository has seen adds
    nothing)."""
    writer = trees.TreeWriter(repo)
    for step in range(writes):
        writer.write({f"more/{tag}{step}.yaml": f"more: {tag}{step}\n".encode()})


def test_dro_run_merges_after_the_pass_not_in_its_fetch(
    source_repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repack, "PACK_LIMIT", 3)
    url = str(source_repo.bare)
    repo = gitrepo.open_cache(url, tmp_path / "state")
    gitrepo.fetch(repo)
    _grown_more(repo, 5)
    folder = Path(repo.path)
    count = len(list((folder / "objects" / "pack").glob("*.idx")))
    assert count > 3

    repack.defer()
    gitrepo.fetch(repo)
    assert len(list((folder / "objects" / "pack").glob("*.idx"))) == count
    merged = repack.between_passes()
    assert [m.packs for m in merged] == [count - 1]  # all but the fetched example repository
    assert repack.between_passes() == []

    repack.defer(False)
    _grown_more(repo, 5, "later")
    gitrepo.fetch(repo)  # any other command merges when it fetches, as git does
    assert len(list((folder / "objects" / "pack").glob("*.idx"))) <= 3


def test_the_runner_merges_once_its_pass_has_ended(
    source_repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repack, "PACK_LIMIT", 3)
    repo = gitrepo.open_cache(str(source_repo.bare), tmp_path / "state")
    gitrepo.fetch(repo)
    _grown_more(repo, 5)
    packs = Path(repo.path) / "objects" / "pack"
    seen_in_pass: list[int] = []

    def a_pass(_settings: Settings, _hook: pipeline.StageHook) -> pipeline.PassResult:
        gitrepo.fetch(repo)
        seen_in_pass.append(len(list(packs.glob("*.idx"))))
        raise runner.Interrupted("the stand-in pass stops after its fetch")

    loop = runner.Runner(
        Settings(repo="unused"), runner.RunOptions(), metrics.Metrics(), run_pass=a_pass
    )
    loop.leading.set()
    repack.defer()  # as `dro run` does
    loop.attempt()
    assert seen_in_pass == [6]  # the pass's own fetch merged nothing
    assert len(list(packs.glob("*.idx"))) == 2
