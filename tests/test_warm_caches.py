"""The parse and read-back caches: a warm pass gives the bytes a cold one gives.

`pipeline.Warm` keeps each source file's parse (`validate.parsecache`) and what each state
file of the output branch parsed to (`branch.readback`), in memory across the passes of one
process and as files in the state directory (`load.cachefile`). These tests run the same pass
cold and warm and compare the output branch's tree, byte for byte (its git tree id), and show
that a corrupt cache file, or one written for another repository, is ignored with a warning.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import EXAMPLE, SourceRepo, git, make_source_repo

from reconciler import cli, laststate, load, pipeline, validate
from reconciler.branch import lastpass, paths, readback
from reconciler.domain import Source, SourceFile
from reconciler.load import cachefile
from reconciler.settings import Settings
from reconciler.validate import parsecache

WHEN = 1_790_000_000.0
INFERENCE = "workloads/ml/inference.yaml"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pass runs at the same time, so that two passes can give the same bytes."""
    monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda: WHEN))


def reconcile(repo: SourceRepo, state: Path, *more: str) -> int:
    return cli.main(
        ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(state), *more]
    )


def rendered_tree(state: Path) -> str:
    """The tree id of the output branch this state directory's cache committed last."""
    (cache,) = (state / "repos").glob("*.git")
    return git(cache, "rev-parse", "dro/rendered^{tree}")


def cache_files(state: Path) -> dict[str, Path]:
    return {p.name.rsplit(".", 2)[-2]: p for p in (state / "repos").glob("*.json")}


def changed_source(repo: SourceRepo) -> None:
    """A new source commit: one workload scaled."""
    text = (repo.work / INFERENCE).read_text()
    repo.write({INFERENCE: text.replace("replicas: 4", "replicas: 5")})
    repo.commit("scale")


def two_states(tmp_path: Path) -> tuple[SourceRepo, Path, Path]:
    """A repo reconciled once, changed, and two copies of its state directory: one with the
    cache files the first pass wrote, one without."""
    repo = make_source_repo(tmp_path / "src")
    warm = tmp_path / "warm"
    assert reconcile(repo, warm) == 0
    assert set(cache_files(warm)) == {"parsed"}  # no output branch to read back yet
    assert reconcile(repo, warm) == 0
    assert set(cache_files(warm)) == {"parsed", "readback"}
    changed_source(repo)
    cold = tmp_path / "cold"
    shutil.copytree(warm, cold)
    for path in cache_files(cold).values():
        path.unlink()
    return repo, warm, cold


def test_a_second_reconcile_with_the_cache_files_commits_the_tree_a_cold_one_commits(
    tmp_path: Path,
) -> None:
    repo, warm, cold = two_states(tmp_path)
    assert reconcile(repo, cold, "--no-push") == 0
    assert reconcile(repo, warm, "--no-push") == 0
    assert rendered_tree(warm) == rendered_tree(cold)
    assert set(cache_files(cold)) == {"parsed", "readback"}  # the cold pass wrote its own


