"""Membership of the `dro run` replicas that share the clusters: one Lease per member.

With sharding on (`--shards auto`), each replica holds a `coordination.k8s.io/v1` Lease of its
own, `<lease-name>-member-<identity>`, besides contending for the leader's `<lease-name>`. It
creates and renews it exactly as the leader's (`leader.Elector`: same timings, same guarded
writes) and, on every renewal, lists the Leases of the namespace: the live members are the
holders of the Leases with that prefix that have not expired (`renewTime +
leaseDurationSeconds` after now), sorted. That list, the same on every replica, is what the
clusters are divided over (`shards.assign`); each member's Lease expiry tells a new owner how
long to wait before it writes to a cluster that moved (the old owner's fence ends earlier).

A clean shutdown deletes the member's Lease, so the others see it gone at their next renewal;
a member that died keeps its Lease until it expires. Leases expired for `GARBAGE_DURATIONS`
lease durations (a pod killed outright leaves one; a Deployment's pods have new names each
time) are deleted by whichever member sees them first.

Called by `service.observations` and `service.sharding`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import structlog

from reconciler import errors
from reconciler.kube import client as kube
from reconciler.service import leader

log = structlog.get_logger("dro")

MEMBER_INFIX = "-member-"
GARBAGE_DURATIONS = 10
"""A member Lease expired this many lease durations ago is deleted."""
_NOT_IN_A_NAME = re.compile(r"[^a-z0-9.-]+")


def member_lease_name(lease_name: str, identity: str) -> str:
    """`<lease-name>-member-<identity>`, the identity lowered and made a DNS-1123 name (a
    `hostname_pid` identity has an underscore), at most 253 characters."""
    cleaned = _NOT_IN_A_NAME.sub("-", identity.lower()).strip("-.") or "member"
    return f"{lease_name}{MEMBER_INFIX}{cleaned}"[:253].rstrip("-.")


@dataclass(frozen=True, slots=True)
class View:
    """The live members as one renewal saw them: identity → when its Lease expires (POSIX)."""

    expiries: Mapping[str, float] = field(default_factory=dict)

    @property
    def members(self) -> tuple[str, ...]:
        """The live members' identities, sorted."""
        return tuple(sorted(self.expiries))


class Member(leader.Elector):
    """One replica's member Lease: `try_acquire_or_renew` creates or renews it and learns the
    live members (`view`); `release` deletes it. Not thread-safe, like `Elector`."""

    def __init__(
        self,
        connection: kube.Connection,
        config: leader.LeaseConfig,
        *,
        clock: Callable[[], float] = time.time,
        on_changed: Callable[[View], None] | None = None,
    ) -> None:
        self.lease_name = config.name
        own = leader.LeaseConfig(
            namespace=config.namespace,
            name=member_lease_name(config.name, config.identity),
            identity=config.identity,
            lease_duration=config.lease_duration,
            renew_deadline=config.renew_deadline,
            retry_period=config.retry_period,
        )
        super().__init__(connection, own, clock=clock)
        self.view = View()
        """The live members as last learned; empty until the first successful renewal."""
        self._on_changed = on_changed

    @property
    def prefix(self) -> str:
        """The names of the member Leases start with this."""
        return f"{self.lease_name}{MEMBER_INFIX}"

    def _attempt(self) -> leader._Outcome:
        """Renew, then learn the members: a renewal whose listing failed counts as failed,
        so the member's fence (`LeaderLoop.check`) never runs on a view older than its renew
        deadline."""
        outcome = super()._attempt()
        if outcome is leader._Outcome.HELD and self.learn() is None:
            return leader._Outcome.FAILED
        return outcome

    def _observe(self, holder: str) -> None:
        """Note whether this member holds its Lease (logged as joining, not as leading)."""
        was = self._leader
        self._leader = holder == self.config.identity
        if self._leader and not was:
            log.info("member_joined", lease=self.config.where, identity=self.config.identity)

    def learn(self) -> View | None:
        """List the member Leases and keep the live ones as `view`; None (and `view`
        unchanged) on an API error."""
        config, now = self.config, self._clock()
        try:
            leases = self.connection.list(
                leader.API_VERSION, leader.KIND, namespace=config.namespace
            )
        except errors.ClusterError as error:
            log.warning("members_unlisted", lease=config.where, error=str(error))
            return None
        expiries: dict[str, float] = {}
        for lease in leases:
            name = str((lease.get("metadata") or {}).get("name") or "")
            if not name.startswith(self.prefix):
                continue
            spec = lease.get("spec") or {}
            holder = str(spec.get("holderIdentity") or "")
            until = expiry(spec)
            if holder and until is not None and until >= now:
                expiries[holder] = max(until, expiries.get(holder, until))
            elif until is None or until + GARBAGE_DURATIONS * config.lease_duration < now:
                self._collect(name)
        view = View(dict(sorted(expiries.items())))
        changed = view.members != self.view.members
        self.view = view
        if changed:
            log.info("members_changed", members=list(view.members), identity=config.identity)
            if self._on_changed is not None:
                self._on_changed(view)
        return view

    def release(self) -> None:
        """Delete this member's Lease, so the others drop it at their next renewal. Best
        effort: on an error it expires instead."""
        self._leader = False
        config = self.config
        try:
            self.connection.delete(leader.API_VERSION, leader.KIND, config.name, config.namespace)
        except errors.ClusterError as error:
            log.warning("member_release_failed", lease=config.where, error=str(error))
            return
        log.info("member_left", lease=config.where, identity=config.identity)

    def _collect(self, name: str) -> None:
        try:
            self.connection.delete(leader.API_VERSION, leader.KIND, name, self.config.namespace)
        except errors.ClusterError as error:
            log.debug("member_lease_not_collected", lease=name, error=str(error))
            return
        log.info("member_lease_collected", lease=f"{self.config.namespace}/{name}")


def expiry(spec: Mapping[str, object]) -> float | None:
    """When a Lease expires: `renewTime + leaseDurationSeconds`; None when it says neither."""
    renewed = leader.parse_time(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int | float):
        return None
    return renewed + float(duration)
