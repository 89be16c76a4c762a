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

A member that applied a step of a move waits (`live.Members.await_moves`) until the copies on
its own clusters have what the next step waits for; then it publishes what it sees and asks
the leader for a pass (`Shard.moves_ready`), so the move goes on at once, as an unsharded
pass's second pass takes it; the leader does the same for its own clusters.

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
from typing import Any, Protocol

from reconciler import audit, laststate, live, load, validate
from reconciler.branch import status
from reconciler.domain import Decision, Observation, ResourceKey, Source, Spec, clock
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
    idle,
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

    def announce(self, commit: str) -> None:
        """Tell the other members the output branch's new commit, so that they apply it at
        once (the leader's)."""

    def moves_ready(self, moves: object) -> None:
        """The copies of `moves` (the moves in flight, as `in_flight` gives them) that this
        member applied have what their next step waits for: ask the leader for a pass now,
        not at its next interval; once per state of the moves."""


def reconcile_shard(
    settings: Settings, shard: Shard, *, on_stage: StageHook, warm: Warm | None = None
) -> PassResult:
    """One member's pass (the module's docstring): the leader's commits, the others apply
    what the output branch holds. `warm` is what this process's earlier passes left
    (`pipeline.warm`): on the same inputs as a pass that changed nothing, the leader's pass
    stands on it as an unsharded one does (`pipeline.idle`), and a member's reuses its last
    spec and tree."""
    if settings.repo is None:
        raise ValueError("reconcile needs a source repository (--repo)")
    if warm is None:  # no later pass of this process: its connections are closed after
        with Warm(state_dir=settings.state_dir) as once:
            return reconcile_shard(settings, shard, on_stage=on_stage, warm=once)
    source = _loaded(settings, on_stage)
    warm.begin(settings.repo)
    tip = load.output_tip(settings.repo, settings.output_branch, settings.state_dir)
    inputs = idle.Inputs.of(source, tip, settings)
    now = time.time()
    found = idle.idle(warm.steady, inputs, now)
    warm.steady = None
    try:
        with _working_on(source), clock.recording() as deadlines:
            if not shard.leads():
                return _member_pass(settings, shard, source, now, on_stage, warm, inputs, found)
            if found is not None and found.seen is not None:
                stood = _leader_idle(settings, shard, source, found, now, on_stage, warm)
                if stood is not None:
                    warm.steady = found
                    return stood
            before = laststate.online(settings, warm.readback)
            audit.loaded(Stage.LOAD, source, before.decisions, follow_up=False)
            result, steady = _leader_pass(settings, shard, source, before, now, on_stage, warm)
            if steady is not None:
                warm.steady = idle.FixedPoint(
                    inputs, result.planned, deadlines.earliest, steady, before.statuses
                )
            return result
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
    statuses: Mapping[str, Mapping[str, Any]],
    now: float,
    warm: Warm,
    *,
    publish: bool = True,
) -> tuple[clusters.Surveying, live.Observed, frozenset[str]]:
    """Open this member's clusters and observe them against their last committed
    `statuses`; publish what was seen unless told not to (a member publishes once it has
    surveyed drift too); the clusters it owns."""
    owned = shard.own([cluster.name for cluster in spec.clusters])
    access = _access(settings, shard, owned)
    members = clusters.Surveying(spec, access, warm.connections)
    members.open()
    observed = members.observe(statuses, now)
    if publish:
        shard.publish(observed, owned, now)
    return members, observed, owned


def _leader_idle(
    settings: Settings,
    shard: Shard,
    source: Source,
    found: idle.FixedPoint[Planned],
    now: float,
    on_stage: StageHook,
    warm: Warm,
) -> PassResult | None:
    """The leader's idle pass (`pipeline.idle`), or None when it must run whole: its own
    clusters observed and surveyed, and the other members' observations and drift, as the
    fixed point `found` saw them; then `found`'s tree is applied to its own clusters."""
    planned = found.planned
    on_stage(Stage.OBSERVE)
    members, own, _ = _observed(settings, shard, planned.spec, found.statuses, now, warm)
    with members:
        observed = merged(planned.spec, own, *shard.gathered(now), found.statuses)
        surveyed = members.survey(planned.tree, takeover.provenance(planned.spec))
        if not idle.standing(found, observed, _drift(shard.drift(), surveyed)):
            return None
        audit.idle(Stage.OBSERVE, source, found.inputs.tip)
        applied = clusters.applied(members, planned, own, source, on_stage)
    return PassResult(
        planned=planned,
        commit=None,
        pushed=False,
        idle=True,
        applied=applied,
        unreachable=dict(observed.unreachable),
    )


def _drift(
    others: Mapping[str, Sequence[Drifted]], own: Mapping[str, Sequence[Drifted]] | None
) -> dict[str, list[Drifted]]:
    """The fleet's drift as the leader writes it: its own survey over the others'."""
    return {cluster: list(found) for cluster, found in {**others, **(own or {})}.items()}


