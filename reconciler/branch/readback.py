"""What the output branch's state files parse to, by git blob id, kept between passes.

A pass reads the last pass's `decisions/` and `status/` back (`lastpass`): at 10,000
workloads that is 10,000 sealed files of ~180 KB, each hashed (the seal), cut and parsed. A
blob id is the digest of the file's bytes, so a file whose id was seen before parses to what
it parsed to then: `ReadBack` keeps that, in memory (`dro run`, across passes) and as JSON in
the state directory (`load.cachefile`, for the next `dro reconcile --once`). Only files as dro
wrote them are kept, and kept as what the seal check and the field checks accepted; a file
that is not (edited by hand, a wrong field) is read, distrusted and warned about on every pass,
exactly as without the cache. The field checks run again on a document that came from the file
cache. A decision's diagnosis block (most of its bytes) is kept unparsed, as `yamlio.cut_block`
cut it, and packed with zlib in the file cache.

`Blobs` is the state files as a mapping read lazily by blob id, so that the bytes of a file
whose decision is already known are not read at all.

Called by `branch.lastpass`, `commit.describe`, `laststate`, `load`, `pipeline.warm` and
`web.branchdata`.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Any

from reconciler import yamlio
from reconciler.branch import paths, statefiles
from reconciler.domain import Decision

Key = tuple[str, str]
"""(path, blob id): the path too, since what a file says of itself names its path."""


class Blobs(Mapping[str, bytes]):
    """The output branch's state files: path → bytes, each blob read when first asked for
    (`read(blob id)`), and each path's blob id (`blob_id`)."""

    def __init__(self, ids: Mapping[str, str], read: Callable[[str], bytes]) -> None:
        self._ids = dict(ids)
        self._read = read
        self._data: dict[str, bytes] = {}
        self._under: dict[str, tuple[str, ...]] = {}

    def __getitem__(self, path: str) -> bytes:
        data = self._data.get(path)
        if data is None:
            data = self._data[path] = self._read(self._ids[path])
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, path: object) -> bool:
        return path in self._ids

    def blob_id(self, path: str) -> str:
        """The git blob id of the file at `path`."""
        return self._ids[path]

    def ids(self) -> Mapping[str, str]:
        """Path → blob id of every file."""
        return self._ids

    def under(self, prefix: str) -> tuple[str, ...]:
        """The paths that start with `prefix`, sorted; found once per prefix
        (`outputtree.under`)."""
        found = self._under.get(prefix)
        if found is None:
            found = self._under[prefix] = tuple(
                sorted(p for p in self._ids if p.startswith(prefix))
            )
        return found


def holds(files: Mapping[str, bytes], path: str, data: bytes) -> bool:
    """Whether the file at `path` in `files` is `data`: by blob id when `files` is `Blobs`
    (its bytes are not read), else by its bytes."""
    if isinstance(files, Blobs):
        return path in files and files.blob_id(path) == blob_id(data)
    return files.get(path) == data


def blob_id(data: bytes) -> str:
    """The git blob id of `data` (hex): the SHA-1 of git's `blob <size>\\0` header and the
    bytes, as git names the file's content."""
    header = b"blob %d\x00" % len(data)
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


