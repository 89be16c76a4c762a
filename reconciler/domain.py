"""Frozen values that flow between the stages of a pass.

`load` produces a `Source`; `validate` turns it into a `Spec`; `schedule` turns a `Spec` into
`Decision`s; `render` turns both into an output tree. Kubernetes objects stay plain mappings keyed
by `ResourceKey`; there is no class per Kubernetes kind. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Manifest = Mapping[str, Any]
"""A Kubernetes object (or a dro kind) as parsed from YAML: plain dicts, lists and scalars."""

EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return EMPTY


DRO_API_VERSION = "multicluster.io/v1alpha1"
KARMADA_POLICY_API_VERSION = "policy.karmada.io/v1alpha1"


@dataclass(frozen=True, slots=True, order=True)
class ResourceKey:
    """The one join key for an object: (group, kind, namespace, name).

    `namespace` is "" for cluster-scoped objects. Render, diff, apply and prune all use it.
    """

    group: str
    kind: str
    namespace: str
    name: str

    @property
    def sort_key(self) -> tuple[str, str, str, str]:
        """Decisions sort by (namespace, kind, name), then group."""
        return (self.namespace, self.kind, self.name, self.group)

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{self.namespace or '_cluster'}/{kind}/{self.name}"

    @property
    def file_stem(self) -> str:
        """`<kind>-<name>`, with `.<group>` after the kind outside core and apps; lowercase.

        The one naming rule for rendered manifests, decision files and decision names.
        """
        kind = self.kind if self.group in ("", "apps") else f"{self.kind}.{self.group}"
        return f"{kind}-{self.name}".lower()

    @property
    def folder(self) -> str:
        """The namespace, or `_cluster` for cluster-scoped objects."""
        return self.namespace or "_cluster"


def group_of(api_version: str) -> str:
    """The API group of an apiVersion: "" for core "v1", "apps" for "apps/v1"."""
    return api_version.rpartition("/")[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where a document came from: repo-relative path, 1-based line of its first key."""

    path: str
    line: int
    lines: Mapping[str, int] = field(default_factory=_empty, compare=False, repr=False)
    """JSON pointer → line of that node inside the document, for error messages."""

    def line_of(self, pointer: str) -> int:
        """The line of the deepest node on `pointer` that the parser recorded."""
        probe = pointer
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe.rpartition("/")[0]
        return self.line


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One YAML document of a source file, parsed, with its origin."""

    origin: Origin
    body: Manifest


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A file read from the source tree at one commit (or from a plain directory)."""

    path: str
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Everything a pass reads from the user's repository, before any parsing."""

    files: tuple[SourceFile, ...]
    commit: str | None = None
    """The source commit's sha; None for a plain directory."""
    commit_time: int | None = None
    """The committer time of the source commit (Unix seconds), the pass's "now" offline."""


# --- Clusters -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    """A taint on a Cluster, with Kubernetes' semantics."""

    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Toleration:
    """A core/v1 Toleration, as used by Karmada's clusterTolerations."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' rule: matching effect (or any), key (or any with Exists) and value."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    """A member cluster, as declared in `clusters/<name>.yaml`.

    Resource amounts are floats in base units (cores, bytes, counts), parsed with Kubernetes'
    quantity rules.
    """

    name: str
    origin: Origin
    labels: Mapping[str, str] = field(default_factory=_empty)
    capacity: Mapping[str, float] = field(default_factory=_empty)
    allocated: Mapping[str, float] = field(default_factory=_empty)
    largest_node_free: Mapping[str, float] = field(default_factory=_empty)
    taints: tuple[Taint, ...] = ()
    cost: Mapping[str, float] = field(default_factory=_empty)
    kubeconfig_context: str | None = None
    suspend: bool = False
    cordon: bool = False
    drain: bool = False
    zones: tuple[str, ...] = ()

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
    last committed observation of a cluster that could not be reached this pass.
    """

    cluster: str
    capacity: Mapping[str, float]
    used: Mapping[str, float]
    largest_node_free: Mapping[str, float] = field(default_factory=_empty)
    observed_at: str | None = None
    stale: bool = False


