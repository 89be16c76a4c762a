"""Leader election for `dro run` on a `coordination.k8s.io/v1` Lease, as client-go does it.

Several replicas of dro run in a Deployment; only the leader runs reconcile passes. `dro run`
builds an `Elector` on a `kube.Connection` to its own cluster and starts a `LeaderLoop`, whose
`on_started`/`on_stopped` set and clear the runner's `leading` event; at shutdown
`LeaderLoop.stop()` releases the Lease, so a follower takes over at once.

A replica takes the Lease when there is none, when it holds it, when its holder is empty
(released), or when it expired: `renewTime + leaseDurationSeconds` is before the elector's
clock, so replicas' clocks must agree to well within `lease_duration` (NTP does). Every write
is a create or a PUT guarded by the resourceVersion read: of two contenders one wins, the
other gets a 409 `kube.Conflict` and stays a follower this round. Times are MicroTime: RFC 3339
in UTC with microseconds.

Called by `cli.run`, `service.membership` and `service.sharding`.
"""

from __future__ import annotations

import enum
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from reconciler import errors, settings
from reconciler.domain import fence
from reconciler.kube import client as kube

log = structlog.get_logger("dro")

API_VERSION = "coordination.k8s.io/v1"
KIND = "Lease"
NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def default_identity() -> str:
    """This replica's identity: the env `POD_NAME` if set, else `hostname_pid`."""
    return settings.pod_name() or f"{socket.gethostname()}_{os.getpid()}"


def pod_namespace() -> str | None:
    """The namespace this pod runs in: env `POD_NAMESPACE`, else the service account's
    namespace file, else None (not in a pod)."""
    if namespace := settings.pod_namespace():
        return namespace
    try:
        return NAMESPACE_FILE.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseConfig:
    """Which Lease to hold, as whom, and client-go's three timings (seconds)."""

    namespace: str
    name: str = "dro"
    identity: str
    lease_duration: float = 15.0
    """A Lease not renewed for this long may be taken by another replica."""
    renew_deadline: float = 10.0
    """A leader that could not renew for this long steps down."""
    retry_period: float = 2.0
    """How often to try to acquire or renew."""

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("a lease identity must not be empty")
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration")

    @property
    def where(self) -> str:
        """`namespace/name`, for logs."""
        return f"{self.namespace}/{self.name}"


def format_time(seconds: float) -> str:
    """A POSIX time as a Kubernetes MicroTime: `2026-01-01T00:00:00.000000Z`, always UTC."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: object) -> float | None:
    """A Kubernetes Time or MicroTime (any RFC 3339 offset; none means UTC) as a POSIX time,
    or None when missing or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().upper())
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


REQUEST_ANNOTATION = "multicluster.io/pass-requested-at"
"""Set on the Lease by a follower that received a webhook; the leader sees it at its next
renewal and runs a pass (as Flux's `reconcile.fluxcd.io/requestedAt` asks its controller)."""
REQUEST_ATTEMPTS = 3
OUTPUT_ANNOTATION = "multicluster.io/output-commit"
"""Set on the Lease by a sharded leader at its next renewal after a pass committed: the
output branch's new commit. The other members see it at their next renewal and apply it at
once, rather than at their next interval (`LeaderLoop`'s `on_committed`)."""


class _Outcome(enum.Enum):
    HELD = "held"
    OTHER = "held by another"
    FAILED = "failed"