class ReadBack:
    """Decisions and statuses by (path, blob id), for the files that were as dro wrote them.

    `decision` and `status` give what the file at a path parses to; entries not asked for
    since `begin` are dropped by `exported`, so the cache holds one pass's files, not every
    version ever read. Not thread-safe: one pass reads the state at a time."""

    def __init__(self) -> None:
        self._decisions: dict[Key, Decision] = {}
        self._statuses: dict[Key, Mapping[str, Any]] = {}
        self._kept: dict[Key, dict[str, Any]] = {}
        """What each entry is as JSON (`exported`), and what a file cache seeded."""
        self._used: set[Key] = set()
        self._changed = False
        self._listing: _Listing | None = None
        """The decision files the last `decisions` call read (`_Listing`)."""

    def begin(self) -> None:
        """A new pass: what it does not ask for is dropped when the cache is written."""
        self._used = set()
        self._changed = False

    @property
    def changed(self) -> bool:
        """True when this pass parsed a file the cache did not know, or left one unused."""
        return self._changed or len(self._used) != len(self._kept)

    def decision(self, path: str, blob: str, data: Callable[[], bytes]) -> Decision:
        """The decision the file at `path` with blob id `blob` holds (`statefiles.decision`);
        `data()` gives its bytes, read only when the cache cannot answer without them."""
        key = (path, blob)
        found = self._decisions.get(key) or self._kept_decision(key)
        if found is not None:
            self._decisions[key] = found
            self._used.add(key)
            return found
        decision, document = statefiles.read_decision(path, data())
        if document is not None:
            self._decisions[key] = decision
            self._kept[key] = {"decision": document}
            self._used.add(key)
            self._changed = True
        return decision

    def decisions(
        self, files: Blobs, read: Callable[[str], Decision | None]
    ) -> list[Decision | None]:
        """`read(path)` of every decision file of `files`, in path order, where each file
        whose path and blob id the last call read, as dro wrote it, gives that decision
        without being looked up one by one (a pass reads 10,000 of them). When the files'
        paths are those of the last call, only the files whose blob changed, and those that
        were not as dro wrote them (read, and warned about, on every pass), are visited."""
        ids = files.ids()
        last = self._listing
        if last is not None and ids.keys() == last.ids.keys() and last.trusted <= self._held():
            self._listing = last.patched(ids, read, self._used, self._decisions)
        else:
            self._listing = _Listing.walked(ids, last, read, self._used, self._decisions)
        return list(self._listing.found)  # the listing's own list stays as it was read

    def _held(self) -> Set[Key]:
        """The keys whose decisions this cache holds."""
        return self._decisions.keys()

    def _kept_decision(self, key: Key) -> Decision | None:
        """The decision a file cache entry holds, its fields checked again; None when there
        is none, or when it is not as `exported` writes it (the file itself is then read)."""
        kept = self._kept.get(key)
        if kept is None or "decision" not in kept or "diagnosis" not in kept:
            return None
        try:
            diagnosis = _unpacked(kept["diagnosis"])
            return statefiles.decision_again(kept["decision"], diagnosis)
        except (statefiles.StateError, KeyError, TypeError, ValueError, zlib.error):
            return None

    def status(self, path: str, blob: str, data: Callable[[], bytes]) -> Mapping[str, Any]:
        """The checked `status` of the `status/` file at `path` (`statefiles.status_of`),
        raising as it does for a file that is not as dro wrote it."""
        key = (path, blob)
        found = self._statuses.get(key)
        if found is None:
            found = self._kept_status(key)
            if found is None:
                document = statefiles.status_document(path, data())
                found = statefiles.checked_status(path, document)
                self._kept[key] = {"status": document}
                self._changed = True
            self._statuses[key] = found
        self._used.add(key)
        return found

    def _kept_status(self, key: Key) -> Mapping[str, Any] | None:
        """The status a file cache entry holds, checked again; None when there is none, or
        when it is not as dro writes it (the file itself is then read)."""
        kept = self._kept.get(key)
        if kept is None or "status" not in kept:
            return None
        try:
            return statefiles.checked_status(key[0], kept["status"])
        except statefiles.StateError:
            return None

    def exported(self) -> dict[str, Any]:
        """The entries this pass used, as JSON values (`load.cachefile`); the others are
        dropped from memory too."""
        self.prune()
        for key, kept in self._kept.items():
            if "decision" in kept and "diagnosis" not in kept:
                kept["diagnosis"] = _packed(self._decisions[key].recorded)
        self._changed = False
        return {f"{blob}/{path}": entry for (path, blob), entry in sorted(self._kept.items())}

    def prune(self) -> None:
        """Drop the entries this pass did not use (the files of older passes)."""
        for key in [key for key in self._kept if key not in self._used]:
            del self._kept[key]
            self._decisions.pop(key, None)
            self._statuses.pop(key, None)

    def adopt(self, entries: dict[str, Any]) -> None:
        """Take a file cache's entries (`exported`) that memory does not hold."""
        for name, entry in entries.items():
            blob, _, path = name.partition("/")
            if path and isinstance(entry, dict):
                self._kept.setdefault((path, blob), entry)