def test_a_pass_with_an_in_memory_warm_decides_and_renders_as_a_cold_pass(
    tmp_path: Path,
) -> None:
    repo = make_source_repo(tmp_path / "src")
    settings = Settings(repo=str(repo.bare), state_dir=tmp_path / "state", push=True)
    warm = pipeline.Warm()  # memory only: the caches come from the pass before
    pipeline.reconcile_once(settings, warm=warm)
    changed_source(repo)
    settings = Settings(repo=str(repo.bare), state_dir=tmp_path / "state", push=False)
    hot = pipeline.reconcile_once(settings, warm=warm)
    fresh = pipeline.reconcile_once(settings, warm=pipeline.Warm())
    assert hot.planned.decisions == fresh.planned.decisions
    assert hot.planned.tree == fresh.planned.tree
    assert not cache_files(tmp_path / "state")  # no state_dir in the Warm: nothing on disk


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_corrupt_cache_file_is_ignored_with_a_warning_and_the_pass_is_right(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], damage: str
) -> None:
    repo, warm, cold = two_states(tmp_path)
    for path in cache_files(warm).values():
        data = path.read_bytes()
        if damage == "flip":
            data = data[:-10] + bytes([data[-10] ^ 1]) + data[-9:]
        elif damage == "truncate":
            data = data[: len(data) // 2]
        else:
            data = b"!!python/object:os.system ['echo pwned']\n"
        path.write_bytes(data)
    assert reconcile(repo, cold, "--no-push") == 0
    capfd.readouterr()
    assert reconcile(repo, warm, "--no-push") == 0
    err = capfd.readouterr().err
    assert err.count("cache_ignored") == 2, err
    assert "Traceback" not in err
    assert rendered_tree(warm) == rendered_tree(cold)
    for path in cache_files(warm).values():  # rebuilt by the pass
        assert cachefile.read(warm, str(repo.bare), path.name.rsplit(".", 2)[-2]) is not None


def test_a_cache_file_written_for_one_repo_is_never_used_for_another(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    first = make_source_repo(tmp_path / "first")
    second = make_source_repo(tmp_path / "second")
    assert reconcile(first, state) == 0
    assert reconcile(first, state) == 0
    assert cachefile.read(state, str(first.bare), laststate.READBACK)  # there, for the first
    for kind in ("parsed", laststate.READBACK):
        mine = cachefile.path_of(state, str(first.bare), kind)
        theirs = cachefile.path_of(state, str(second.bare), kind)
        assert mine != theirs
        theirs.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mine, theirs)
    capfd.readouterr()
    assert cachefile.read(state, str(second.bare), laststate.READBACK) is None
    assert "written for another repository" in capfd.readouterr().err
    assert reconcile(second, state) == 0
    err = capfd.readouterr().err
    assert err.count("written for another repository") == 2, err


def invalid_source() -> Source:
    """The example repo with two files broken: one unparsable, one with a wrong field."""
    files = {f.path: f.data for f in load.from_directory(EXAMPLE).files}
    files["workloads/ml/broken.yaml"] = b"kind: Deployment\nmetadata: {name: x\n"
    files[INFERENCE] = files[INFERENCE].replace(b"replicas: 4", b"replicas: six")
    return Source(files=tuple(SourceFile(path=p, data=d) for p, d in sorted(files.items())))


def test_a_cached_invalid_file_reports_the_same_lines_as_a_fresh_parse() -> None:
    source = invalid_source()
    fresh = [str(p) for p in validate.check(source).problems]
    assert any("broken.yaml" in line for line in fresh)
    assert any(INFERENCE in line for line in fresh)
    cache = parsecache.ParseCache()
    first = [str(p) for p in validate.check(source, parsed=cache).problems]
    cache.begin()
    again = [str(p) for p in validate.check(source, parsed=cache).problems]
    reloaded = parsecache.ParseCache()
    reloaded.adopt(cache.exported())  # as the next process reads it from its file
    reloaded.begin()
    from_file = [str(p) for p in validate.check(source, parsed=reloaded).problems]
    assert fresh == first == again == from_file
    assert not reloaded.changed  # every file came from the cache


def test_a_cached_parse_is_not_shared_between_passes(tmp_path: Path) -> None:
    """A pass that changed a parsed document in place leaves the next pass's parse alone."""
    cache = parsecache.ParseCache()
    data = (EXAMPLE / INFERENCE).read_bytes()
    first = cache.documents(INFERENCE, data)
    first[0].body["spec"]["replicas"] = 99
    again = cache.documents(INFERENCE, data)
    assert again[0].body["spec"]["replicas"] == 4
    assert again[0].origin.lines == first[0].origin.lines


def test_a_decision_from_the_cache_file_is_the_decision_its_blob_holds_without_reading_it(
    tmp_path: Path,
) -> None:
    repo = make_source_repo(tmp_path / "src")
    state = tmp_path / "state"
    assert reconcile(repo, state) == 0
    files = load.previous_blobs(str(repo.bare), "dro/rendered", state)
    assert isinstance(files, readback.Blobs)
    fresh = lastpass.decisions(dict(files))
    cache = readback.ReadBack()
    assert lastpass.decisions(files, cache) == fresh
    kept = json.loads(json.dumps(cache.exported()))  # as the next process reads its file
    again = readback.ReadBack()
    again.adopt(kept)
    unread = readback.Blobs({p: files.blob_id(p) for p in files}, blob_never_read)
    decided = lastpass.decisions(unread, again)
    assert decided == fresh
    assert any(d.recorded for d in decided.values())  # the diagnosis blocks came back too
    assert not again.changed


def blob_never_read(blob: str) -> bytes:
    raise AssertionError(f"blob {blob} was read although the cache knew it")


def test_a_cache_entry_that_fails_the_field_checks_is_not_believed(tmp_path: Path) -> None:
    repo = make_source_repo(tmp_path / "src")
    state = tmp_path / "state"
    assert reconcile(repo, state) == 0
    files = load.previous_blobs(str(repo.bare), "dro/rendered", state)
    assert isinstance(files, readback.Blobs)
    cache = readback.ReadBack()
    fresh = lastpass.decisions(files, cache)
    kept = cache.exported()
    for entry in kept.values():
        if "decision" in entry:
            entry["decision"]["status"]["clusters"] = [{"name": "x", "replicas": "many"}]
    again = readback.ReadBack()
    again.adopt(kept)
    assert lastpass.decisions(files, again) == fresh  # each file read again instead


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ({"format": "dro cache", "version": 2}, "another version of dro (cache format 2, not 1)"),
        ({"format": "dro cache", "version": 1, "kind": "readback"}, "not a parsed cache file"),
        ({"format": "other", "version": 1}, "not a dro cache file"),
        ({"format": "dro cache", "version": 1, "kind": "parsed"}, "another repository"),
    ],
)
def test_a_cache_file_that_is_not_this_dros_for_this_repo_says_why_it_is_ignored(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], header: dict[str, object], why: str
) -> None:
    url = "https://git.example.com/fleet.git"
    cachefile.write(tmp_path, url, "parsed", {"a": "b"})
    assert cachefile.read(tmp_path, url, "parsed") == {"a": "b"}
    where = cachefile.path_of(tmp_path, url, "parsed")
    where.write_bytes(json.dumps(header).encode() + b"\n{}")
    capfd.readouterr()
    assert cachefile.read(tmp_path, url, "parsed") is None
    err = capfd.readouterr().err
    assert "cache_ignored" in err
    assert why in err


