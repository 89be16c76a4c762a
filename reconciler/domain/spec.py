"""Workloads, dro.yaml's scheduling settings, and the validated Spec.

Called by `domain`, `predict` and `simulate.seams`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reconciler.domain.base import EMPTY, Manifest, Origin, ResourceKey, Source, empty
from reconciler.domain.cluster import Cluster
from reconciler.domain.data import DataAccess, DataSet, Topology
from reconciler.domain.disruption import DisruptionBudget
from reconciler.domain.policy import MoveBudget, OverridePolicy, Placement, PlacementPolicy
from reconciler.domain.rollout import Rollout


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A Kubernetes object from `workloads/`, placed on clusters by a policy.

    `replicas` is None for kinds without a replica count (ConfigMap, Service, CronJob …).
    """

    key: ResourceKey
    api_version: str
    manifest: Manifest
    origin: Origin
    replicas: int | None = None
    sealed: bytes = b""
    """A SOPS-encrypted Secret's source file, rendered as it is (its MAC covers every value);
    empty for every other object."""

    @property
    def uid(self) -> str:
        """The division tie-breaker: metadata.uid when set, else namespace/kind/name."""
        uid = self.manifest.get("metadata", {}).get("uid")
        if isinstance(uid, str) and uid:
            return uid
        return f"{self.key.namespace}/{self.key.kind}/{self.key.name}"

    @property
    def stateful(self) -> bool:
        """A StatefulSet, or a pod template that mounts a PersistentVolumeClaim: its replicas
        move only whole (drain, failover, Fresh), never by automatic re-balancing."""
        if self.key.kind == "StatefulSet":
            return True
        spec = self.manifest.get("spec")
        template = spec.get("template") if isinstance(spec, Mapping) else None
        pod = template.get("spec") if isinstance(template, Mapping) else None
        volumes = pod.get("volumes") if isinstance(pod, Mapping) else None
        return any(isinstance(v, Mapping) and "persistentVolumeClaim" in v for v in volumes or ())

    @property
    def labels(self) -> Mapping[str, str]:
        """metadata.labels, or an empty mapping."""
        labels = self.manifest.get("metadata", {}).get("labels")
        return labels if isinstance(labels, Mapping) else EMPTY


@dataclass(frozen=True, slots=True, kw_only=True)
class Scoring:
    """How scorer weights follow fleet load (`spec.scoring` in dro.yaml).

    With L the fleet's water level, s = clip((L - low) / (high - low), 0, 1). Balance counts
    (0.5 + s) times its base weight, Availability (1.5 - s) times and Cost 2 × (1 - s) times
    its own: a loaded fleet spreads replicas, an idle one aggregates them on fewer, cheaper
    clusters (`schedule.facts.effective_weights`).
    """

    adaptive: bool = True
    low_water_level: float = 0.3
    high_water_level: float = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class Rebalance:
    """Re-balancing and failover settings (`spec.rebalance`, `spec.failover` in dro.yaml).

    Durations are in seconds. A move happens only when the water level it leaves exceeds the
    one it creates by `threshold`; at most `max_moves` replicas move per pass.
    """

    threshold: float = 0.1
    max_moves: MoveBudget = field(default_factory=lambda: MoveBudget(percent=10.0))
    cooldown: float = 600.0
    unschedulable_after: float = 300.0
    failover_after: float = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Prediction:
    """Prediction settings (`spec.prediction` in dro.yaml); durations in seconds.

    Off by default. When on, each pass forecasts every cluster's background load from the
    status history on the output branch within `window`, resampled every `step`, over
    `horizon`, and schedules on the forecast where it is higher than the usage now. `band` adds
    that many root-mean-square errors of recent forecasts at the horizon to the forecast level.
    """

    enabled: bool = False
    horizon: float = 7200.0
    window: float = 7 * 86400.0
    step: float = 600.0
    band: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    """Extra renders on the output branch (`spec.output` in dro.yaml).

    With `karmada`, every placed workload also gets, under `karmada/`, its template and a
    Karmada PropagationPolicy (and OverridePolicy) that make a Karmada control plane place it
    exactly as dro decided. `cluster_profile_namespace` is the namespace of the fleet's
    ClusterProfiles that the KEP-5313 PlacementDecisions refer to (None: their own).
    """

    karmada: bool = False
    cluster_profile_namespace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """Scheduling settings from `dro.yaml` (kind SchedulerConfiguration)."""

    origin: Origin | None = None
    water_level_limit: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"cpu": 0.85, "memory": 0.85})
    )
    water_level_ceiling: Mapping[str, float] = field(default_factory=empty)
    """`waterLevelCeiling` per resource (1.0 where unset): how far overflow may fill."""
    default_placement: Placement = field(default_factory=Placement)
    plugin_weights: Mapping[str, float] = field(default_factory=empty)
    scoring: Scoring = Scoring()
    rebalance: Rebalance = Rebalance()
    prediction: Prediction = Prediction()
    output: Output = Output()
    disruption: DisruptionBudget | None = None
    """`spec.disruption`: the budget of workloads whose placement sets none (None: no limit)."""
    kubernetes_version: str | None = None
    rollout: Rollout | None = None
    """`spec.rollout`: the waves of every workload whose policy sets no `rollout`."""
    raw: Manifest = field(default_factory=empty)
    """The whole spec, for settings later stages read (rebalance, failover …)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec:
    """The validated source: everything `schedule` and `render` need, and nothing else."""

    source: Source
    config: SchedulerConfig
    clusters: tuple[Cluster, ...]
    """Sorted by name."""
    workloads: tuple[Workload, ...]
    """Sorted by `ResourceKey.sort_key`."""
    placement_policies: tuple[PlacementPolicy, ...] = ()
    override_policies: tuple[OverridePolicy, ...] = ()
    datasets: Mapping[str, Manifest] = field(default_factory=empty)
    topology: Manifest | None = None
    data_sets: Mapping[str, DataSet] = field(default_factory=empty)
    """STCI: every DataSet by name, parsed."""
    links: Topology = field(default_factory=Topology)
    """STCI: the links between clusters (`topology.yaml`, or the tier defaults)."""
    data_access: Mapping[ResourceKey, tuple[DataAccess, ...]] = field(default_factory=dict)
    """STCI: what plain manifests declare they read and write (`multicluster.io/data`)."""
    dependents: Mapping[ResourceKey, tuple[ResourceKey, ...]] = field(default_factory=dict)
    """Bundling: each object a pod-running workload needs → the workloads that need it."""
    sync_hooks: Mapping[ResourceKey, ResourceKey] = field(default_factory=dict)
    """Stateful moves: each workload with a data-sync hook → the hook Job (`movehooks`)."""
    claims: Mapping[ResourceKey, PlacementPolicy | None] | None = None
    """The policy that claims each workload, as validation resolved it (None: not resolved)."""