class Elector:
    """One replica's view of the Lease: `try_acquire_or_renew` makes one attempt to hold it;
    `release` gives it up. Not thread-safe: one caller (usually a `LeaderLoop`) at a time."""

    def __init__(
        self,
        connection: kube.Connection,
        config: LeaseConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.connection, self.config, self._clock = connection, config, clock
        self._leader = False
        self.requested: str | None = None
        """The Lease's `REQUEST_ANNOTATION` as last read or written."""
        self.committed: str | None = None
        """The Lease's `OUTPUT_ANNOTATION` as last read or written."""
        self.announced: str | None = None
        """What this replica, leading, writes as `OUTPUT_ANNOTATION` at its next renewal
        (`announce`)."""

    def announce(self, commit: str) -> None:
        """Have the next renewal of the Lease, while this replica holds it, say that the
        output branch is at `commit` (a sharded leader's pass committed). Safe to call from
        another thread: one assignment."""
        self.announced = commit

    @property
    def is_leader(self) -> bool:
        """Whether the Lease as last read or written names this identity; an API error
        changes nothing, so this can be stale (`LeaderLoop` bounds that by `renew_deadline`)."""
        return self._leader

    def try_acquire_or_renew(self) -> bool:
        """One attempt to create, renew or take over the Lease; True when this identity holds
        it afterwards. An API error or a lost race (409) is False, never an exception."""
        return self._attempt() is _Outcome.HELD

    def release(self) -> None:
        """Give up a Lease this identity holds: empty its holder so another replica takes it
        at once (client-go's ReleaseOnCancel). Best effort: on an error the Lease just expires."""
        if not self._leader:
            return
        self._leader = False
        config = self.config
        try:
            lease = self.connection.get(API_VERSION, KIND, config.name, config.namespace)
            if lease is None or _spec(lease).get("holderIdentity") != config.identity:
                return
            spec = _spec(lease)
            spec.update(holderIdentity="", leaseDurationSeconds=1)
            spec["renewTime"] = format_time(self._clock())
            self.connection.replace({**lease, "spec": spec})
        except errors.ClusterError as error:
            log.warning("lease_release_failed", lease=config.where, error=str(error))
            return
        log.info("leader_released", lease=config.where, identity=config.identity)

    def _attempt(self) -> _Outcome:
        config, now = self.config, self._clock()
        try:
            lease = self.connection.get(API_VERSION, KIND, config.name, config.namespace)
            if lease is None:
                written = self.connection.create(self._announcing(self._new_lease(now)))
            else:
                spec = _spec(lease)
                holder = spec.get("holderIdentity") or ""
                if holder and holder != config.identity and not self._expired(spec, now):
                    self.requested = _requested(lease)
                    self.committed = _annotation(lease, OUTPUT_ANNOTATION)
                    self._observe(holder)
                    return _Outcome.OTHER
                claimed = {**lease, "spec": self._claim(spec, now)}
                written = self.connection.replace(self._announcing(claimed))
        except kube.Conflict as error:
            log.debug("lease_conflict", lease=config.where, error=str(error))
            return _Outcome.FAILED
        except errors.ClusterError as error:
            log.warning("lease_error", lease=config.where, error=str(error))
            return _Outcome.FAILED
        self.requested = _requested(written)
        self.committed = _annotation(written, OUTPUT_ANNOTATION)
        self._observe(_spec(written).get("holderIdentity") or "")
        return _Outcome.HELD if self._leader else _Outcome.OTHER

    def _announcing(self, lease: dict[str, Any]) -> dict[str, Any]:
        """`lease` with `OUTPUT_ANNOTATION` set to what this replica announced, if anything;
        written only as part of a create or renewal, never on its own."""
        commit = self.announced
        if commit is None or _annotation(lease, OUTPUT_ANNOTATION) == commit:
            return lease
        metadata = dict(lease.get("metadata") or {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), OUTPUT_ANNOTATION: commit}
        return {**lease, "metadata": metadata}

    def request_pass(self) -> bool:
        """Ask the leader for a pass: stamp `REQUEST_ANNOTATION` on the Lease (a follower's
        webhook). Safe to call from another thread; False when the Lease could not be written."""
        config = self.config
        for _ in range(REQUEST_ATTEMPTS):
            try:
                lease = self.connection.get(API_VERSION, KIND, config.name, config.namespace)
                if lease is None:
                    return False
                metadata = dict(lease.get("metadata") or {})
                annotations = dict(metadata.get("annotations") or {})
                annotations[REQUEST_ANNOTATION] = format_time(self._clock())
                self.connection.replace(
                    {**lease, "metadata": {**metadata, "annotations": annotations}}
                )
                return True
            except kube.Conflict:
                continue  # the leader renewed in between: read again
            except errors.ClusterError as error:
                log.warning("pass_request_failed", lease=config.where, error=str(error))
                return False
        return False

    def _observe(self, holder: str) -> None:
        config, was = self.config, self._leader
        self._leader = holder == config.identity
        if self._leader and not was:
            log.info("leader_acquired", lease=config.where, identity=config.identity)
        elif was and not self._leader:
            log.info("leader_lost", lease=config.where, identity=config.identity, holder=holder)

    def _expired(self, spec: dict[str, Any], now: float) -> bool:
        renewed = parse_time(spec.get("renewTime")) or 0.0
        duration = spec.get("leaseDurationSeconds")
        seconds = duration if isinstance(duration, int | float) else self._duration_seconds()
        return renewed + seconds < now

    def _duration_seconds(self) -> int:
        return max(1, math.ceil(self.config.lease_duration))  # rounded up: never shorter

    def _claim(self, spec: dict[str, Any], now: float) -> dict[str, Any]:
        claimed = dict(spec, leaseDurationSeconds=self._duration_seconds())
        claimed["renewTime"] = format_time(now)
        if spec.get("holderIdentity") != self.config.identity:
            claimed["holderIdentity"] = self.config.identity
            claimed["acquireTime"] = format_time(now)
            claimed["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        return claimed

    def _new_lease(self, now: float) -> dict[str, Any]:
        spec = self._claim({}, now)
        spec["leaseTransitions"] = 0
        metadata = {"name": self.config.name, "namespace": self.config.namespace}
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


def _requested(lease: dict[str, Any]) -> str | None:
    return _annotation(lease, REQUEST_ANNOTATION)


def _annotation(lease: dict[str, Any], name: str) -> str | None:
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(name)
    return value if isinstance(value, str) else None


def _spec(lease: dict[str, Any]) -> dict[str, Any]:
    return dict(lease.get("spec") or {})


class LeaderLoop:
    """Runs an Elector in a daemon thread: acquire, renew every retry_period, step down when
    renewal failed for renew_deadline.

    `on_requested` is called while leading when a follower stamped a pass request on the
    Lease (`Elector.request_pass`); `on_committed` while following, when the leader's Lease
    names a new output commit (`OUTPUT_ANNOTATION`). `on_started` is called on becoming
    leader, `on_stopped`
    on stepping down: at once when
    another replica holds the Lease, after `renew_deadline` without a successful renewal on
    API errors (measured on the monotonic clock), and at `stop()`. A follower keeps trying,
    so a replica that stepped down leads again when it can. Each attempt blocks for up to two
    requests: give the connection a timeout well under `renew_deadline`, as client-go bounds
    each renewal by it.
    """

    def __init__(
        self,
        elector: Elector,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        on_requested: Callable[[], None] | None = None,
        on_committed: Callable[[], None] | None = None,
    ) -> None:
        self.elector = elector
        self._on_started, self._on_stopped = on_started, on_stopped
        self._on_requested = on_requested
        self._on_committed = on_committed
        self._requested: str | None = None
        self._committed: str | None = None
        self._stopping = threading.Event()
        self._leading = False
        self._renewed = 0.0
        self._thread: threading.Thread | None = None

    @property
    def is_leader(self) -> bool:
        """Leading, and the last renewal is less than `renew_deadline` old (so False even
        while an attempt hangs past the deadline)."""
        deadline = self.elector.config.renew_deadline
        return self._leading and time.monotonic() - self._renewed < deadline

    def check(self, write: str) -> None:
        """This replica's fence (`fence.Fence`): return while `is_leader`, that is while the
        last successful renewal started less than `renew_deadline` ago, on the monotonic
        clock (which runs on while the process is stopped); otherwise raise `fence.Deposed`
        naming `write`, which is then not sent."""
        if self.is_leader:
            return
        config = self.elector.config
        if self._leading:
            age = time.monotonic() - self._renewed
            why = f"last renewed {age:.1f}s ago, past its {config.renew_deadline:g}s renew deadline"
        else:
            why = "not held by this replica"
        raise fence.Deposed(
            f"lease {config.where} {why} ({config.identity}); {write} not sent, pass abandoned"
        )

    def start(self) -> None:
        """Start electing in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("a LeaderLoop starts only once")
        self._thread = threading.Thread(target=self._run, name="dro-leader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing, step down (`on_stopped`), release the Lease and join the thread."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        config = self.elector.config
        while not self._stopping.is_set():
            began = time.monotonic()  # the lease written runs from before the request
            try:
                outcome = self.elector._attempt()
            except Exception:  # a bug must not end the thread while this replica leads
                log.exception("lease_attempt_failed", lease=config.where)
                outcome = _Outcome.FAILED
            if outcome is _Outcome.HELD:
                self._renewed = began
                if not self._leading:
                    self._leading = True
                    self._requested = self.elector.requested  # becoming leader runs a pass
                    self._call(self._on_started)
                elif self.elector.requested != self._requested:
                    self._requested = self.elector.requested
                    if self._on_requested is not None:
                        self._call(self._on_requested)
            elif self._leading and (
                outcome is _Outcome.OTHER
                or time.monotonic() - self._renewed >= config.renew_deadline
            ):
                if outcome is _Outcome.FAILED:
                    log.warning("leader_lost", lease=config.where, identity=config.identity)
                self._step_down()
            if outcome is _Outcome.OTHER and self.elector.committed != self._committed:
                self._committed = self.elector.committed
                if self._on_committed is not None and self._committed is not None:
                    self._call(self._on_committed)
            self._stopping.wait(config.retry_period)
        self._step_down()
        self.elector.release()

    def _step_down(self) -> None:
        if self._leading:
            self._leading = False
            self._call(self._on_stopped)

    def _call(self, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:
            log.exception("leader_callback_failed", lease=self.elector.config.where)