@dataclass(frozen=True, slots=True)
class _Listing:
    """One `ReadBack.decisions` call's answer, and what the next call starts from."""

    ids: Mapping[str, str]
    """Path → blob id of every file the call was given (decision files and others)."""
    position: Mapping[str, int]
    """Each decision file's path → its place in `found` (path order)."""
    found: list[Decision | None]
    trusted: frozenset[Key]
    """The files that gave a decision as dro wrote it, which this cache holds."""
    untrusted: tuple[str, ...]
    """The decision files that did not: read again on every call."""

    @classmethod
    def walked(
        cls,
        ids: Mapping[str, str],
        last: _Listing | None,
        read: Callable[[str], Decision | None],
        used: set[Key],
        held: Mapping[Key, Decision],
    ) -> _Listing:
        """Every decision file of `ids` visited: one whose path and blob `last` trusted
        gives its decision again, any other is `read`."""
        order = sorted(p for p in ids if paths.is_decision(p))
        before = last.found if last is not None else []
        known = last.position if last is not None else {}
        found: list[Decision | None] = []
        trusted: set[Key] = set()
        untrusted: list[str] = []
        for path in order:
            key = (path, ids[path])
            at = known.get(path)
            if last is not None and at is not None and key in last.trusted and key in held:
                decision: Decision | None = before[at]
                used.add(key)
            else:
                decision = read(path)
            _sort(decision, key, held, trusted, untrusted)
            found.append(decision)
        position = {path: i for i, path in enumerate(order)}
        return cls(ids, position, found, frozenset(trusted), tuple(untrusted))

    def patched(
        self,
        ids: Mapping[str, str],
        read: Callable[[str], Decision | None],
        used: set[Key],
        held: Mapping[Key, Decision],
    ) -> _Listing:
        """This listing brought to `ids`, which name the same paths: only the decision
        files whose blob changed, and the untrusted ones, are `read`."""
        changed = {path for path, _ in ids.items() - self.ids.items() if path in self.position}
        found = list(self.found)
        trusted = set(self.trusted)
        untrusted: list[str] = []
        used |= trusted
        for path in sorted(changed.union(self.untrusted)):
            old = (path, self.ids[path])
            trusted.discard(old)
            used.discard(old)
            decision = found[self.position[path]] = read(path)
            _sort(decision, (path, ids[path]), held, trusted, untrusted)
        return _Listing(ids, self.position, found, frozenset(trusted), tuple(untrusted))


def _sort(
    decision: Decision | None,
    key: Key,
    held: Mapping[Key, Decision],
    trusted: set[Key],
    untrusted: list[str],
) -> None:
    """File the decision read at `key`: trusted when it is as dro wrote it and held."""
    if decision is not None and decision.distrusted is None and key in held:
        trusted.add(key)
    else:
        untrusted.append(key[0])


def _packed(recorded: object) -> str | None:
    """A diagnosis block (`yamlio.Verbatim`) as a file cache keeps it: zlib, in base64 (a
    block is ~180 KB of repetitive text at 1,000 clusters; packed it is ~8 KB). None for a
    decision without a block (an inline diagnosis is part of its document)."""
    if not isinstance(recorded, yamlio.Verbatim):
        return None
    return base64.b64encode(zlib.compress(recorded.encode("utf-8"), 1)).decode("ascii")


def _unpacked(packed: Any) -> str | None:
    """The diagnosis block `_packed` packed; ValueError (or zlib.error) for anything else."""
    if packed is None:
        return None
    if not isinstance(packed, str):
        raise ValueError("not a packed diagnosis")
    return zlib.decompress(base64.b64decode(packed, validate=True)).decode("utf-8")
