"""Keep a cache repository's packfiles few, as `git gc --auto` does after a fetch.

Every pass that changes something adds packfiles to the bare caches under the state folder:
one for the objects a tree write stores (`git.packfile`, without deltas) and one per fetch
that brings anything. libgit2 looks an object up pack by pack, and rescans the pack folder
whenever an object is missing, so a long-running `dro run` would grow slower pass by pass
(with 2,000 packs, 22 ms per missing object), and its state folder would grow by each change
pass's whole rewritten trees (800 KB a pass at 10,000 workloads) until the Pod's emptyDir
limit evicted it.

`auto` therefore merges packs when there are more than `PACK_LIMIT` of them (git's
`gc.autoPackLimit`), geometrically as `git repack --geometric=2` does: the packs with the
fewest objects are rolled up while the next one holds fewer than twice the objects rolled up
so far, so a large base pack is rarely rewritten and a merge costs about what arrived since
the last one. Loose objects go in too. libgit2's pack builder writes the merged pack with
deltas, so a rewritten 10,000-entry tree is stored as a small delta of the one before.

Nothing is removed before the new pack's index is read back and found to hold every object of
what it replaces. A reader that looks for an object in a removed pack at that moment finds it
in the new one, since libgit2 rescans the pack folder on a miss. One merge runs at a time in a
repository (an advisory lock; a busy lock skips the merge), and a pack kept with a `.keep`
file is never merged. A merge killed half-way leaves objects in two packs or an index whose
pack is gone, both harmless, and libgit2's temporary file of the pack it was writing; the
next merge removes the last two once they are older than `ORPHAN_AGE`.

A merge of a cache at 10,000 workloads after 25 change passes takes about 3 s. `dro run`
defers it (`defer`) to the end of the pass (`between_passes`), so that no pass, and no
webhook's commit, waits for it; other commands merge at once, as `git fetch` does.

Called by `cli.run`, `git.gitrepo` and `service`.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pygit2
import structlog

log = structlog.get_logger("dro")

PACK_LIMIT = 50
"""More packs than this start a merge (git's default `gc.autoPackLimit`)."""
FACTOR = 2
"""The geometric factor: a pack stays when it holds at least this many times the objects of
all the packs merged below it."""
THREADS = 2
"""Threads libgit2's pack builder searches deltas with."""
LOCK_NAME = "dro-repack.lock"
ORPHAN_AGE = 600.0
"""Seconds after which an index without its pack, or a temporary pack file, is a killed
merge's or fetch's leftover, not one being written (libgit2's indexer writes the index
before it moves the pack into place)."""
TEMPORARY = ("pack_git2_", "tmp_pack_", "tmp_idx_")
"""The names libgit2 and git give the pack files they are writing."""
_IDX_MAGIC = b"\xfftOc"
_NAMES_START = 8 + 256 * 4
"""Where a version-2 index's object ids begin: after its header and fanout table."""


class _Waiting:
    """The repositories whose merge waits for the end of the pass, with their pack limits;
    `on` False: merge at once."""

    def __init__(self) -> None:
        self.on = False
        self.paths: dict[str, int] = {}
        self.lock = threading.Lock()


_WAITING = _Waiting()


def defer(enabled: bool = True) -> None:
    """From now on, merge at the end of each pass (`between_passes`) instead of at once;
    `enabled=False` goes back to merging at once, forgetting what waits."""
    with _WAITING.lock:
        _WAITING.on = enabled
        _WAITING.paths.clear()


def between_passes() -> list[Merged]:
    """Merge the repositories that asked for it during the pass; what each merge did."""
    with _WAITING.lock:
        waiting = sorted(_WAITING.paths.items())
        _WAITING.paths.clear()
    merged = []
    for path, limit in waiting:
        try:
            repo = pygit2.Repository(path)
        except pygit2.GitError:
            continue  # removed meanwhile (a cache whose first fetch failed)
        done = _merge_now(repo, limit)
        if done is not None:
            merged.append(done)
    return merged


@dataclass(frozen=True, slots=True)
class Pack:
    """One packfile: its `.pack` path and the object count its index gives."""

    path: Path
    objects: int


@dataclass(frozen=True, slots=True)
class Merged:
    """What a merge did: the packs and loose objects it replaced, and the new pack."""

    packs: int
    loose: int
    objects: int
    into: Path


def auto(repo: pygit2.Repository, limit: int | None = None) -> Merged | None:
    """Merge the repository's small packs when it has more than `limit` (the module's
    docstring); None when there was nothing to do, the merge is deferred, another merge
    holds the lock, or the merge failed (logged: the repository still works). `limit`
    defaults to `PACK_LIMIT`."""
    limit = PACK_LIMIT if limit is None else limit
    if _count(Path(repo.path) / "objects" / "pack") <= limit:
        return None
    with _WAITING.lock:
        if _WAITING.on:
            _WAITING.paths[repo.path] = limit
            return None
    return _merge_now(repo, limit)


def _merge_now(repo: pygit2.Repository, limit: int) -> Merged | None:
    folder = Path(repo.path) / "objects" / "pack"
    if _count(folder) <= limit:
        return None
    started = time.perf_counter()
    name = Path(repo.path).name
    try:
        lock = os.open(Path(repo.path) / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _tidy(folder)
            merged = merge(repo, chosen(packs(folder)))
        finally:
            os.close(lock)
    except BlockingIOError:
        return None
    except (OSError, pygit2.GitError) as error:
        log.warning("cache_repack_failed", repository=name, error=str(error))
        return None
    if merged is not None:
        log.info(
            "cache_repacked",
            repository=name,
            packs=merged.packs,
            loose=merged.loose,
            objects=merged.objects,
            seconds=round(time.perf_counter() - started, 3),
        )
    return merged


def merge(repo: pygit2.Repository, merging: list[Pack]) -> Merged | None:
    """Write one pack of every object in `merging` and the loose objects, then remove what it
    replaces; None when that is fewer than two packs and no loose object."""
    objects_dir = Path(repo.path) / "objects"
    loose = _loose(objects_dir)
    if len(merging) + (1 if loose else 0) < 2:
        return None
    wanted: set[bytes] = set(loose)
    for pack in merging:
        wanted.update(index_names(pack.path.with_suffix(".idx")))
    folder = objects_dir / "pack"
    before = {p.name for p in folder.glob("*.idx")}
    builder = pygit2.PackBuilder(repo)
    builder.set_threads(THREADS)
    for raw in sorted(wanted):
        builder.add(pygit2.Oid(raw=raw))
    builder.write(str(folder))
    replaced = {pack.path.with_suffix(".idx") for pack in merging}
    made = [p for p in folder.glob("*.idx") if p.name not in before or p in replaced]
    into = next((p for p in made if wanted <= set(index_names(p))), None)
    if into is None:
        raise OSError(f"the merged pack in {folder} lacks objects of those it replaces")
    for index in replaced - {into}:
        _remove_pack(index.with_suffix(".pack"))
    for path in loose.values():
        path.unlink(missing_ok=True)
    return Merged(len(merging), len(loose), len(wanted), into.with_suffix(".pack"))


def packs(folder: Path) -> list[Pack]:
    """The folder's packs that may be merged (those with an index, no `.keep` file and a
    version-2 index), fewest objects first."""
    found = []
    for index in sorted(folder.glob("pack-*.idx")):
        pack = index.with_suffix(".pack")
        if not pack.exists() or index.with_suffix(".keep").exists():
            continue
        count = index_count(index)
        if count is not None:
            found.append(Pack(pack, count))
    return sorted(found, key=lambda p: (p.objects, p.path.name))


def chosen(ordered: list[Pack]) -> list[Pack]:
    """The packs to merge, from packs ordered fewest objects first: rolled up while the next
    holds fewer than `FACTOR` times the objects taken so far."""
    taken: list[Pack] = []
    total = 0
    for pack in ordered:
        if taken and pack.objects >= FACTOR * total:
            break
        taken.append(pack)
        total += pack.objects
    return taken


def index_count(index: Path) -> int | None:
    """The object count of a version-2 pack index (the last fanout entry); None for another
    version or a file too short to be one."""
    try:
        with index.open("rb") as handle:
            return _count_in(handle.read(_NAMES_START))
    except OSError:
        return None


def index_names(index: Path) -> list[bytes]:
    """The raw object ids a version-2 pack index lists (empty for anything else)."""
    data = index.read_bytes()
    count = _count_in(data)
    if count is None:
        return []
    names = data[_NAMES_START : _NAMES_START + 20 * count]
    return [names[i : i + 20] for i in range(0, len(names), 20)]


def _count_in(data: bytes) -> int | None:
    """The object count a version-2 index starting with `data` gives."""
    if len(data) < _NAMES_START or data[:4] != _IDX_MAGIC or data[4:8] != b"\0\0\0\2":
        return None
    count: int = struct.unpack_from(">I", data, _NAMES_START - 4)[0]
    return count


def _count(folder: Path) -> int:
    try:
        return sum(1 for entry in os.scandir(folder) if entry.name.endswith(".idx"))
    except OSError:
        return 0


def _loose(objects_dir: Path) -> dict[bytes, Path]:
    """Loose object id → its file."""
    found: dict[bytes, Path] = {}
    for sub in objects_dir.glob("[0-9a-f][0-9a-f]"):
        for path in sub.iterdir():
            if len(path.name) == 38 and all(c in "0123456789abcdef" for c in path.name):
                found[bytes.fromhex(sub.name + path.name)] = path
    return found


def _remove_pack(pack: Path) -> None:
    """Remove a pack, its data first: an index left alone by a kill is skipped by readers
    and removed by the next merge (`_tidy`)."""
    for suffix in (".pack", ".rev", ".bitmap", ".mtimes", ".idx"):
        pack.with_suffix(suffix).unlink(missing_ok=True)


def _tidy(folder: Path) -> None:
    """Remove what a killed merge or fetch left and nobody is still writing (older than
    `ORPHAN_AGE`): an index whose pack is gone, and libgit2's temporary pack files."""
    now = time.time()
    for path in folder.iterdir():
        name = path.name
        if name.startswith("pack-") and name.endswith(".idx"):
            if path.with_suffix(".pack").exists():
                continue
        elif not name.startswith(TEMPORARY):
            continue
        try:
            if now - path.stat().st_mtime > ORPHAN_AGE:
                path.unlink()
        except OSError:
            continue
