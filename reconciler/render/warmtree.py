"""The output-branch tree of a warm pass, made from the last pass's in proportion to the change.

`render.tree` with a memo (`pipeline.Warm.render`, `dro run`) hands its decisions here. A
decision that is the very object the last pass rendered (the scheduler keeps an unchanged
workload's decision), of the very workload object (validate keeps an unchanged file's), with
the same clusters, override policies, output settings and sync hooks, renders what it rendered
then: nothing of it is looked at again. Every other decision is rendered (through the memo of
`render.memo`, which still matches equal inputs), and the last pass's files of the decisions
it replaces, or of the workloads that are gone, are taken out.

The shared files follow from per-decision parts kept here: each cluster's kustomization
lists the manifests each decision has there, and each cluster's `placed` sums each decision's
replicas times its requests, summed again (in decision order, as a cold pass sums them) only
for the clusters a changed decision has or had replicas on; a cluster's status file is dumped
again only when its inputs differ. The README and the Argo CD listing are made again only
when a decision changed, and the Argo CD listing only when the set of workloads did.

A decision whose render reads more than its own inputs is rendered on every pass, as the memo
does: a rollout in progress (its clusters keep an older template) and a placement whose
dispatching is suspended (its clusters keep the last rendered files).

The tree is a `branch.outputtree.Tree`: the last pass's with the changed paths patched in,
which the commit's tree writer then compares alone. A warm tree equals a cold one, path for
path and byte for byte (tests/test_incremental.py, tests/test_render_warmtree.py).

Called by `render.memo`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.branch import outputtree, paths, summary
from reconciler.domain import Decision, ResourceKey, Spec, Workload
from reconciler.kube import demand

Listing = Sequence[tuple[str, str]]
"""(cluster, path in its folder) of each manifest a decision has on the branch."""


class Renderer(Protocol):
    """What `render.tree` knows how to do for one pass (its spec, rules, held placements)."""

    def workload(self, decision: Decision, source: Workload | None) -> tuple[Workload, Workload]:
        """The decision's workload as the spec has it (`source`, when known), and as
        rendered (with a sync hook's move environment)."""

    def files(self, decision: Decision, workload: Workload) -> Mapping[str, bytes]:
        """The decision's own files."""

    def listing(self, decision: Decision) -> Listing:
        """Where the decision's manifests are on the branch."""

    def volatile(self, decision: Decision) -> bool:
        """Whether the decision's render reads more than its inputs (rendered every pass)."""

    def hooked(self) -> Collection[ResourceKey]:
        """The workloads a sync hook adds a move's environment to this pass."""

    def mcs(self, decisions: Sequence[Decision]) -> tuple[Any, dict[str, bytes]]:
        """(the Services called across clusters, their MCS objects' files)."""

    def argocd(self, decisions: Sequence[Decision]) -> dict[str, bytes]:
        """The Argo CD folder's shared files (they list every workload)."""

    def readme(self, decisions: Sequence[Decision], crossing: Any) -> bytes:
        """The README."""

    def health(self, decisions: Sequence[Decision]) -> dict[str, bytes]:
        """`status/workloads/` of the decisions on observed clusters."""

    def status(self, name: str) -> tuple[Any, Callable[[Mapping[str, float] | None], Any]]:
        """(what the cluster's status file is made of but `placed`, and its document for
        a `placed`)."""

    def dumped(self, path: str, document: Any, *, sealed: bool = False) -> bytes:
        """`document` as the bytes of the file at `path` (`render.memo.Memo.dumped`)."""


@dataclass(slots=True)
class _Entry:
    """One decision as the last pass rendered it, and its parts of the shared files."""

    decision: Decision
    source: Workload
    """The spec's workload: the one whose identity is checked."""
    files: Mapping[str, bytes]
    listing: Listing
    runs: Mapping[str, int]
    """Cluster → the replicas that run there (what `placed` counts)."""
    need: Mapping[str, float]
    """The requests of one replica (`kube.demand.per_replica`)."""
    order: tuple[str, str, str, str]
    volatile: bool
    """Rendered on every pass: it reads the branch or an older source, or a sync hook's
    move environment."""


class Assembly:
    """The last warm pass's tree and each decision's part of it (`render.memo.Memo`)."""

    def __init__(self) -> None:
        self._reset()
        self.reused = 0
        """The decisions the last pass took as they were, unrendered."""

    def _reset(self) -> None:
        self._tree: outputtree.Tree | None = None
        self._env: tuple[Any, ...] | None = None
        self._by_id: dict[int, _Entry] = {}
        self._by_key: dict[ResourceKey, _Entry] = {}
        self._ordered: list[_Entry] = []
        self._keys: set[ResourceKey] = set()
        self._listed: dict[str, dict[str, None]] = {}
        """Cluster → the paths in its folder of the decisions' manifests."""
        self._runs: dict[str, dict[ResourceKey, _Entry]] = {}
        """Cluster → the decisions with replicas there."""
        self._mcs: dict[str, tuple[str, ...]] = {}
        self._placed: dict[str, dict[str, float] | None] = {}
        self._inputs: dict[str, Any] = {}
        self._shared: dict[str, bytes] = {}
        """The MCS objects, the Argo CD listing and the README, as last made."""
        self._argocd: dict[str, bytes] = {}
        self._health: dict[str, bytes] = {}

    def tree(
        self, spec: Spec, decisions: Sequence[Decision], renderer: Renderer
    ) -> tuple[outputtree.Tree, set[ResourceKey]]:
        """The pass's tree, and the workloads whose decisions are gone since the last pass."""
        env = (
            spec.clusters,
            spec.override_policies,
            spec.config.output,
            spec.sync_hooks,
            tuple(p for p in spec.placement_policies if p.placement.suspended_dispatching),
            tuple(p for p in spec.placement_policies if p.placement.suspended_on),
        )
        if self._env is None or not _same(env, self._env):
            self._reset()
            self._env = env
        changed, gone = self._sorted(spec, decisions, renderer)
        dirty: set[str] = set()
        removed: set[str] = set()
        for entry in gone:
            removed.update(entry.files)
            self._take(entry, dirty, out=True)
            self._by_key.pop(entry.decision.key, None)
        updates: dict[str, bytes] = {}
        now = {e.decision.key for e in changed}
        ended = {e.decision.key for e in gone} - now
        for entry in changed:
            updates.update(entry.files)
            self._take(entry, dirty, out=False)
            self._by_key[entry.decision.key] = entry
        moved = False
        if changed or gone:
            moved = bool(ended) or not now <= self._keys
            self._keys = (self._keys - ended) | now
            self._ordered = _reordered(self._ordered, gone, changed)
        tree = self._patched(
            updates, removed, spec, renderer, dirty, refresh=bool(changed or gone), moved=moved
        )
        return tree, ended

    def _sorted(
        self, spec: Spec, decisions: Sequence[Decision], renderer: Renderer
    ) -> tuple[list[_Entry], list[_Entry]]:
        """(the entries of the decisions rendered again, the last pass's entries they
        replace or that are gone); an unchanged decision keeps its entry, an equal one its
        entry holding the new decision."""
        workloads = {id(w): w for w in spec.workloads}
        newcomers: dict[ResourceKey, Workload] | None = None
        hooked = renderer.hooked()
        fresh: dict[int, _Entry] = {}
        changed: list[_Entry] = []
        gone: list[_Entry] = []
        same: set[int] = set()
        held = self._by_id
        hits = 0
        for decision in decisions:
            at = id(decision)
            entry = held.get(at)
            if entry is not None:  # it holds the decision: the id is that object's
                hits += 1
                if (
                    not entry.volatile
                    and id(entry.source) in workloads
                    and not (hooked and decision.key in hooked)
                ):
                    fresh[at] = entry
                    continue
            old = entry or self._by_key.get(decision.key)
            if old is not None and id(old.source) in workloads:
                source: Workload | None = old.source
            else:  # a workload edited or added: among the spec's objects no entry holds
                if newcomers is None:
                    known = {id(e.source) for e in held.values()}
                    newcomers = {w.key: w for i, w in workloads.items() if i not in known}
                source = newcomers.get(decision.key)
            made = _entry(decision, renderer, old, source)
            fresh[at] = made
            if made is old:  # an equal decision of an equal workload: its parts stand
                same.add(id(made))
                continue
            if entry is not None:
                gone.append(entry)
            changed.append(made)
        if hits < len(held):
            gone += [e for i, e in held.items() if i not in fresh and id(e) not in same]
        self.reused = len(fresh) - len(changed) - len(same)
        self._by_id = fresh
        return changed, gone

    def _take(self, entry: _Entry, dirty: set[str], *, out: bool) -> None:
        """Put a decision's parts into (or with `out`, take them out of) its clusters'."""
        key = entry.decision.key
        for cluster, relative in entry.listing:
            listed = self._listed.setdefault(cluster, {})
            if out:
                listed.pop(relative, None)
            else:
                listed[relative] = None
            dirty.add(cluster)
        for cluster in entry.runs:
            runs = self._runs.setdefault(cluster, {})
            if out:
                runs.pop(key, None)
            else:
                runs[key] = entry
            dirty.add(cluster)

    def _patched(
        self,
        updates: dict[str, bytes],
        removed: set[str],
        spec: Spec,
        renderer: Renderer,
        dirty: set[str],
        *,
        refresh: bool,
        moved: bool,
    ) -> outputtree.Tree:
        """The tree with the decisions' changes, and the shared files made again where
        their parts changed."""
        first = self._tree is None
        names = [c.name for c in spec.clusters]
        if first:
            dirty = set(names)
        changes: dict[str, bytes] = {}
        decisions = [e.decision for e in self._ordered]
        if refresh or first:
            crossing, mcs = renderer.mcs(decisions)
            mcs_listed: dict[str, list[str]] = {}
            for path in mcs:
                found = paths.cluster_file(path)
                assert found is not None  # `paths.object_path` made it
                mcs_listed.setdefault(found.cluster, []).append(found.relative)
            if moved or first:
                self._argocd = renderer.argocd(decisions)
            shared = {**mcs, **self._argocd, paths.README: renderer.readme(decisions, crossing)}
            removed.update(p for p in self._shared if p not in shared)
            self._shared = shared
            changes.update(shared)
            for name in names:
                theirs = tuple(mcs_listed.get(name, ()))
                if name in dirty or theirs != self._mcs.get(name, ()):
                    self._mcs[name] = theirs
                    listed = sorted([*self._listed.get(name, {}), *theirs])
                    path = paths.kustomization_path(name)
                    changes[path] = renderer.dumped(path, summary.kustomization(listed))
        health = renderer.health(decisions)
        removed.update(p for p in self._health if p not in health)
        self._health = health
        changes.update(health)
        for name in names:
            if name in dirty:
                self._placed[name] = self._sum(name)
            placed = self._placed.get(name)
            inputs, document = renderer.status(name)
            known = self._inputs.get(name)
            if known is None or not _same(known, (inputs, placed)):
                self._inputs[name] = (inputs, placed)
                path = paths.cluster_status_path(name)
                changes[path] = renderer.dumped(path, document(placed), sealed=True)
        changes.update(updates)
        if self._tree is None:
            self._tree = outputtree.Tree(dict(sorted(changes.items())))
            return self._tree
        held = self._tree
        removed.difference_update(changes)
        changes = {p: d for p, d in changes.items() if held.get(p) is not d}
        self._tree = outputtree.Tree.patched(held, changes, removed)
        return self._tree

    def _sum(self, cluster: str) -> dict[str, float] | None:
        """The requests of dro's replicas on `cluster`, summed in decision order (as
        `render.placed_requests` sums them, so the floats are the same)."""
        into: dict[str, float] = {}
        for entry in sorted(self._runs.get(cluster, {}).values(), key=lambda e: e.order):
            runs = entry.runs[cluster]
            for resource, amount in entry.need.items():
                into[resource] = into.get(resource, 0.0) + amount * runs
        return into or None


def _reordered(
    ordered: list[_Entry], gone: Sequence[_Entry], changed: Sequence[_Entry]
) -> list[_Entry]:
    """The entries in key order, `gone` taken out and `changed` put in: each in the place
    of the one it replaces when every change replaces one of the same key."""
    replaced = {e.decision.key: e for e in changed}
    if len(gone) == len(changed) and all(e.decision.key in replaced for e in gone):
        by_id = {id(e): replaced[e.decision.key] for e in gone}
        return [by_id.get(id(e), e) for e in ordered]
    left = {id(e) for e in gone}
    kept = [e for e in ordered if id(e) not in left] if gone else ordered
    return sorted([*kept, *changed], key=lambda e: e.order)


def _entry(
    decision: Decision, renderer: Renderer, old: _Entry | None, source: Workload | None
) -> _Entry:
    """Render one decision (of `source`, the spec's workload when known) and note its parts
    of the shared files; `old` itself, holding the new decision, when the memo gave the very
    files it has (equal inputs: its listing, replicas and requests are equal too)."""
    source, workload = renderer.workload(decision, source)
    files = renderer.files(decision, workload)
    volatile = renderer.volatile(decision) or workload is not source
    if old is not None and files is old.files and not volatile and not old.volatile:
        old.decision, old.source = decision, source
        return old
    need = demand.per_replica(source)
    runs: dict[str, int] = {}
    if need:
        for placed in decision.rendered():
            count = decision.effective.get(placed.cluster, placed.replicas)
            if count:
                runs[placed.cluster] = count
    return _Entry(
        decision=decision,
        source=source,
        files=files,
        listing=tuple(renderer.listing(decision)),
        runs=runs,
        need=need,
        order=decision.key.sort_key,
        volatile=volatile,
    )


def _same(one: Any, other: Any) -> bool:
    """Equal, by identity first (tuples of the same objects compare without their fields)."""
    return one is other or bool(one == other)
