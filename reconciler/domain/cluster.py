"""Member clusters as declared, their taints, and live observations of their resources.

Called by `domain`, `domain.policy` and `domain.spec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from reconciler.domain.base import Origin, ResourceKey, empty


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    """A taint on a Cluster, with Kubernetes' semantics."""

    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    time_added: float | None = None
    """`timeAdded` (epoch seconds), which bounds a NoExecute toleration's `tolerationSeconds`;
    None when not declared: the taint counts as added at the pass's time."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Toleration:
    """A core/v1 Toleration, as used by Karmada's clusterTolerations."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: str = ""
    seconds: int | None = None
    """`tolerationSeconds`: how long a tolerated NoExecute taint is tolerated (None: forever)."""

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 `ToleratesTaint`, exactly: an empty effect matches every effect and an
        empty key every key; `Exists` matches any value, `Equal` (the default) compares
        values, so `{effect: NoSchedule}` tolerates every NoSchedule taint with an empty
        value, whatever its key."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    """A member cluster, as declared in `clusters/<name>.yaml`.

    Resource amounts are floats in base units (cores, bytes, counts), parsed with Kubernetes'
    quantity rules.
    """

    name: str
    origin: Origin
    labels: Mapping[str, str] = field(default_factory=empty)
    capacity: Mapping[str, float] = field(default_factory=empty)
    allocated: Mapping[str, float] = field(default_factory=empty)
    largest_node_free: Mapping[str, float] = field(default_factory=empty)
    taints: tuple[Taint, ...] = ()
    cost: Mapping[str, float] = field(default_factory=empty)
    """`spec.cost`: price per hour per resource, per unit-hour (cpu per core-hour) or, for
    memory and other byte resources, per GiB-hour (`schedule.pricing`); empty: unpriced."""
    kubeconfig_context: str | None = None
    in_cluster: bool = False
    """The cluster dro runs in: reached with the pod's service account, not a kubeconfig."""
    suspend: bool = False
    cordon: bool = False
    drain: bool = False
    zones: tuple[str, ...] = ()

    @property
    def reachable_by_dro(self) -> bool:
        """dro has a way to reach its API (a kubeconfig context, or in-cluster); a cluster
        without one is placed from its declared figures only, and is never unreachable."""
        return bool(self.kubeconfig_context) or self.in_cluster

    @property
    def provider(self) -> str:
        """The provider label, "" when unset."""
        return self.labels.get("provider", "")

    @property
    def region(self) -> str:
        """The region label, "" when unset."""
        return self.labels.get("region", "")

    @property
    def zone(self) -> str:
        """The zone label, else the first of `spec.zones`, "" when neither is set."""
        return self.labels.get("zone") or (self.zones[0] if self.zones else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """A cluster's resources as measured live: the seam between observe and schedule.

    Amounts are floats in base units. When a cluster has an observation, the scheduler uses it
    in place of the declared `capacity`, `allocated` and `largestNodeFree`. `stale` marks the
    last committed observation of a cluster that could not be reached this pass;
    `unreachable_since` (RFC 3339) is when its API first failed to list, kept until it lists
    again. A cluster without a kubeconfig is never unreachable.
    """

    cluster: str
    capacity: Mapping[str, float]
    used: Mapping[str, float]
    largest_node_free: Mapping[str, float] = field(default_factory=empty)
    observed_at: str | None = None
    stale: bool = False
    unreachable_since: str | None = None
    pending: Mapping[ResourceKey, tuple[int, str]] = field(default_factory=dict)
    """Workloads with pods pending (unschedulable) here: key → (pods, pending since, RFC 3339)."""
    health: Mapping[ResourceKey, tuple[str, str]] = field(default_factory=dict)
    """The health of each workload dro applied here: key → (status, message), Argo CD's
    states (`kube.health`). A move's old copies retire once its new copies are Healthy."""
    synced: Mapping[ResourceKey, str] = field(default_factory=dict)
    """Workloads dro applied here whose live object carries `multicluster.io/data-synced`
    (set by a data-sync job or by hand): key → the annotation's value. A stateful move
    leaves its Syncing phase on it (`reconciler.schedule.moving`)."""
    revisions: Mapping[ResourceKey, str] = field(default_factory=dict)
    """Workloads dro applied here whose live object carries `multicluster.io/revision`: key →
    the template revision it runs (a rollout's wave is Healthy only with the new one)."""
