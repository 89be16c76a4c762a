"""Health: is a live object what its manifest asked for, as Argo CD users read it.

`of(obj)` assesses one live object (a dict as the API returns it, or None when it is absent)
from its rollout status, by the rules `kubectl rollout status` follows:

- Deployment: Suspended when paused; Degraded when its Progressing condition says
  `ProgressDeadlineExceeded`; Progressing until the controller has observed the newest
  generation and every replica is updated, old ones are gone, and the updated ones are
  available.
- StatefulSet: Progressing until the newest generation is observed, every replica is ready,
  no pod beyond `spec.replicas` is left (the controller counts terminating pods in
  `status.replicas`: a scale-down is over when they are gone), and the rolling update is
  complete (up to the partition, if one is set).
- DaemonSet: Progressing until every scheduled pod is updated and available.
- Job: Degraded when it failed, Healthy when it completed, Suspended when suspended, else
  Progressing.
- Any other object is Healthy when it exists. Anything absent is Missing, and one being deleted
  is Progressing.

`worst` aggregates, as Argo CD does for an application: Healthy < Suspended < Progressing <
Missing < Degraded < Unknown, and the worst one wins. `workload` does so across a workload's
clusters and names the clusters that decided it.

Called by 8 modules, among them `branch.locations`, `live`, `render.rollout`,
`schedule.disruption`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

HEALTHY = "Healthy"
SUSPENDED = "Suspended"
PROGRESSING = "Progressing"
MISSING = "Missing"
DEGRADED = "Degraded"
UNKNOWN = "Unknown"
ORDER = (HEALTHY, SUSPENDED, PROGRESSING, MISSING, DEGRADED, UNKNOWN)
"""From the healthiest to the least healthy: the worst one decides an aggregate."""
ROLLOUT_KINDS = (
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
)
"""The kinds whose rollout has a health; an object of any other kind is Healthy when present."""


@dataclass(frozen=True, slots=True)
class Health:
    """A health status and why."""

    status: str
    message: str = ""

    @property
    def rank(self) -> int:
        """Position in `ORDER`; higher is worse."""
        return ORDER.index(self.status)


def has_rollout(group: str, kind: str) -> bool:
    """Whether objects of this API group and kind have a rollout whose health is checked."""
    return (group, kind) in _CHECKS


def of(obj: Mapping[str, Any] | None) -> Health:
    """The health of one live object; Missing when it is absent."""
    if obj is None:
        return Health(MISSING, "not found in the cluster")
    metadata = obj.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return Health(PROGRESSING, "pending deletion")
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    check = _CHECKS.get((group, str(obj.get("kind", ""))))
    if check is None:
        return Health(HEALTHY)
    try:
        return check(
            obj.get("spec") or {}, obj.get("status") or {}, int(metadata.get("generation", 0))
        )
    except (TypeError, ValueError, AttributeError) as error:
        return Health(UNKNOWN, f"cannot read its status: {error}")


def worst(healths: Iterable[Health]) -> Health:
    """The least healthy of `healths`; Healthy when there are none."""
    result = Health(HEALTHY)
    for health in healths:
        if health.rank > result.rank:
            result = health
    return result


def workload(per_cluster: Mapping[str, Health]) -> Health:
    """A workload's health across its clusters: the worst, naming the clusters with it."""
    overall = worst(per_cluster.values())
    if overall.status == HEALTHY or not per_cluster:
        return Health(overall.status)
    clusters = sorted(c for c, h in per_cluster.items() if h.status == overall.status)
    detail = f": {overall.message}" if overall.message and len(clusters) == 1 else ""
    return Health(overall.status, f"{', '.join(clusters)}{detail}")


def _observed(status: Mapping[str, Any], generation: int) -> bool:
    return generation <= int(status.get("observedGeneration", 0))


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == kind), None)


def _rolling(*waits: tuple[bool, str]) -> Health:
    """Progressing with the first reason that still holds, in rollout order; else Healthy."""
    for waiting, reason in waits:
        if waiting:
            return Health(PROGRESSING, reason)
    return Health(HEALTHY)


def _deployment(spec: Mapping[str, Any], status: Mapping[str, Any], generation: int) -> Health:
    if spec.get("paused"):
        return Health(SUSPENDED, "the rollout is paused")
    if not _observed(status, generation):
        return Health(PROGRESSING, "the controller has not observed the newest generation yet")
    progressing = _condition(status, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Health(DEGRADED, "the rollout exceeded its progress deadline")
    wanted = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas", 0))
    old = int(status.get("replicas", 0)) - updated
    available = int(status.get("availableReplicas", 0))
    return _rolling(
        (updated < wanted, f"{updated} of {wanted} replicas updated"),
        (old > 0, f"{old} old replicas pending termination"),
        (available < updated, f"{available} of {updated} updated replicas available"),
    )


def _statefulset(spec: Mapping[str, Any], status: Mapping[str, Any], generation: int) -> Health:
    if not status.get("observedGeneration") or not _observed(status, generation):
        return Health(PROGRESSING, "the controller has not observed the newest generation yet")
    wanted = int(spec.get("replicas", 1))
    ready = int(status.get("readyReplicas", 0))
    if ready < wanted:
        return Health(PROGRESSING, f"{wanted - ready} pods not ready")
    extra = int(status.get("replicas", 0)) - wanted
    if extra > 0:
        return Health(PROGRESSING, f"{extra} pods pending termination")
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") == "OnDelete":
        return Health(HEALTHY)
    partition = (strategy.get("rollingUpdate") or {}).get("partition")
    if partition is not None:
        target = wanted - int(partition)
        updated = int(status.get("updatedReplicas", 0))
        if updated < target:
            return Health(PROGRESSING, f"{updated} of {target} pods updated (partitioned)")
        return Health(HEALTHY)
    if status.get("updateRevision") != status.get("currentRevision"):
        return Health(PROGRESSING, f"rolling update to {status.get('updateRevision')} ongoing")
    return Health(HEALTHY)


def _daemonset(spec: Mapping[str, Any], status: Mapping[str, Any], generation: int) -> Health:
    if not _observed(status, generation):
        return Health(PROGRESSING, "the controller has not observed the newest generation yet")
    if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
        return Health(HEALTHY)
    desired = int(status.get("desiredNumberScheduled", 0))
    updated = int(status.get("updatedNumberScheduled", 0))
    available = int(status.get("numberAvailable", 0))
    return _rolling(
        (updated < desired, f"{updated} of {desired} pods updated"),
        (available < desired, f"{available} of {desired} pods available"),
    )


def _job(spec: Mapping[str, Any], status: Mapping[str, Any], _generation: int) -> Health:
    for kind, verdict in (("Failed", DEGRADED), ("Complete", HEALTHY)):
        condition = _condition(status, kind)
        if condition is not None and condition.get("status") == "True":
            return Health(verdict, str(condition.get("message") or ""))
    if spec.get("suspend"):
        return Health(SUSPENDED, "the job is suspended")
    return Health(PROGRESSING, f"{int(status.get('active', 0))} pods active")


_CHECKS = {
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
}
