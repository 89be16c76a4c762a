"""One pass of a member of a sharded `dro run`: observe and apply its own clusters only;
schedule and commit on the leader alone.

With `--shards auto` every replica is a member and runs passes (`service.sharding` is its
`Shard`). A member's pass loads and validates the source, observes the clusters it owns and
publishes what it saw (`Shard.publish`). Then:

- on the elected leader, the observations of the other members' clusters, as they published
  them and still fresh, join its own (`Shard.gathered`); a cluster nobody observed freshly (its
  owner just died, its clusters not yet re-observed) keeps its last committed figures, marked
  stale, as a cluster dro cannot reach would. The leader schedules, renders and commits as an
  unsharded pass does, then applies the new tree to its own clusters;
- on any other member, the output branch's tree as the leader last pushed it is applied to
  its own clusters.

Every write to a cluster checks that cluster's fence (`Shard.fence`): the member's Lease is
fresh and it still owns the cluster, and a cluster that changed owner is not written before
its old owner can no longer write (`service.sharding` says when). The push checks the
leader's fence. Prune is gated per member: nothing is pruned on a member's clusters when one
of them failed or could not be listed.

Called by `service.sharding`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from reconciler import audit, laststate, live, load, validate
from reconciler.branch import status
from reconciler.domain import Observation, Source, Spec
from reconciler.domain.drift import Drifted
from reconciler.domain.fence import Fence
from reconciler.live import takeover
from reconciler.pipeline import (
    PassResult,
    Planned,
    Stage,
    StageHook,
    _loaded,
    _unapplied,
    _working_on,
    clusters,
    plan,
    surveyed_and_committed,
)
from reconciler.pipeline.warm import Warm
from reconciler.settings import Settings

NOTHING_YET = "the output branch has no commit yet (the leader's first pass): nothing to apply"


class Shard(Protocol):
    """This replica's part in a sharded `dro run` (`service.sharding.Sharding`)."""

    identity: str

    def own(self, clusters: Sequence[str]) -> frozenset[str]:
        """The clusters of `clusters` this member owns now (it observes them)."""

    def fence(self, cluster: str) -> Fence:
        """The fence of every write to `cluster`."""

    def leads(self) -> bool:
        """Whether this member is the elected leader: it schedules and commits."""

    @property
    def commit_fence(self) -> Fence:
        """The leader's fence, checked before the push."""

    def publish(
        self,
        observed: live.Observed,
        owned: frozenset[str],
        now: float,
        drift: Mapping[str, Sequence[Drifted]] | None = None,
    ) -> None:
        """Publish this member's observations of its own clusters, and their drift."""

    def gathered(self, now: float) -> tuple[dict[str, Observation], dict[str, str]]:
        """The other members' fresh observations, and why their unreachable clusters were."""

    def drift(self) -> Mapping[str, Sequence[Drifted]]:
        """The drift the other members published with the observations `gathered` read."""


def reconcile_shard(
    settings: Settings, shard: Shard, *, on_stage: StageHook, warm: Warm | None = None
) -> PassResult:
    """One member's pass (the module's docstring): the leader's commits, the others apply
    what the output branch holds. `warm` is what this process's earlier passes left
    (`pipeline.warm`); an online pass is never idle."""
    if settings.repo is None:
        raise ValueError("reconcile needs a source repository (--repo)")
    warm = warm if warm is not None else Warm(state_dir=settings.state_dir)
    source = _loaded(settings, on_stage)
    warm.begin(settings.repo)
    try:
        with _working_on(source):
            before = laststate.online(settings, warm.readback)
            audit.loaded(Stage.LOAD, source, before.decisions, follow_up=False)
            now = time.time()
            if shard.leads():
                return _leader_pass(settings, shard, source, before, now, on_stage, warm)
            return _member_pass(settings, shard, source, before, now, on_stage, warm)
    finally:
        warm.keep()


def _access(settings: Settings, shard: Shard, owned: frozenset[str]) -> live.Access:
    return live.Access(
        kubeconfig=settings.kubeconfig,
        sops_age_key_file=settings.sops_age_key_file,
        in_cluster=settings.in_cluster,
        timeout=settings.cluster_timeout,
        parallel=settings.parallel,
        move_wait=settings.move_wait,
        only=owned,
        fences=shard.fence,
    )