# --- Policies -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelRequirement:
    """One matchExpressions entry: In, NotIn, Exists or DoesNotExist."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes' label-selector rule for one requirement."""
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSelector:
    """A metav1.LabelSelector: matchLabels and matchExpressions, ANDed. Empty matches all."""

    match_labels: Mapping[str, str] = field(default_factory=_empty)
    match_expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when every label and every expression holds."""
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        return all(req.matches(labels) for req in self.match_expressions)


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRequirement:
    """A Karmada fieldSelector expression on provider, region or zone (In / NotIn)."""

    key: Literal["provider", "region", "zone"]
    operator: Literal["In", "NotIn"]
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterAffinity:
    """Which clusters a term selects. All non-empty parts are ANDed; `exclude` wins.

    Karmada's `clusterAffinity`, dro's `targetClusters` entries and weight rules all become this.
    A term with every part empty selects every cluster.
    """

    names: tuple[str, ...] | None = None
    label_selector: LabelSelector | None = None
    field_selector: tuple[FieldRequirement, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AffinityTerm:
    """One of Karmada's ordered `clusterAffinities`, with its overflow tiers."""

    name: str
    affinity: ClusterAffinity
    overflow: tuple[tuple[str, ClusterAffinity], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SpreadConstraint:
    """Spread replicas over groups of clusters by a field (cluster, region, zone, provider)."""

    by: Literal["cluster", "region", "zone", "provider"] | str
    min_groups: int = 1
    max_groups: int | None = None
    by_label: bool = False


ReplicaType = Literal["Duplicated", "Divided"]
Division = Literal["StaticWeight", "DynamicWeight", "Aggregated"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaScheduling:
    """How replicas are spread over the chosen clusters."""

    type: ReplicaType = "Duplicated"
    division: Division = "StaticWeight"
    static_weights: tuple[tuple[ClusterAffinity, int], ...] = ()

    @property
    def strategy(self) -> str:
        """The name `division.assign` takes: Duplicated, StaticWeight, DynamicWeight, Aggregated."""
        return "Duplicated" if self.type == "Duplicated" else self.division


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where and how a workload is placed, normalised from every policy kind."""

    targets: tuple[ClusterAffinity, ...] = ()
    """Alternatives (ORed). Empty means every cluster."""
    affinity_terms: tuple[AffinityTerm, ...] = ()
    """Karmada's ordered `clusterAffinities`; when set, `targets` is empty."""
    tolerations: tuple[Toleration, ...] = ()
    replicas: ReplicaScheduling = ReplicaScheduling()
    spread: tuple[SpreadConstraint, ...] = ()
    water_level_limit: Mapping[str, float] = field(default_factory=_empty)
    preferred: tuple[tuple[ClusterAffinity, int], ...] = ()
    """Soft preference terms (weight 1..100); matching clusters score higher."""
    digest: str = ""
    """A hash of the placement as written; a change re-divides the workloads it places."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceSelector:
    """Selects source objects by apiVersion and kind, then optionally namespace, name, labels."""

    api_version: str
    kind: str
    namespace: str | None = None
    name: str | None = None
    label_selector: LabelSelector | None = None

    @property
    def specificity(self) -> int:
        """Karmada's implicit priority: 3 name, 2 labelSelector, 1 kind only."""
        if self.name:
            return 3
        if self.label_selector is not None:
            return 2
        return 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyRef:
    """Names a policy in decisions and messages."""

    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {ns}{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementPolicy:
    """A placement policy of any supported kind, normalised.

    Kinds: dro's ResourcePlacementPolicy and the draft's PropagationPolicy, Karmada's
    PropagationPolicy and ClusterPropagationPolicy. `namespaced` policies only select in their
    own namespace and win over cluster-wide ones.
    """

    ref: PolicyRef
    origin: Origin
    api_version: str
    namespaced: bool
    priority: int = 0
    selectors: tuple[ResourceSelector, ...]
    placement: Placement
    dro_extensions: bool = True
    """dro's filters (RWL limit, node fit, capacity) apply; Karmada kinds opt in by annotation."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OverrideRule:
    """One override rule: the clusters it targets and its operations, in apply order.

    `operations` are tagged tuples, for example ("fieldPatch", {"path": ..., "value": ...}),
    ("plaintext", {...}), ("imageOverrider", {...}), ("labelsOverrider", {...}),
    ("annotationsOverrider", {...}), ("commandOverrider", {...}), ("argsOverrider", {...}).
    """

    target: ClusterAffinity | None
    operations: tuple[tuple[str, Manifest], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OverridePolicy:
    """An override policy of any supported kind, normalised.

    Kinds: dro's ClusterOverridePolicy, Karmada's OverridePolicy and ClusterOverridePolicy.
    Empty `selectors` selects every resource (Karmada's rule for override policies).
    """

    ref: PolicyRef
    origin: Origin
    namespaced: bool
    selectors: tuple[ResourceSelector, ...]
    rules: tuple[OverrideRule, ...]


# --- Workloads and configuration -----------------------------------------------------------


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

    @property
    def uid(self) -> str:
        """The division tie-breaker: metadata.uid when set, else namespace/kind/name."""
        uid = self.manifest.get("metadata", {}).get("uid")
        if isinstance(uid, str) and uid:
            return uid
        return f"{self.key.namespace}/{self.key.kind}/{self.key.name}"

    @property
    def labels(self) -> Mapping[str, str]:
        """metadata.labels, or an empty mapping."""
        labels = self.manifest.get("metadata", {}).get("labels")
        return labels if isinstance(labels, Mapping) else EMPTY


@dataclass(frozen=True, slots=True, kw_only=True)
class Scoring:
    """How scorer weights follow fleet load (`spec.scoring` in dro.yaml).

    With L the fleet's water level, s = clip((L - low) / (high - low), 0, 1). Balance counts
    (0.5 + s) times its base weight and Availability (1.5 - s) times its own: a loaded fleet
    spreads replicas, an idle one aggregates them on fewer clusters.
    """

    adaptive: bool = True
    low_water_level: float = 0.3
    high_water_level: float = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """Scheduling settings from `dro.yaml` (kind SchedulerConfiguration)."""

    origin: Origin | None = None
    water_level_limit: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"cpu": 0.85, "memory": 0.85})
    )
    default_placement: Placement = Placement()
    plugin_weights: Mapping[str, float] = field(default_factory=_empty)
    scoring: Scoring = Scoring()
    kubernetes_version: str | None = None
    raw: Manifest = field(default_factory=_empty)
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
    datasets: Mapping[str, Manifest] = field(default_factory=_empty)
    topology: Manifest | None = None
    claims: Mapping[ResourceKey, PlacementPolicy | None] | None = None
    """The policy that claims each workload, as validation resolved it (None: not resolved)."""


# --- Decisions ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterVerdict:
    """Why one cluster was kept or rejected for one workload, and how it scored."""

    cluster: str
    rejected_by: str | None = None
    """The filter plugin that rejected the cluster, or None when it passed every filter."""
    reason: str | None = None
    scores: Mapping[str, float] = field(default_factory=_empty)
    """Plugin name → score in [0, 100]."""
    total_score: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """The why of a decision: each cluster's verdict, the plugin weights and the strategy."""

    verdicts: tuple[ClusterVerdict, ...] = ()
    weights: Mapping[str, float] = field(default_factory=_empty)
    strategy: str = "Duplicated"
    fleet_water_level: float = 0.0
    """The fleet's water level the weights were adjusted for."""
    trigger: str = ""
    """Why the replicas were divided this pass, or why the previous division stands."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Placed:
    """Replicas of one workload on one cluster; `replicas` is None for kinds without replicas."""

    cluster: str
    replicas: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """Where one workload goes. An unschedulable workload has no clusters and a message."""

    key: ResourceKey
    api_version: str
    policy: PolicyRef | None
    clusters: tuple[Placed, ...]
    """Sorted by cluster name."""
    unschedulable: str | None = None
    diagnosis: Diagnosis = Diagnosis()
    placement_digest: str = ""
    """The digest of the placement this decision was made under."""
    affinity_term: str | None = None
    """The `clusterAffinities` term in use (Karmada's schedulerObservedAffinityName)."""
    recorded: Manifest | None = None
    """The diagnosis as written by the pass that made this placement. While the placement
    stands it is written again unchanged, so a steady pass changes no file."""
