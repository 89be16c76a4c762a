"""Live: the steps of a pass that talk to clusters, for every cluster at once.

- `Members.open` connects to each cluster dro can reach (a kubeconfig context from the file or
  directory given with `--kubeconfig`, or in-cluster), skipping suspended clusters and, when
  sharded, the clusters other members own (`Access.only`, each with its fence).
- `Members.observe`, before scheduling: each reachable cluster's Nodes, Pods and workload
  health (`observe.live`). A cluster that cannot be listed keeps its last committed
  observation, marked stale and unreachable since the first pass that failed; a suspended one
  keeps it too, marked stale only.
- `Members.survey`, after render: each reachable cluster's drift from the rendered tree
  (`drift.survey`), for the `status/drift/` files of the same commit.
- `Members.apply`, after the commit: every cluster's rendered folder (`apply.apply_all`), then
  the fleet-wide prune gate, then `apply.finish` everywhere. Nothing is pruned anywhere when
  any cluster failed or could not be reached: a partial view never deletes. An object a
  cluster rejected holds back, everywhere, only the prune of stale objects of its kind in its
  namespace (`apply`'s docstring says why); the rest of the fleet prunes as usual.
- `Members.differences`, for `dro diff`: rendered against live on each cluster, nothing
  written (`difference.compare`).
- `Members.await_moves`: the bounded wait for the new copies of moves to become Healthy, so
  that the next pass may retire the old ones.

Clusters are handled in parallel, at most `Access.parallel` at a time; each request has the
per-cluster `Access.timeout`.

Called by 9 modules, among them `audit`, `cli.diff`, `pipeline`, `review`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import structlog

from reconciler.branch import status
from reconciler.domain import (
    Cluster,
    Decision,
    ObjectRef,
    Observation,
    ResourceKey,
    Spec,
    durations,
)
from reconciler.domain import fence as fencing
from reconciler.domain.decision import CUT_OVER, PROVISIONING, SYNCING
from reconciler.domain.drift import Drifted
from reconciler.errors import ClusterError
from reconciler.kube import client as kube
from reconciler.kube import health
from reconciler.kube.client import Connection
from reconciler.kube.contexts import kubeconfig_contexts
from reconciler.live import apply, difference, drift, observe, steady, unseal
from reconciler.live.difference import ClusterDifference
from reconciler.live.folders import Folders as Folders
from reconciler.live.folders import kept as kept_folders
from reconciler.live.outcome import ClusterSync
from reconciler.live.pool import Pool as Pool
from reconciler.live.takeover import Provenance

log = structlog.get_logger("dro")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """How dro reaches clusters in a pass (operational settings, from flags)."""

    kubeconfig: Path | None
    """A kubeconfig file or a directory of them; None: only in-cluster clusters are reached."""
    sops_age_key_file: Path | None = None
    """The age key sops decrypts SOPS-encrypted Secrets with, at apply (`unseal`)."""
    in_cluster: bool = False
    """Whether clusters marked `kubeconfig.inCluster` are reached with the pod's account."""
    timeout: float = 10.0
    parallel: int = 8
    move_wait: float = 0.0
    """How long a pass waits for the new copies of its moves to become Healthy."""
    fence: fencing.Fence = fencing.UNFENCED
    """Checked before every write to a cluster (`fencing`): a deposed leader writes nothing."""
    only: frozenset[str] | None = None
    """The clusters this replica reaches, when sharded (`pipeline.sharded`): its own; the
    others are left alone, as clusters dro has no way to reach. None: every cluster."""
    fences: Callable[[str], fencing.Fence] | None = None
    """When sharded, each cluster's own fence (the member still owns it and may write),
    checked before every write to that cluster in place of `fence`."""


