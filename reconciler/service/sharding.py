"""A sharded `dro run` (`--shards auto`): which clusters this member owns, when it may write
to them, and its observations published to and gathered from the others.

`Sharding` is the `pipeline.sharded.Shard` of one replica. Its member Lease's loop
(`membership.Member` in a `leader.LeaderLoop`) learns the live members; the clusters of the
spec are divided over them by `shards.assign`, the same on every replica that sees the same
members. The leader's Lease (`leader.Elector`) says which member schedules and commits.

Handover without double apply. Every write to a cluster checks the cluster's fence: this
member's own Lease was renewed (and the members listed) within its renew deadline, and the
current assignment still gives it the cluster; otherwise `fence.Deposed` abandons the pass
before the write leaves. A cluster that comes to this member is neither observed nor written
until its old owner can no longer write:

- the old owner is gone from the members (its Lease expired or was deleted): at once, as its
  fence stopped it `lease_duration - renew_deadline` before its Lease expired;
- the old owner is alive (a member joined, or this replica only just started and does not
  know who owned it): one `lease_duration` after this member first saw the change, by which
  time the old owner has either listed the members again (every `retry_period`) and lost the
  cluster in its fence, or failed to renew for its renew deadline and stopped writing at all.

A pass is triggered when such a wait ends, and whenever the members change.

Called by `cli.run`.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from reconciler import errors, live, pipeline
from reconciler.domain import Observation
from reconciler.domain.drift import Drifted
from reconciler.domain.fence import Deposed, Fence
from reconciler.kube import client as kube
from reconciler.pipeline import sharded
from reconciler.service import Runner, leader, membership, metrics, observations, shards
from reconciler.settings import Settings

log = structlog.get_logger("dro")


class Sharding:
    """One member's view of the shards (see the module's docstring)."""

    def __init__(
        self,
        *,
        connection: kube.Connection,
        config: leader.LeaseConfig,
        elected: leader.LeaderLoop,
        fresh: float,
        trigger: Callable[[str], object] = lambda _reason: None,
        on_started: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
        meter: metrics.Metrics | None = None,
    ) -> None:
        self.connection = connection
        self.meter = meter
        self.member = membership.Member(
            connection, config, clock=clock, on_changed=self.members_changed
        )
        self.member_loop = leader.LeaderLoop(
            self.member, on_started=on_started, on_stopped=on_stopped
        )
        """Renews the member Lease; its `check` is this member's fence."""
        self.elected = elected
        self.fresh = fresh
        """How old a published observation may be for the leader to use it (seconds)."""
        self.trigger = trigger
        self.clock = clock
        config = self.member.config
        self.identity = config.identity
        self.namespace = config.namespace
        self.lease_name = self.member.lease_name
        self.lease_duration = config.lease_duration
        self._lock = threading.Lock()
        self._clusters: tuple[str, ...] = ()
        self._members: tuple[str, ...] | None = None
        self._split: tuple[str, ...] = ()
        """The clusters `_owners` divides."""
        self._owners: dict[str, str] = {}
        self._not_before: dict[str, float] = {}
        self._timers: list[threading.Timer] = []
        self._publishing = threading.Lock()
        self._closed = False
        self._drift: dict[str, tuple[Drifted, ...]] = {}
        self._moves_asked: object = None
        """The moves in flight this member last asked a pass for (`moves_ready`)."""
        self._published: tuple[observations.Published, float] | None = None
        """The last document written, without its times, and when: a pass that saw the
        same again writes it only once half its freshness has passed (`publish`)."""

    @classmethod
    def joining(
        cls,
        runner: Runner,
        *,
        connection: kube.Connection,
        config: leader.LeaseConfig,
        elected: leader.LeaderLoop,
        fresh: float,
    ) -> Sharding:
        """The membership of `dro run`'s `runner`: while this replica holds its member Lease
        the runner runs sharded passes (`pipeline.sharded`); a webhook a member that does
        not lead receives also asks the leader for a pass."""

        def started() -> None:
            runner.leading.set()
            runner.trigger("joined the members")

        made = cls(
            connection=connection,
            config=config,
            elected=elected,
            fresh=fresh,
            trigger=runner.trigger,
            on_started=started,
            on_stopped=runner.leading.clear,
            meter=runner.metrics,
        )

        def run_pass(settings: Settings, hook: pipeline.StageHook) -> pipeline.PassResult:
            return sharded.reconcile_shard(settings, made, on_stage=hook, warm=runner.warm)

        runner.run_pass = run_pass
        runner.fence = made.member_loop
        runner.commits = lambda: elected.is_leader
        return made

    def start(self) -> None:
        """Start renewing the member Lease in a daemon thread."""
        self.member_loop.start()

    def stop(self) -> None:
        """Leave: stop renewing, delete the member Lease and withdraw the observations."""
        self.member_loop.stop()
        self.close()

    # --- the Shard protocol -------------------------------------------------------------------

    def own(self, clusters: Sequence[str]) -> frozenset[str]:
        """The clusters this member owns and may already write (handovers waited out)."""
        with self._lock:
            self._clusters = tuple(sorted(set(clusters)))
            owners = self._current()
            now = self.clock()
            mine = frozenset(
                c
                for c, owner in owners.items()
                if owner == self.identity and self._not_before.get(c, 0.0) <= now
            )
        if self.meter is not None:
            self.meter.shard_members.set(len(self.member.view.members))
            self.meter.shard_clusters.set(len(mine))
        return mine

    def fence(self, cluster: str) -> Fence:
        """The fence of every write to `cluster` (the module's docstring)."""
        return _ClusterFence(self, cluster)

    def leads(self) -> bool:
        """Whether this member holds the leader's Lease (within its renew deadline)."""
        return self.elected.is_leader

    @property
    def commit_fence(self) -> Fence:
        """The leader's fence: the push is sent only while the leader's Lease is fresh."""
        return self.elected

    def publish(
        self,
        observed: live.Observed,
        owned: frozenset[str],
        now: float,
        drift: Mapping[str, Sequence[Drifted]] | None = None,
    ) -> None:
        """Write this member's ConfigMap: its own clusters' observations at `now`, and the
        drift it surveyed on them. The same again (but for the times) is written only once
        half the leader's freshness window (`fresh`) has passed since the last write: a pass
        that found nothing new writes nothing, and the leader never sees it go stale."""
        document = observations.Published(
            member=self.identity,
            observed_at=now,
            members=self.member.view.members,
            owned=owned,
            observations={c: o for c, o in observed.observations.items() if c in owned},
            unreachable={c: why for c, why in observed.unreachable.items() if c in owned},
            drift={c: tuple(d) for c, d in (drift or {}).items() if c in owned},
        )
        same = _timeless(document)
        with self._publishing:  # never after `close` withdrew them
            if self._closed:
                return
            last = self._published
            if last is not None and last[0] == same and now - last[1] < self.fresh / 2:
                return  # what the leader holds is the same and still fresh: no write
            try:
                observations.publish(self.connection, self.namespace, self.lease_name, document)
            except errors.ClusterError as error:
                log.warning("observations_not_published", error=str(error))
                return
            self._published = (same, now)

    def gathered(self, now: float) -> tuple[dict[str, Observation], dict[str, str]]:
        """The other live members' fresh observations, each cluster from its owner."""
        others = set(self.member.view.members) - {self.identity}
        try:
            documents = observations.gather(
                self.connection,
                self.namespace,
                self.lease_name,
                live=others,
                now=now,
                fresh=self.fresh,
            )
        except errors.ClusterError as error:
            log.warning("observations_not_gathered", error=str(error))
            self._drift = {}
            return {}, {}
        self._drift = observations.drift_of(documents)
        return observations.merged(documents)

    def drift(self) -> Mapping[str, Sequence[Drifted]]:
        """The drift the other members surveyed on their clusters, from the documents the
        last `gathered` read."""
        return dict(self._drift)

    def announce(self, commit: str) -> None:
        """Put `commit` on the leader's Lease at its next renewal: the other members, which
        read that Lease at each of theirs, apply it at once (`leader.OUTPUT_ANNOTATION`)."""
        self.elected.elector.announce(commit)

    def moves_ready(self, moves: object) -> None:
        """A pass now, unless already asked for these `moves`: on the leader its own; on
        another member its own (which applies nothing new) and, forwarded through the
        leader's Lease, the leader's, which reads the observations this member just
        published and takes the moves' next step."""
        with self._lock:
            if moves == self._moves_asked:
                return
            self._moves_asked = moves
        self.trigger("the copies of a move are ready for its next step")

    # --- the fence ----------------------------------------------------------------------------

    def check(self, cluster: str, write: str) -> None:
        """Raise `fence.Deposed` unless this member may write to `cluster` now."""
        self.member_loop.check(write)
        with self._lock:
            owner = self._current().get(cluster)
            wait = self._not_before.get(cluster, 0.0) - self.clock()
        if owner != self.identity:
            raise Deposed(
                f"cluster {cluster} is owned by {owner or 'no member'} now, not by "
                f"{self.identity}; {write} not sent, pass abandoned"
            )
        if wait > 0:
            raise Deposed(
                f"cluster {cluster} came to {self.identity} {self.lease_duration - wait:.1f}s "
                f"ago; its old owner may still write for {wait:.1f}s; {write} not sent"
            )

    # --- the assignment -----------------------------------------------------------------------

    def _current(self) -> dict[str, str]:
        """The assignment of the clusters last named (`own`) under the members last learned;
        notes the clusters that came to this member since the last call, with when they may
        first be written (a cluster new to the source waits too: another member may have
        seen it first under another view)."""
        view = self.member.view
        if (view.members, self._clusters) == (self._members, self._split):
            return self._owners
        owners = shards.assign(self._clusters, view.members)
        now = self.clock()
        came = sorted(
            c
            for c, owner in owners.items()
            if owner == self.identity and self._owners.get(c) != self.identity
        )
        waits: dict[str, float] = {}
        for cluster in came:
            before = self._owners.get(cluster) if self._members is not None else None
            if before is not None and before not in view.expiries:
                continue  # its old owner is gone, its fence long closed
            waits[cluster] = now + self.lease_duration
        self._not_before = {
            c: t for c, t in {**self._not_before, **waits}.items() if owners.get(c) == self.identity
        }
        if waits:
            log.info(
                "clusters_handed_over",
                clusters=sorted(waits),
                wait=self.lease_duration,
                identity=self.identity,
            )
            self._after(self.lease_duration + 0.05)
        self._members, self._split, self._owners = view.members, self._clusters, owners
        return owners

    def _after(self, seconds: float) -> None:
        timer = threading.Timer(seconds, self.trigger, args=("a cluster handover completed",))
        timer.daemon = True
        timer.start()
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]

    def members_changed(self, view: membership.View) -> None:
        """The member loop's `on_changed`: recompute at once and run a pass."""
        with self._lock:
            if self._clusters:
                self._current()
        log.info("shards_changed", members=list(view.members), identity=self.identity)
        self.trigger("the members changed")

    def close(self) -> None:
        """Stop the handover timers and withdraw this member's observations."""
        for timer in self._timers:
            timer.cancel()
        with self._publishing:
            self._closed = True
            observations.withdraw(self.connection, self.namespace, self.lease_name, self.identity)


def _timeless(document: observations.Published) -> observations.Published:
    """`document` without the times its observations were made at."""
    return dataclasses.replace(
        document,
        observed_at=0.0,
        observations={
            c: dataclasses.replace(o, observed_at=None) for c, o in document.observations.items()
        },
    )


class _ClusterFence:
    """One cluster's fence in a sharded run (`Sharding.check`)."""

    def __init__(self, sharding: Sharding, cluster: str) -> None:
        self.sharding, self.cluster = sharding, cluster

    def check(self, write: str) -> None:
        """Return when this member may write `write` to the cluster; raise `Deposed` if not."""
        self.sharding.check(self.cluster, write)