def _observed(
    settings: Settings,
    shard: Shard,
    spec: Spec,
    before: laststate.LastPass,
    now: float,
    *,
    publish: bool = True,
) -> tuple[live.Members, live.Observed, frozenset[str]]:
    """Open this member's clusters and observe them; publish what was seen unless told not
    to (a member publishes once it has surveyed drift too); the clusters it owns."""
    owned = shard.own([cluster.name for cluster in spec.clusters])
    members = live.Members(spec, _access(settings, shard, owned)).open()
    observed = members.observe(before.statuses, now)
    if publish:
        shard.publish(observed, owned, now)
    return members, observed, owned


def _leader_pass(
    settings: Settings,
    shard: Shard,
    source: Source,
    before: laststate.LastPass,
    now: float,
    on_stage: StageHook,
    warm: Warm,
) -> PassResult:
    assert settings.repo is not None
    opened: list[tuple[live.Members, live.Observed]] = []

    def observer(spec: Spec) -> live.Observed:
        members, observed, _ = _observed(settings, shard, spec, before, now)
        opened.append((members, observed))
        return merged(spec, observed, *shard.gathered(now), before.statuses)

    try:
        planned, observed = plan(
            source,
            on_stage=on_stage,
            before=before,
            now=now,
            observer=observer,
            ceiling=settings.guard,
            warm=warm,
        )
        audit.removed_clusters(
            Stage.VALIDATE, validate.removed_clusters(planned.spec, before.decisions)
        )
        members, own = opened[0]
        planned, published = surveyed_and_committed(
            settings,
            source,
            before,
            planned,
            observed,
            members,
            now,
            shard.commit_fence,
            warm,
            on_stage,
            others_drift=shard.drift(),
        )
        if not published.on_remote:
            return _unapplied(planned, published, online=True)
        applied = clusters.applied(members, planned, own, source, on_stage)
        return PassResult(
            planned=planned,
            commit=published.commit,
            pushed=published.pushed,
            applied=applied,
            unreachable=dict(observed.unreachable),
        )
    finally:
        for members, _ in opened:
            members.close()


def _member_pass(
    settings: Settings,
    shard: Shard,
    source: Source,
    before: laststate.LastPass,
    now: float,
    on_stage: StageHook,
    warm: Warm,
) -> PassResult:
    assert settings.repo is not None
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source, ceiling=settings.guard, parsed=warm.parsed)
    on_stage(Stage.OBSERVE)
    members, observed, owned = _observed(settings, shard, spec, before, now, publish=False)
    with members:
        revisions = load.Revisions(
            settings.repo,
            settings.state_dir,
            credentials=load.credentials_from(
                settings.credentials_file, otherwise=settings.environment_credentials
            ),
        )
        tree = revisions.state(settings.output_branch, manifests=True)
        planned = Planned(spec=spec, decisions=before.decisions, tree=tree)
        if not tree:
            shard.publish(observed, owned, now)
            return PassResult(planned=planned, commit=None, pushed=False, skipped=NOTHING_YET)
        # the drift of what the branch holds, surveyed before it is applied again, as the
        # leader surveys its own clusters; the leader writes it into `status/drift/`
        shard.publish(observed, owned, now, members.survey(tree, takeover.provenance(spec)))
        on_stage(Stage.APPLY)
        down = ", ".join(sorted(observed.unreachable))
        applied = members.apply(
            tree,
            held_back=f"clusters could not be listed ({down})" if down else None,
            provenance=takeover.provenance(spec),
        )
        audit.applied(Stage.APPLY, source, applied)
        return PassResult(
            planned=planned,
            commit=None,
            pushed=False,
            applied=applied,
            unreachable=dict(observed.unreachable),
        )


def merged(
    spec: Spec,
    own: live.Observed,
    others: Mapping[str, Observation],
    others_unreachable: Mapping[str, str],
    statuses: Mapping[str, Mapping[str, object]],
) -> live.Observed:
    """The whole fleet as the leader schedules it: its own observations, the other members'
    for the clusters they own, and for a cluster nobody observed freshly, its last committed
    status marked stale (not unreachable: its owner may just have died)."""
    result = live.Observed(
        observations=dict(own.observations),
        unreachable=dict(own.unreachable),
        suspended=list(own.suspended),
    )
    for cluster in spec.clusters:
        name = cluster.name
        if name in own.observations:
            continue
        if name in others:
            result.observations[name] = others[name]
            if name in others_unreachable:
                result.unreachable[name] = others_unreachable[name]
        elif cluster.reachable_by_dro:
            result.observations[name] = status.stale_observation(
                cluster, statuses.get(name), unreachable_since=None
            )
    return result
