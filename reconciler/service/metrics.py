"""Metrics: what `dro run` exposes on `/metrics`, in Prometheus' text format.

Every pass is counted once in `dro_reconcile_total` with its result, so passes that failed or
were interrupted are accounted for as well as the ones that succeeded. Each `Metrics` has its
own registry: two runners in one process (as in tests) do not share counters.

Called by `cli.run`, `service` and `service.sharding`.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from importlib import metadata

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from reconciler.live.outcome import ClusterSync

SUCCESS, PARTIAL, FAILED = "success", "partial", "failed"
INVALID, INTERRUPTED = "invalid", "interrupted"
"""`dro_reconcile_total{result}`: the pass finished; it finished but a cluster was unreachable
or an object failed (nothing was pruned); a transient error (git, an API) stopped it; the
source is invalid (a permanent error, not retried); shutdown or lost leadership stopped it
before it wrote anything."""
STAGE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
APPLY_RESULTS = ("applied", "unchanged", "pruned", "drifted", "failed")


class Metrics:
    """The registry of one runner and the metrics in it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._levels: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] | None = None
        """The water levels the gauge was last set to, in order (`record_plan`)."""
        registry = self.registry
        self.reconcile_total = Counter(
            "dro_reconcile", "Passes by result.", ["result"], registry=registry
        )
        self.duration = Histogram(
            "dro_reconcile_duration_seconds",
            "Time per stage of a pass (`total` for the whole pass).",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=registry,
        )
        self.water_level = Gauge(
            "dro_cluster_water_level",
            "Water level (used / capacity) each cluster is left at by the last pass.",
            ["cluster", "resource"],
            registry=registry,
        )
        self.apply_objects = Counter(
            "dro_apply_objects",
            "Objects per cluster and result.",
            ["cluster", "result"],
            registry=registry,
        )
        self.unschedulable = Gauge(
            "dro_unschedulable_workloads",
            "Workloads the last pass could not place.",
            registry=registry,
        )
        self.rollouts = Gauge(
            "dro_rollouts",
            "Workloads under a rollout setting, by where their rollout stands after the last "
            "pass (Progressing, AwaitingApproval, Paused, RolledBack, Complete).",
            ["phase"],
            registry=registry,
        )
        self.last_success = Gauge(
            "dro_last_success_timestamp_seconds",
            "When the last pass succeeded (Unix time).",
            registry=registry,
        )
        self.leader = Gauge(
            "dro_leader",
            "1 while this replica holds the lease (or runs without one).",
            registry=registry,
        )
        self.shard_members = Gauge(
            "dro_shard_members",
            "Sharded (--shards auto): the live members this replica sees.",
            registry=registry,
        )
        self.shard_clusters = Gauge(
            "dro_shard_clusters",
            "Sharded (--shards auto): the clusters this replica owns and may write to now.",
            registry=registry,
        )
        self.webhooks = Counter(
            "dro_webhook_requests", "Webhook requests by result.", ["result"], registry=registry
        )
        self.webhooks_in_flight = Gauge(
            "dro_webhook_requests_in_flight",
            "Webhook requests being read and verified now (at most --webhook-concurrency).",
            registry=registry,
        )
        build = Gauge(
            "dro_build_info",
            "dro's version, as a label.",
            ["version", "python"],
            registry=registry,
        )
        build.labels(version=_version(), python=platform.python_version()).set(1)

    def exposition(self) -> bytes:
        """The text format for a scrape."""
        return generate_latest(self.registry)

    def record_pass(self, result: str, stages: Mapping[str, float]) -> None:
        """Count one pass and the seconds each of its stages took."""
        self.reconcile_total.labels(result=result).inc()
        for stage, seconds in stages.items():
            self.duration.labels(stage=stage).observe(seconds)

    def pass_counts(self) -> dict[str, int]:
        """`dro_reconcile_total` per result, as counted so far."""
        counts: dict[str, int] = {}
        for family in self.reconcile_total.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    counts[sample.labels["result"]] = int(sample.value)
        return counts

    def record_plan(
        self,
        water_levels: Mapping[str, Mapping[str, float]],
        unschedulable: int,
        rollouts: Mapping[str, int] | None = None,
    ) -> None:
        """The water levels, the unschedulable count and the rollouts by phase
        (`render.rollout.counts`) a finished pass left."""
        for phase, count in (rollouts or {}).items():
            self.rollouts.labels(phase=phase).set(count)
        levels = tuple((cluster, tuple(found.items())) for cluster, found in water_levels.items())
        if levels != self._levels:  # an idle pass leaves them as they were: not set again
            self.water_level.clear()
            for cluster, found in levels:
                for resource, level in found:
                    self.water_level.labels(cluster=cluster, resource=resource).set(level)
            self._levels = levels
        self.unschedulable.set(unschedulable)

    def record_apply(self, clusters: Sequence[ClusterSync]) -> None:
        """Add one pass's apply outcomes per cluster."""
        for sync in clusters:
            counts = {
                "applied": sync.applied,
                "unchanged": sync.unchanged,
                "pruned": sync.pruned,
                "drifted": len(sync.drifted),
                "failed": len(sync.failed),
                "rejected": len(sync.rejected),
            }
            for result, count in counts.items():
                # touch every label set, so a scrape shows zeros rather than nothing
                self.apply_objects.labels(cluster=sync.cluster, result=result).inc(count)


def _version() -> str:
    try:
        return metadata.version("dro")
    except metadata.PackageNotFoundError:
        return "0+unknown"