def test_memory_holds_the_files_of_the_last_pass_only() -> None:
    cache = parsecache.ParseCache()
    for replicas in range(5):  # five versions of one file, one per pass
        cache.begin()
        data = (
            (EXAMPLE / INFERENCE).read_bytes().replace(b"replicas: 4", b"replicas: %d" % replicas)
        )
        cache.documents(INFERENCE, data)
        cachefile.keep(cache, None, None, "parsed")
    assert len(cache.exported()) == 1


def test_a_secret_in_the_source_is_never_written_to_a_cache_file(tmp_path: Path) -> None:
    """The example repo's plaintext Secret (a warning of its own) lives in the source and its
    git cache only: the parse cache keeps every other file and never that one."""
    repo = make_source_repo(tmp_path / "fleet")
    secret = (repo.work / "workloads/payments/ledger-db.yaml").read_text()
    assert "kind: Secret" in secret
    planted = "planted-password-5f1c0a7d"
    repo.write({"workloads/payments/ledger-db.yaml": secret + f"\n# {planted}\n"})
    text = (repo.work / "workloads/payments/ledger-db.yaml").read_text()
    value = text.split("POSTGRES_PASSWORD:", 1)[1].split("\n", 1)[0].strip()
    assert len(value) > 10, "the Secret has a password"
    repo.commit("a Secret")
    state = tmp_path / "state"
    assert reconcile(repo, state, "--no-push") == 0
    files = cache_files(state)
    assert "parsed" in files
    for path in files.values():
        written = path.read_text()
        assert value not in written
        assert planted not in written
    assert "workloads/payments/checkout.yaml" in files["parsed"].read_text()


def test_a_second_read_back_takes_unchanged_blobs_as_they_were_and_reads_changed_ones(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`ReadBack.decisions`: a decision file whose blob id is unchanged since the last read
    is not looked at again; a changed one is read; one not as dro wrote it is read (and
    warned about) on every pass."""
    repo = make_source_repo(tmp_path / "src")
    state = tmp_path / "state"
    assert reconcile(repo, state) == 0
    files = load.previous_blobs(str(repo.bare), "dro/rendered", state)
    assert isinstance(files, readback.Blobs)
    cache = readback.ReadBack()
    cache.begin()
    first = lastpass.decisions(files, cache)
    ids = dict(files.ids())
    decision_paths = sorted(p for p in ids if p.startswith("decisions/"))
    edited, hand = decision_paths[0], decision_paths[1]
    data = {p: files[p] for p in ids}
    data[edited] = data[edited].replace(b"replicas: ", b"replicas:  ", 1)  # seal broken
    data[hand] = b"not: [a decision\n"
    blobs = {p: readback.blob_id(d) for p, d in data.items()}
    read: list[str] = []

    def reading(blob: str) -> bytes:
        read.append(blob)
        return next(d for p, d in data.items() if blobs[p] == blob)

    capfd.readouterr()
    for _ in range(2):  # the unreadable and distrusted files warn on every pass
        cache.begin()
        read.clear()
        again = lastpass.decisions(readback.Blobs(blobs, reading), cache)
        assert sorted(read) == sorted({blobs[edited], blobs[hand]})
        err = capfd.readouterr().err
        assert hand in err
        assert edited in err
        unchanged = {k: d for k, d in first.items() if paths.decision_path(k) not in (edited, hand)}
        assert {k: again[k] for k in unchanged} == unchanged
        assert all(again[k] is first[k] for k in unchanged)
    assert lastpass.decisions(readback.Blobs(blobs, reading), None) == again