def _leader_pass(
    settings: Settings,
    shard: Shard,
    source: Source,
    before: laststate.LastPass,
    now: float,
    on_stage: StageHook,
    warm: Warm,
) -> tuple[PassResult, idle.Seen | None]:
    """The leader's pass, and what it saw of the fleet when it found a fixed point (an idle
    pass may stand on it: `pipeline.idle`)."""
    assert settings.repo is not None
    opened: list[tuple[clusters.Surveying, live.Observed]] = []

    def observer(spec: Spec) -> live.Observed:
        members, observed, _ = _observed(settings, shard, spec, before.statuses, now, warm)
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
            return _unapplied(planned, published, online=True), None
        if published.commit is not None:
            shard.announce(published.commit)
        steady = None
        if planned.at_rest(published):
            steady = idle.Seen.of(observed, _drift(shard.drift(), members.drifted))
        applied = clusters.applied(members, planned, own, source, on_stage)
        if applied.ok and members.await_moves(planned.decisions):
            shard.moves_ready(in_flight(planned.decisions))  # their next step, at once
        result = PassResult(
            planned=planned,
            commit=published.commit,
            pushed=published.pushed,
            applied=applied,
            unreachable=dict(observed.unreachable),
        )
        return result, steady
    finally:
        for members, _ in opened:
            members.close()


def _member_pass(
    settings: Settings,
    shard: Shard,
    source: Source,
    now: float,
    on_stage: StageHook,
    warm: Warm,
    inputs: idle.Inputs,
    found: idle.FixedPoint[Planned] | None,
) -> PassResult:
    """A member's pass: the output branch's tree applied to its own clusters. On the same
    inputs as its last pass (`found`: the same source, output branch and settings) the spec
    and the tree are that pass's, neither validated nor read again."""
    if found is not None:
        audit.idle(Stage.LOAD, source, inputs.tip)
        planned, statuses = found.planned, found.statuses
    else:
        planned, statuses = _member_plan(settings, source, warm, on_stage)
    on_stage(Stage.OBSERVE)
    spec, tree = planned.spec, planned.tree
    members, observed, owned = _observed(settings, shard, spec, statuses, now, warm, publish=False)
    with members:
        if not tree:
            shard.publish(observed, owned, now)
            return PassResult(planned=planned, commit=None, pushed=False, skipped=NOTHING_YET)
        warm.steady = idle.FixedPoint(inputs, planned, statuses=statuses)
        # the drift of what the branch holds, surveyed before it is applied again, as the
        # leader surveys its own clusters; the leader writes it into `status/drift/`
        drift = members.survey(tree, takeover.provenance(spec))
        shard.publish(observed, owned, now, drift)
        on_stage(Stage.APPLY)
        down = ", ".join(sorted(observed.unreachable))
        applied = members.apply(
            tree,
            held_back=f"clusters could not be listed ({down})" if down else None,
            provenance=takeover.provenance(spec),
        )
        audit.applied(Stage.APPLY, source, applied)
        if applied.ok and members.await_moves(planned.decisions):
            # what the leader needs for the moves' next step: observed, published, asked for
            seen = time.time()  # after the wait: only the clusters it still owns
            still = owned & shard.own([cluster.name for cluster in spec.clusters])
            shard.publish(members.observe(statuses, seen), still, seen, drift)
            shard.moves_ready(in_flight(planned.decisions))
        return PassResult(
            planned=planned,
            commit=None,
            pushed=False,
            applied=applied,
            unreachable=dict(observed.unreachable),
            idle=found is not None,
        )


def _member_plan(
    settings: Settings, source: Source, warm: Warm, on_stage: StageHook
) -> tuple[Planned, Mapping[str, Mapping[str, Any]]]:
    """What a member applies: the spec of `source`, the output branch's tree and its last
    decisions; and the clusters' last committed status, which observe falls back on."""
    assert settings.repo is not None
    before = laststate.online(settings, warm.readback)
    audit.loaded(Stage.LOAD, source, before.decisions, follow_up=False)
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source, ceiling=settings.guard, parsed=warm.parsed)
    revisions = load.Revisions(
        settings.repo,
        settings.state_dir,
        credentials=load.credentials_from(
            settings.credentials_file, otherwise=settings.environment_credentials
        ),
    )
    tree = revisions.state(settings.output_branch, manifests=True)
    return Planned(spec=spec, decisions=before.decisions, tree=tree), before.statuses


def in_flight(decisions: Sequence[Decision]) -> tuple[tuple[ResourceKey, Any], ...]:
    """The moves in flight: each moving workload with its retiring copies (their phases and
    times). The leader's next step changes them; until it does, a member asks no more."""
    return tuple((d.key, d.retiring) for d in decisions if d.retiring)


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
