"""Runner: the loop of `dro run`, one pass at a time, on a timer and on webhook triggers.

A pass starts at once, then every `interval` seconds plus up to `jitter` of it at random, and
at once when `trigger` is called (a webhook; a burst of triggers during a pass makes one more
pass, not many). Only the leader runs passes (`leading`); a follower waits. Sharded
(`--shards auto`, `service.sharding`), every member runs passes on its own clusters and only
the leader's commit; a webhook on a member that does not lead also goes to the leader.

- A transient error (git or a cluster API unavailable) is retried with exponential backoff and
  jitter for up to one interval; the last good state stays in force meanwhile.
- A permanent error (an invalid source) is reported and not retried: the next pass comes at
  the next interval or trigger, so the loop never spins on a bad commit.
- Shutdown (`stop`) or lost leadership interrupts a pass only before it commits, so nothing is
  half-written: the commit is one ref update, and once a pass has pushed it finishes applying.
- Except when this replica may no longer write: every write checks `fence` (the leader's
  renew deadline), and a failed check abandons the pass at that write (`fence.Deposed`).

Every pass is counted in the metrics with its result and its stage durations.

Readiness (`ready`, served on `/readyz`) follows Flux's Ready condition: the leader is ready
only while its last finished pass succeeded, and finished within `ready_intervals` intervals.
It is not ready before its first pass succeeds, after a pass that failed (git or a cluster
API unavailable), found the source invalid, or was partial (a cluster unreachable or an object
rejected, so nothing was pruned), and when passes stop finishing. A permanently invalid commit
thus leaves the process alive (`/healthz`) but not ready, which is what it is: it serves, and
the fleet is not at the source's state. An interrupted pass (shutdown, lost leadership) changes
nothing. A follower is ready: it has nothing to fail at until it leads.

Called by `cli.run`, `service.server` and `service.sharding`.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
import tenacity

from reconciler import pipeline
from reconciler.domain import fence
from reconciler.errors import DroError, PermanentError, TransientError, ValidationFailed
from reconciler.git import repack
from reconciler.render import rolloutview
from reconciler.service import heap, metrics
from reconciler.settings import Settings

log = structlog.get_logger("dro")

PassFunction = Callable[[Settings, pipeline.StageHook], pipeline.PassResult]


KEEP_CACHES_EVERY = 60.0
"""Seconds between writes of the on-disk caches while `dro run` runs (`pipeline.Warm`): a
restart finds them at most this old, and a busy process does not rewrite them every pass."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """How often the loop runs, and when it counts as ready."""

    interval: float = 60.0
    jitter: float = 0.1
    """Up to this fraction of `interval` is added at random, so replicas do not align."""
    ready_intervals: float = 3.0
    """`/readyz` fails when the leader's last pass finished more than this many intervals ago
    (and whenever it did not succeed)."""
    first_backoff: float = 1.0
    """The first wait after a transient error; it doubles up to the interval."""


_OUTCOMES = {
    metrics.FAILED: "failed: git or a cluster API was unavailable (retried with backoff)",
    metrics.INVALID: "found the source invalid (see the pass_invalid_source event)",
    metrics.PARTIAL: "was partial: a cluster was unreachable or an object failed, "
    "so nothing was pruned",
}
"""How `/readyz` says what the last pass did, by its result."""


class _StageTimer:
    """Seconds per stage of one pass, from the stage hook's calls, and the total."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.began = clock()
        self._stage_lock = threading.Lock()
        self._abandoning = False
        self.stage: str | None = None
        self.since = self.began
        self.seconds: dict[str, float] = {}

    def enter(self, stage: str) -> None:
        now = self.clock()
        if self.stage is not None:
            self.seconds[self.stage] = self.seconds.get(self.stage, 0.0) + now - self.since
        self.stage, self.since = stage, now

    def done(self) -> dict[str, float]:
        self.enter("")
        self.seconds.pop("", None)
        return {**self.seconds, "total": self.clock() - self.began}


class Interrupted(DroError):
    """Shutdown or lost leadership stopped a pass before it wrote anything."""


