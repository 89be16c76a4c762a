"""What validation keeps between passes, so that a pass re-checks only what changed.

`Memo` is `pipeline.Warm`'s `validated` field, in memory only. It holds, by path, each
source file's bytes and its `files.Part` (its documents, clusters and policies, and the
problems found in it alone); a file whose bytes are unchanged gives the very same objects
again, and a changed file keeps each document equal, value for value and line for line, to
the one at its place before. Each object document's own check (its schema, quantities, scope:
`references.checked`) is kept by the document's identity while the Kubernetes version and the
repo's CRDs stay the same, with the `Workload` it gave, so an unchanged workload is the same
`Workload` object pass after pass. The checks across documents keep their per-workload
results the same way (`claims`, `needs`).

A memo is an optimisation only: `validate.check` with a fresh memo (as without one) gives the
same result, problem for problem and value for value, as with one that earlier passes warmed
(tests/test_validate_memo.py checks it on random change sequences). A file holding a Secret
is never kept, as in `parsecache`.

Called by `validate` and `pipeline.warm`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from reconciler import yamlio
from reconciler.domain import (
    Document,
    PlacementPolicy,
    SchedulerConfig,
    Source,
    Workload,
    claims,
)
from reconciler.domain.data import DataAccess
from reconciler.domain.rollout import PROMOTE_ANNOTATION
from reconciler.errors import Problem
from reconciler.kube import movehooks
from reconciler.validate import datamodel, dependencies, files, guard, parsecache
from reconciler.validate import references as refs
from reconciler.validate.kept import Kept, V

Parse = Callable[[str, bytes], list[Document]]


@dataclass(frozen=True, slots=True)
class Facts:
    """What validation reads of one workload alone (and the guard's layers), kept by the
    workload's identity: the cross-file checks then walk only the workloads they concern."""

    stem: tuple[str, str]
    """Its rendered file's folder and stem, lowercase (`names.shared_files`)."""
    guarded: tuple[Problem, ...]
    """What the guard's layers deny in it (`guard.check_objects`)."""
    data: tuple[DataAccess, ...]
    """The data access its `multicluster.io/data` annotation declares."""
    data_problems: tuple[Problem, ...]
    """What is wrong with that annotation."""
    hook: bool
    """Whether it carries `multicluster.io/data-sync-for` (`movehooks.find`)."""
    promote: bool
    """Whether it carries `multicluster.io/rollout-promote` (`rollouts.promote_problems`)."""


def facts(workload: Workload, layers: Sequence[guard.Guard]) -> Facts:
    """A workload's `Facts` under the guard's `layers`."""
    key = workload.key
    annotations = (workload.manifest.get("metadata") or {}).get("annotations") or {}
    problems: list[Problem] = []
    declared = datamodel.annotated(annotations, workload.origin, problems)
    return Facts(
        stem=(key.folder.lower(), key.file_stem),
        guarded=tuple(guard.check_objects(layers, [workload])),
        data=declared,
        data_problems=tuple(problems),
        hook=movehooks.SYNC_FOR in annotations,
        promote=PROMOTE_ANNOTATION in annotations,
    )


@dataclass(frozen=True, slots=True)
class _File:
    """One kept file: its bytes, the parse cache's key for them, its documents and its part."""

    data: bytes
    key: str | None
    documents: tuple[Document, ...]
    part: files.Part


class Memo:
    """Per-file parts and per-document checks of the last pass (see the module's text)."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._now: list[files.Part] = []
        self._checked: Kept[Document, tuple[bool, refs.Checked]] = Kept()
        self._by_part: dict[int, _Run] = {}
        self._identities: Counter[tuple[str, str, str, str]] = Counter()
        self._duplicates: set[tuple[str, str, str, str]] = set()
        self.runs: list[list[Workload]] | None = None
        """The workloads of the last `objects`, file by file, when they are all of them (no
        duplicate dropped); None otherwise."""
        self._context: tuple[str, tuple[Document, ...]] | None = None
        self.crds: refs.CRDs = {}
        """The repo's CRDs, as `checked` last found them (`references.crds_of`)."""
        self._placement: tuple[PlacementPolicy, ...] | None = None
        self._claimer: claims.Claims | None = None
        self._claims: Kept[Workload, claims.Claim] = Kept()
        self._layers: tuple[guard.Guard, ...] | None = None
        self._facts: Kept[Workload, Facts] = Kept()
        self.dependencies = dependencies.Known()
        """`dependencies.bundled`'s per-workload results."""
        self._config: tuple[Document | None, SchedulerConfig, list[Problem]] | None = None
        self._ordered: tuple[list[Workload], tuple[Workload, ...], dict[int, int]] = ([], (), {})
        """The last `ordered` call's workloads, its answer, and where each object sits in it."""

    def config(
        self, into: files.Part, make: Callable[[files.Part], SchedulerConfig]
    ) -> SchedulerConfig:
        """`make(into)`, the SchedulerConfig of dro.yaml, kept (with its problems) while
        dro.yaml's document is the very same."""
        doc = into.config_docs[0] if into.config_docs else None
        if self._config is None or self._config[0] is not doc:
            alone = files.Part()
            alone.config_docs = into.config_docs
            self._config = (doc, make(alone), alone.problems)
        into.problems += self._config[2]
        return self._config[1]

    def parts(self, source: Source, parsed: parsecache.ParseCache | None) -> files.Part:
        """Every routed file's part joined in the source's order, after what loading found
        (`Source.problems`, `Source.links`); unchanged files from the memo."""
        whole = files.Part()
        whole.problems += source.problems
        for path, what in source.links:
            whole.problems.append(
                Problem(
                    path=path,
                    line=1,
                    message=f"{path} is {what}, which dro does not read: the objects it holds "
                    "would silently drop out of the placement; commit the files themselves",
                )
            )
        parse: Parse = parsed.documents if parsed is not None else yamlio.parse_documents
        kept: dict[str, _File] = {}
        self._now = []
        for file in source.files:
            kind = files.route(file.path)
            if kind is None:
                continue
            before = self._files.get(file.path)
            if before is not None and before.data == file.data:
                if parsed is not None and before.key is not None:
                    parsed.touch(before.key)
                kept[file.path] = before
                whole.join(before.part)
                self._now.append(before.part)
                continue
            found = files.parsed(file.path, file.data, parse)
            if before is not None and not isinstance(found, Problem):
                found = _reused(found, before.documents)
            one = files.part(file, kind, found)
            whole.join(one)
            self._now.append(one)
            documents = () if isinstance(found, Problem) else tuple(found)
            if not any(parsecache.holds_secret(doc.body) for doc in documents):
                key = parsecache.key_of(file.path, file.data) if parsed is not None else None
                kept[file.path] = _File(file.data, key, documents, one)
        self._files = kept
        return whole

    def objects(self, version: str, problems: list[Problem]) -> list[Workload]:
        """`references.unique_objects` of `references.checked` of every object document of
        the last `parts`: each document's check kept by its identity while the Kubernetes
        version and the repo's CRDs are unchanged, an unchanged file's checks reused whole,
        and the objects joined file by file while no two of them share an identity."""
        crd_docs = tuple(doc for one in self._now for doc in one.crds)
        context = (version, crd_docs)
        if self._context is None or not _same_context(self._context, context):
            self._checked.clear()
            self._by_part = {}
            self._identities.clear()
            self._duplicates.clear()
        self._context = context
        crds = self.crds = refs.crds_of(crd_docs)
        by_part: dict[int, _Run] = {}
        for one in self._now:
            if not one.objects:
                continue
            kept = self._by_part.get(id(one))
            if kept is None or kept.part is not one:
                alone = len(one.objects) == 1
                found = self._checked.values(
                    one.objects, partial(_check, version, crds, alone), partial(_alike, alone)
                )
                kept = _run(one, [c for _, c in found])
            else:
                self._checked.asked(one.objects)
            by_part[id(one)] = kept
        self._checked.prune(sum(len(run.part.objects) for run in by_part.values()))
        self._count(by_part)
        if self._duplicates:
            self.runs = None
            results = [pair for run in by_part.values() for pair in run.results]
            return refs.unique_objects(results, problems)
        objects: list[Workload] = []
        for run in by_part.values():
            problems += run.problems
            objects += run.workloads
        self.runs = [run.workloads for run in by_part.values()]
        return objects

    def _count(self, by_part: dict[int, _Run]) -> None:
        """Make `_duplicates` the identities more than one object of `by_part` has, from
        the counts of the last call by the files that left and came."""
        for key, run in self._by_part.items():
            if by_part.get(key) is not run:
                for lowered in run.lowered:
                    self._identities[lowered] -= 1
                    if self._identities[lowered] <= 1:
                        self._duplicates.discard(lowered)
                    if not self._identities[lowered]:
                        del self._identities[lowered]
        for key, run in by_part.items():
            if self._by_part.get(key) is not run:
                for lowered in run.lowered:
                    self._identities[lowered] += 1
                    if self._identities[lowered] > 1:
                        self._duplicates.add(lowered)
        self._by_part = by_part

    def claims(
        self, placement: Sequence[PlacementPolicy], objects: Sequence[Workload]
    ) -> list[tuple[Workload, claims.Claim]]:
        """Each workload's claim among the placement policies (`references.claimed`), kept by
        the workload's identity while the policies are the very same objects."""
        if self._claimer is None or not _same_items(placement, self._placement or ()):
            self._claimer, self._placement = claims.Claims(placement), tuple(placement)
            self._claims.clear()
        found = self._in_runs(self._claims, objects, self._claimer.claim)
        self._claims.prune(len(objects))
        return list(zip(objects, found, strict=True))

    def facts(self, objects: Sequence[Workload], layers: Sequence[guard.Guard]) -> list[Facts]:
        """Each workload's `Facts`, in order, kept by its identity while the guard's layers
        are equal."""
        if self._layers is None or not _same_layers(tuple(layers), self._layers):
            self._facts.clear()
            self._layers = tuple(layers)
        found = self._in_runs(self._facts, objects, partial(_facts, layers))
        self._facts.prune(len(objects))
        return found

    def ordered(self, objects: list[Workload]) -> tuple[Workload, ...]:
        """The workloads sorted by `ResourceKey.sort_key`: while their keys are the last
        call's, one for one, its order with each changed workload in its place (the very
        tuple when none changed)."""
        before, order, position = self._ordered
        result: tuple[Workload, ...] | None = None
        if len(before) == len(objects):
            changed = {}
            for old, new in zip(before, objects, strict=True):
                if old is not new:
                    if old.key != new.key:
                        break
                    changed[id(old)] = new
            else:
                result = order
                if changed:
                    placed = list(order)
                    for old_id, new in changed.items():
                        at = position.pop(old_id)
                        placed[at] = new
                        position[id(new)] = at
                    result = tuple(placed)
        if result is None:
            result = tuple(sorted(objects, key=lambda w: w.key.sort_key))
            position = {id(w): i for i, w in enumerate(result)}
        self._ordered = (objects, result, position)
        return result

    def _in_runs(
        self, kept: Kept[Workload, V], objects: Sequence[Workload], compute: Callable[[Workload], V]
    ) -> list[V]:
        """`kept.values(objects, compute)`, by the runs of the last `objects` when these
        are those runs joined (`runs`)."""
        if self.runs is None or sum(len(run) for run in self.runs) != len(objects):
            return kept.values(objects, compute)
        return kept.runs(self.runs, compute)


def _facts(layers: Sequence[guard.Guard], workload: Workload) -> Facts:
    return facts(workload, layers)


@dataclass(frozen=True, slots=True)
class _Run:
    """One file's object checks: each document's, the problems and workloads in order, and
    the workloads' identities."""

    part: files.Part
    results: list[tuple[Document, refs.Checked]]
    problems: list[Problem]
    workloads: list[Workload]
    lowered: list[tuple[str, str, str, str]]


def _run(part: files.Part, checks: list[refs.Checked]) -> _Run:
    results = list(zip(part.objects, checks, strict=True))
    workloads = [c.workload for c in checks if c.workload is not None]
    return _Run(
        part=part,
        results=results,
        problems=[p for c in checks for p in c.problems],
        workloads=workloads,
        lowered=[c.lowered for c in checks if c.workload is not None],
    )


def _check(version: str, crds: refs.CRDs, alone: bool, doc: Document) -> tuple[bool, refs.Checked]:
    return alone, refs.checked(doc, version, crds, alone)


def _alike(alone: bool, kept: tuple[bool, refs.Checked]) -> bool:
    return kept[0] == alone


def _same_layers(first: tuple[guard.Guard, ...], second: tuple[guard.Guard, ...]) -> bool:
    return first == second


def _same_items(first: Sequence[Any], second: Sequence[Any]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


def _same_context(
    first: tuple[str, tuple[Document, ...]], second: tuple[str, tuple[Document, ...]]
) -> bool:
    return first[0] == second[0] and _same_items(first[1], second[1])


def _reused(found: list[Document], before: Sequence[Document]) -> list[Document]:
    """The documents of a changed file, each one identical to the document at its place in
    the file before (value for value, type for type, key order and lines) replaced by that
    document, so that its checks and the objects made from it are kept."""
    result = []
    for index, doc in enumerate(found):
        old = before[index] if index < len(before) else None
        same = (
            old is not None
            and old.origin.line == doc.origin.line
            and dict(old.origin.lines) == dict(doc.origin.lines)
            and _identical(old.body, doc.body)
        )
        result.append(old if same and old is not None else doc)
    return result


def _identical(first: Any, second: Any) -> bool:
    """Equal with the same types and the same key order all the way down (`1`, `1.0` and
    `true` are equal in Python, not in a manifest)."""
    if type(first) is not type(second):
        return False
    if isinstance(first, dict):
        return list(first) == list(second) and all(
            _identical(value, second[key]) for key, value in first.items()
        )
    if isinstance(first, list):
        return len(first) == len(second) and all(
            _identical(a, b) for a, b in zip(first, second, strict=True)
        )
    return bool(first == second)