@dataclass(slots=True)
class Observed:
    """What `Members.observe` found: an observation per observed cluster, and why the
    unreachable ones could not be listed."""

    observations: dict[str, Observation] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)
    suspended: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Applied:
    """What `Members.apply` did: a report per cluster, and why prune was held back."""

    clusters: list[ClusterSync] = field(default_factory=list)
    prune_blocked: str | None = None
    prune_held: tuple[str, ...] = ()
    """Kinds in namespaces whose stale objects were not pruned because an object of that
    kind and namespace was rejected (`Deployment in shop`)."""

    @property
    def ok(self) -> bool:
        """Every cluster was reached and applied without a failure or a rejected object."""
        return all(report.ok for report in self.clusters)


class Members:
    """The connections of one pass to the clusters of a spec. Close it when the pass ends."""

    def __init__(self, spec: Spec, access: Access, pool: Pool | None = None) -> None:
        self.spec = spec
        self.access = access
        self.pool = pool
        """Where the connections come from and go back to, in a long-running process
        (`live.pool`); None: made for this pass and closed after it."""
        self.connections: dict[str, Connection] = {}
        self.errors: dict[str, str] = {}
        """Clusters that dro should reach but cannot even connect to: why."""

    def open(self) -> Members:
        """Connect to every cluster dro can reach that is not suspended."""
        contexts = kubeconfig_contexts(self.access.kubeconfig) if self.access.kubeconfig else {}
        for cluster in self.spec.clusters:
            if cluster.suspend or not cluster.reachable_by_dro:
                continue
            if self.access.only is not None and cluster.name not in self.access.only:
                continue  # another member's (sharded)
            try:
                self.connections[cluster.name] = self._connect(cluster, contexts)
                self.connections[cluster.name].share_reads()
            except ClusterError as error:
                self.errors[cluster.name] = str(error)
        return self

    def _folders(self, tree: Mapping[str, bytes]) -> Folders:
        """`tree`'s manifests by cluster: kept while the same tree's manifests are asked for
        again (the survey's tree and the applied one differ in `status/` files only; an idle
        pass applies the tree of the pass it stands on), by this process's last `Members`."""
        return kept_folders(tree)

    def close(self) -> None:
        """Close every connection, or give them back to the pool."""
        for connection in self.connections.values():
            connection.share_reads(False)
        if self.pool is not None:
            self.pool.release(self.connections)
        else:
            for connection in self.connections.values():
                connection.close()
        self.connections.clear()

    def __enter__(self) -> Members:
        return self.open()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def observe(self, previous: Mapping[str, Mapping[str, Any]], now: float) -> Observed:
        """Observe every reachable cluster at `now`; `previous` is each cluster's last
        committed status (`status.previous_statuses`)."""
        at = durations.rfc3339(now)
        found = self._each(lambda c: _observe_one(c, at))
        result = Observed()
        for cluster in self.spec.clusters:
            if cluster.suspend and cluster.reachable_by_dro:
                result.suspended.append(cluster.name)
                result.observations[cluster.name] = status.stale_observation(
                    cluster, previous.get(cluster.name), unreachable_since=None
                )
                continue
            outcome = found.get(cluster.name)
            if isinstance(outcome, Observation):
                result.observations[cluster.name] = outcome
                continue
            why = str(outcome) if outcome is not None else self.errors.get(cluster.name)
            if why is None:
                continue  # dro has no way to reach it: placed from its declared figures
            result.unreachable[cluster.name] = why
            result.observations[cluster.name] = status.stale_observation(
                cluster, previous.get(cluster.name), unreachable_since=at
            )
            log.warning("cluster_unreachable", stage="observe", cluster=cluster.name, error=why)
        return result

    def apply(
        self,
        tree: Mapping[str, bytes],
        *,
        held_back: str | None = None,
        provenance: Mapping[ResourceKey, Provenance] | None = None,
    ) -> Applied:
        """Apply each reachable cluster's folder of `tree`; then prune, only when nothing
        holds it back (`held_back` says why the pass before apply forbids it) and no cluster
        failed, sparing the kinds in namespaces where an object was rejected. `provenance`
        names each object's source file and line and its takeover rule."""
        opener = unseal.Unsealer(self.access.sops_age_key_file)
        folders = self._folders(tree)

        def one(c: Connection) -> ClusterSync:
            return steady.remembered(
                c,
                "apply",
                folders.kinds(c.cluster),
                (folders, provenance),
                lambda: apply.apply_all(
                    c, folders.objects(c.cluster), provenance=provenance, unseal=opener
                ),
                _copied,
                lambda report: report.ok and not report.writes,
            )

        reports = self._each(one)
        result = Applied()
        for name in sorted(self.errors):
            result.clusters.append(ClusterSync(name, reachable=False, failed=[self.errors[name]]))
        result.clusters += [
            # a ClusterError escaped apply_all: e.g. reading a CRD it waited for failed
            ClusterSync(name, reachable=False, failed=[str(r)])
            if isinstance(r, ClusterError)
            else r
            for name, r in reports.items()
        ]
        result.clusters.sort(key=lambda r: r.cluster)
        if held_back is not None:
            result.prune_blocked = held_back
        elif not all(r.clean for r in result.clusters):
            broken = ", ".join(r.cluster for r in result.clusters if not r.clean)
            result.prune_blocked = f"not every cluster applied cleanly ({broken})"
        hold = {scope for r in result.clusters for scope in r.holds}
        result.prune_held = tuple(
            f"{kind} in {namespace}" if namespace else f"{kind} (cluster-scoped)"
            for _, kind, namespace in sorted(hold)
        )
        by_name = {r.cluster: r for r in result.clusters}
        allowed = result.prune_blocked is None
        self._each(lambda c: apply.finish(c, by_name[c.cluster], prune=allowed, hold=hold))
        return result

    def survey(
        self, tree: Mapping[str, bytes], provenance: Mapping[ResourceKey, Provenance]
    ) -> dict[str, list[Drifted]]:
        """Each reachable cluster's drifted objects against its folder of `tree`
        (`drift.survey`); a cluster that cannot be surveyed is left out."""
        opener = unseal.Unsealer(self.access.sops_age_key_file)
        folders = self._folders(tree)

        def one(c: Connection) -> list[Drifted]:
            return steady.remembered(
                c,
                "survey",
                folders.kinds(c.cluster),
                (folders, provenance),
                lambda: drift.survey(c, folders.objects(c.cluster), provenance, opener),
                list,
            )

        found = self._each(one)
        return {name: r for name, r in found.items() if not isinstance(r, ClusterError)}

    def differences(
        self, tree: Mapping[str, bytes], only: Collection[str] | None = None
    ) -> dict[str, ClusterDifference]:
        """Rendered against live on each cluster dro reaches (of `only`, when given), for
        `dro diff` (`difference.compare`); a cluster that cannot be compared has its error."""
        chosen = {*self.connections, *self.errors} if only is None else set(only)
        opener = unseal.Unsealer(self.access.sops_age_key_file)
        folders = self._folders(tree)
        found = self._each(
            lambda c: difference.compare(c, folders.objects(c.cluster), opener), chosen
        )
        result = {
            name: ClusterDifference(name, errors=[str(r)]) if isinstance(r, ClusterError) else r
            for name, r in found.items()
        }
        for name in sorted(chosen & set(self.errors)):
            result[name] = ClusterDifference(name, errors=[self.errors[name]])
        return dict(sorted(result.items()))

    def await_moves(
        self,
        decisions: Iterable[Decision],
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> bool:
        """Wait up to `Access.move_wait` seconds until every move in flight has what its
        next step waits for (`awaited`), each copy read under the apiVersion its decision was
        rendered with. True when there were such moves and they all got there: the next pass
        can retire the old copies, or take the stateful move's next phase."""
        waiting = [
            (cluster, ObjectRef(decision.key, decision.api_version))
            for decision in decisions
            for cluster in awaited(decision)
            if cluster in self.connections
        ]
        if not waiting:
            return False
        deadline = clock() + self.access.move_wait
        while True:
            waiting = [
                (cluster, ref) for cluster, ref in waiting if not self._healthy(cluster, ref)
            ]
            if not waiting or clock() >= deadline:
                return not waiting
            sleep(min(1.0, max(0.0, deadline - clock())))

    def _healthy(self, cluster: str, ref: ObjectRef) -> bool:
        key = ref.key
        try:
            live = self.connections[cluster].get(ref.api_version, key.kind, key.name, key.namespace)
        except ClusterError:
            return False
        return health.of(live).status == health.HEALTHY

    def _connect(self, cluster: Cluster, contexts: Mapping[str, Path]) -> Connection:
        fences = self.access.fences
        fence = fences(cluster.name) if fences is not None else self.access.fence
        context: str | None = None
        file: Path | None = None
        if cluster.in_cluster:
            if not self.access.in_cluster:
                raise ClusterError(cluster.name, "it is marked inCluster; pass --in-cluster")
        else:
            context = str(cluster.kubeconfig_context)
            if context not in contexts:
                where = self.access.kubeconfig or "(no --kubeconfig given)"
                raise ClusterError(cluster.name, f"context {context!r} is not in {where}")
            file = contexts[context]
        timeout = self.access.timeout

        def made() -> Connection:
            return kube.connect(
                cluster.name, context=context, kubeconfig=file, timeout=timeout, fence=fence
            )

        if self.pool is None:
            return made()
        connection = self.pool.connection(
            cluster.name, context=context, kubeconfig=file, timeout=timeout, make=made
        )
        connection.rebind(timeout=timeout, fence=fence)
        return connection

    def _each(
        self, work: Callable[[Connection], R], only: Collection[str] | None = None
    ) -> dict[str, R | ClusterError]:
        """`work` on every connection (of the clusters `only` names, when given), at most
        `parallel` at once; a ClusterError is kept as that cluster's result."""

        def guarded(connection: Connection) -> R | ClusterError:
            try:
                return work(connection)
            except ClusterError as error:
                return error

        items = sorted(i for i in self.connections.items() if only is None or i[0] in only)
        if not items:
            return {}
        if self.pool is not None:
            kept = self.pool.workers(max(1, self.access.parallel))
            results = list(kept.map(guarded, [c for _, c in items]))
        else:
            workers = max(1, min(self.access.parallel, len(items)))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dro-cluster") as made:
                results = list(made.map(guarded, [c for _, c in items]))
        return {name: result for (name, _), result in zip(items, results, strict=True)}


def _copied(report: ClusterSync) -> ClusterSync:
    """A report of its own (`finish` adds to it)."""
    return dataclasses.replace(
        report,
        results=list(report.results),
        failed=list(report.failed),
        held=dict(report.held),
        stored=dict(report.stored),
        done=dict(report.done),
        refused=set(report.refused),
        holds=set(report.holds),
    )


def cluster_objects(tree: Mapping[str, bytes], cluster: str) -> list[dict[str, Any]]:
    """The manifests rendered for `cluster`: its folder of `tree`, without the kustomization."""
    return Folders(tree).objects(cluster)


def _observe_one(connection: Connection, at: str) -> Observation:
    return observe.live(connection, observed_at=at)


def awaited(decision: Decision) -> list[str]:
    """The clusters whose copy must become Healthy before a move in flight can go on: the
    targets of a stateless move, or of a stateful move Provisioning or Syncing; the old
    cluster of one in CutOver, where the old copy must be seen scaled down (a follow-up pass
    that only saw the new copies Healthy again would race the old copy's controller); none
    once Done, which the next pass only records."""
    if not decision.retiring:
        return []
    moving = decision.moving
    if moving is None or moving.phase in (PROVISIONING, SYNCING):
        return [placed.cluster for placed in decision.clusters]
    if moving.phase == CUT_OVER:
        return [moving.cluster]
    return []