class Runner:
    """The loop of one `dro run` process."""

    def __init__(
        self,
        settings: Settings,
        options: RunOptions,
        meter: metrics.Metrics,
        *,
        run_pass: PassFunction | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self.options = options
        self.metrics = meter
        self.run_pass = run_pass or self._reconcile
        self.fence: fence.Fence = fence.UNFENCED
        """Checked before every write of a pass; the leader loop's when electing."""
        self.clock, self.wall, self.rng = clock, wall, rng
        self.stop = threading.Event()
        self.leading = threading.Event()
        """Set while this replica may run passes: it holds the lease, or runs without one."""
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._started = clock()
        self._finished: float | None = None
        self._last_result: str | None = None
        """The result of the last pass that finished (interrupted ones are not counted)."""
        self.passes = 0
        self._stage_lock = threading.Lock()
        self._abandoning = False
        self.stage: str | None = None
        """The stage the running pass is in; None between passes."""
        self.warm = pipeline.Warm(state_dir=settings.state_dir, keep_every=KEEP_CACHES_EVERY)
        """What each pass leaves for the next one, for this process's life (`pipeline.warm`)."""
        self.forward: Callable[[], bool] | None = None
        """How a follower asks the leader for a pass (a stamp on the Lease)."""
        self.commits: Callable[[], bool] = self.leading.is_set
        """Whether this replica's passes commit: it leads. Sharded, every member runs passes
        and only the leader's commit (`service.sharding`)."""

    def _reconcile(self, settings: Settings, hook: pipeline.StageHook) -> pipeline.PassResult:
        return pipeline.reconcile_once(settings, on_stage=hook, fenced=self.fence, warm=self.warm)

    # --- control ------------------------------------------------------------------------------

    def trigger(self, reason: str, *, forward: bool = True) -> bool:
        """Start a pass as soon as the current one (if any) is done; bursts coalesce. On a
        follower, hand the request to the leader too (`forward`, unless told not to: a
        sharded member that saw the leader's new commit applies it, and asks nothing of the
        leader); False when that failed."""
        if forward and not self.commits() and self.forward is not None:
            forwarded = self.forward()
            log.info("pass_forwarded_to_leader", reason=reason, forwarded=forwarded)
            if not self.leading.is_set():
                return forwarded
            # a sharded member: the leader commits, and this member applies its clusters
        log.info("pass_triggered", reason=reason)
        self._wake.set()
        return True

    def shutdown(self) -> None:
        """Stop the loop: a pass before its commit is interrupted, a later one finishes."""
        self.stop.set()
        self._wake.set()

    def abandon(self) -> bool:
        """On shutdown: True when the running pass has written nothing yet (so the process
        may exit at once, without waiting for slow clusters to answer its reads); the pass is
        then counted as interrupted. False between passes and once a pass commits."""
        with self._stage_lock:
            stage = self.stage
            if stage not in pipeline.WRITES_NOTHING:
                return False
            self._abandoning = True  # the pass can no longer reach its commit
        self.metrics.record_pass(metrics.INTERRUPTED, {})
        log.warning("pass_interrupted", reason=f"shutdown during {stage}: nothing was written")
        log.info("pass_ended", result=metrics.INTERRUPTED, **{"pass": self.passes + 1})
        log.info("loop_stopped", passes=self.passes + 1, counted=self.metrics.pass_counts())
        return True

    def ready(self) -> tuple[bool, str]:
        """Whether `/readyz` passes, and why: the rule is in the module's docstring, and the
        answer says it."""
        if not self.leading.is_set():
            return True, "ready: a follower, idle until it holds the lease"
        limit = self.options.ready_intervals * self.options.interval
        rule = f"(the leader is ready when its last pass succeeded within {limit:.0f}s)"
        if self._last_result is None or self._finished is None:
            running = self.clock() - self._started
            return False, f"not ready: no pass has finished yet, after {running:.0f}s {rule}"
        age = self.clock() - self._finished
        if self._last_result != metrics.SUCCESS:
            outcome = _OUTCOMES.get(self._last_result, self._last_result)
            return False, f"not ready: the last pass, {age:.0f}s ago, {outcome} {rule}"
        if age > limit:
            return False, f"not ready: the last pass finished {age:.0f}s ago {rule}"
        return True, f"ready: the last pass succeeded {age:.0f}s ago {rule}"

    # --- the loop -----------------------------------------------------------------------------

    def loop(self) -> None:
        """Run passes until `stop` is set."""
        due = self.clock()
        while not self.stop.is_set():
            self._wake.wait(max(0.0, due - self.clock()))
            if self.stop.is_set():
                break
            self._wake.clear()
            if self.leading.is_set():
                self.run_with_retries()
            due = self.clock() + self.options.interval * (1 + self.options.jitter * self.rng())
        self.warm.flush()
        self.warm.connections.close()
        log.info("loop_stopped", passes=self.passes, counted=self.metrics.pass_counts())

    def run_with_retries(self) -> str:
        """One pass, retried with backoff on transient errors for up to one interval; the
        result of the last attempt."""
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientError),
            # "full jitter": a random wait up to first_backoff × 2^attempt, capped
            wait=tenacity.wait_random_exponential(
                multiplier=self.options.first_backoff, max=self.options.interval
            ),
            stop=tenacity.stop_after_delay(self.options.interval)
            | tenacity.stop_when_event_set(self.stop),
            sleep=self._pause,
            reraise=True,
        )
        try:
            return retrying(self.attempt)
        except TransientError:
            return metrics.FAILED

    def _pause(self, seconds: float) -> None:
        """Back off, but wake at once on shutdown."""
        self.stop.wait(seconds)

    def attempt(self) -> str:
        """One pass, counted in the metrics; raises TransientError so that it is retried."""
        with self._lock:
            return self._attempt()

    def _attempt(self) -> str:
        timer = _StageTimer(self.clock)

        def hook(stage: str) -> None:
            timer.enter(stage)
            with self._stage_lock:  # `abandon` decides on the stage under the same lock
                abandoning = self._abandoning
                if not abandoning:
                    self.stage = stage
            if abandoning:
                # the signal watcher counted this pass and is exiting the process: stop here,
                # before anything is written, and let it
                threading.Event().wait()
            if stage in pipeline.STOPPABLE and (self.stop.is_set() or not self.leading.is_set()):
                raise Interrupted(f"stopped before {stage}: shutting down or no longer leader")

        result = metrics.FAILED
        structlog.contextvars.bind_contextvars(**{"pass": self.passes + 1})
        try:
            outcome = self.run_pass(self.settings, hook)
            result = self._finished_pass(outcome)
        except (Interrupted, fence.Deposed) as error:
            result = metrics.INTERRUPTED
            log.warning("pass_interrupted", reason=str(error))
        except ValidationFailed as failed:
            result = metrics.INVALID
            log.error(
                "pass_invalid_source",
                problems=len(failed.problems),
                first=[str(p) for p in failed.problems[:20]],
            )
        except PermanentError as error:
            result = metrics.INVALID
            log.error("pass_failed_permanently", error=str(error))
        except TransientError as error:
            log.warning("pass_failed_transiently", error=str(error))
            raise
        except Exception as error:  # a bug must not stop the service: report, go on
            log.exception("pass_crashed", error=repr(error))
        finally:
            with self._stage_lock:
                abandoned = self._abandoning
            if abandoned:
                # `abandon` counted this pass and the process is exiting; a stage that failed
                # meanwhile (the signal broke its syscall: EINTR) must not count it again
                threading.Event().wait()
            self.stage = None
            self.passes += 1
            if result != metrics.INTERRUPTED:
                self._last_result, self._finished = result, self.clock()
            stages = timer.done()
            self.metrics.record_pass(result, stages)
            log.info("pass_ended", result=result, seconds=round(stages["total"], 3))
            structlog.contextvars.unbind_contextvars("pass")
            self.warm.flush_due()
            repack.between_passes()
            heap.between_passes(self.passes)
        return result

    def _finished_pass(self, outcome: pipeline.PassResult) -> str:
        planned = outcome.planned
        unschedulable = sum(1 for d in planned.decisions if d.unschedulable)
        self.metrics.record_plan(
            planned.water_levels, unschedulable, rolloutview.counts(planned.decisions)
        )
        if outcome.idle and outcome.applied is None:
            result = metrics.SUCCESS  # `pass_idle` said why nothing was done (offline)
        elif outcome.applied is None:
            log.warning(
                "apply_skipped",
                reason=outcome.skipped
                or "no cluster credentials: give --kubeconfig or --in-cluster to apply; "
                "this pass validated, scheduled, rendered and committed only",
            )
            result = metrics.SUCCESS
        else:
            self.metrics.record_apply(outcome.applied.clusters)
            healthy = outcome.applied.ok and not outcome.unreachable
            result = metrics.SUCCESS if healthy else metrics.PARTIAL
        if result == metrics.SUCCESS:
            self.metrics.last_success.set(self.wall())
        log.info(
            "pass_finished",
            result=result,
            commit=outcome.commit,
            pushed=outcome.pushed,
            unschedulable=unschedulable,
            unreachable=sorted(outcome.unreachable),
        )
        return result
