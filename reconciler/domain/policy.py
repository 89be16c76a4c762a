"""Placement and override policies of every supported kind, normalised.

Called by `domain`, `domain.decision`, `domain.spec` and `simulate.policies`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from reconciler.domain.base import Manifest, Origin, empty
from reconciler.domain.cluster import Toleration
from reconciler.domain.data import DataAccess
from reconciler.domain.disruption import DisruptionBudget
from reconciler.domain.rollout import Rollout


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

    match_labels: Mapping[str, str] = field(default_factory=empty)
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

    def mentioned_names(self) -> tuple[str, ...]:
        """Every cluster name the term mentions (names and exclude), for reference checks."""
        return (self.names or ()) + self.exclude

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        """One cluster against this term (the scalar twin of the scheduler's mask)."""
        if name in self.exclude:
            return False
        if self.names is not None and name not in self.names:
            return False
        if self.label_selector is not None and not self.label_selector.matches(labels):
            return False
        for requirement in self.field_selector:
            inside = labels.get(requirement.key) in requirement.values
            if inside != (requirement.operator == "In"):
                return False
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class AffinityTerm:
    """One of Karmada's ordered `clusterAffinities`, with its overflow tiers."""

    name: str
    affinity: ClusterAffinity
    overflow: tuple[tuple[str, ClusterAffinity], ...] = ()


CITY_CODE_LABEL = "topology.datum.net/city-code"
"""The cluster label that names a cluster's city (Datum's IATA-style code: DFW, LHR, ...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """One entry of a policy's `placement.locations`: cities, any of whose clusters will do.

    A placement by locations tries them in order of preference; each becomes an
    `AffinityTerm` (named after its codes) intersected with the policy's targets."""

    city_codes: tuple[str, ...]

    @property
    def name(self) -> str:
        """The codes joined by commas (`DFW,IAH`): the term name a decision records."""
        return ",".join(self.city_codes)

    def term(self) -> AffinityTerm:
        """The clusters whose `topology.datum.net/city-code` is one of the codes."""
        requirement = LabelRequirement(key=CITY_CODE_LABEL, operator="In", values=self.city_codes)
        selector = LabelSelector(match_expressions=(requirement,))
        return AffinityTerm(name=self.name, affinity=ClusterAffinity(label_selector=selector))


@dataclass(frozen=True, slots=True, kw_only=True)
class SpreadConstraint:
    """Spread replicas over groups of clusters by a field (cluster, region, zone, provider)."""

    by: Literal["cluster", "region", "zone", "provider"] | str
    min_groups: int = 1
    max_groups: int | None = None
    by_label: bool = False


class Strategy(enum.StrEnum):
    """How a workload's replicas go to its clusters: the name `schedule.division` takes and a
    decision's diagnosis records. Objects without replicas go everywhere, as Duplicated."""

    DUPLICATED = "Duplicated"
    STATIC_WEIGHT = "StaticWeight"
    DYNAMIC_WEIGHT = "DynamicWeight"
    AGGREGATED = "Aggregated"

    @property
    def divides(self) -> bool:
        """The "divided" rule: every strategy but Duplicated divides the replicas among the
        clusters (Duplicated gives each cluster all of them)."""
        return self is not Strategy.DUPLICATED


class ReplicaType(enum.StrEnum):
    """A policy's replica scheduling type (Karmada's `replicaSchedulingType`)."""

    DUPLICATED = "Duplicated"
    DIVIDED = "Divided"


class DivisionPreference(enum.StrEnum):
    """Karmada's `replicaDivisionPreference`: Weighted (static or dynamic) or Aggregated."""

    WEIGHTED = "Weighted"
    AGGREGATED = "Aggregated"


Division = Literal[Strategy.STATIC_WEIGHT, Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED]
"""How a Divided policy divides: the strategies that divide."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaScheduling:
    """How replicas are spread over the chosen clusters. `type` and `division` are read as
    their enums (a policy's plain strings included)."""

    type: ReplicaType = ReplicaType.DUPLICATED
    division: Division = Strategy.STATIC_WEIGHT
    static_weights: tuple[tuple[ClusterAffinity, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", ReplicaType(self.type))
        object.__setattr__(self, "division", Strategy(self.division))

    @property
    def strategy(self) -> Strategy:
        """The strategy `schedule.division` takes: Duplicated, or the division of a Divided."""
        return Strategy.DUPLICATED if self.type is ReplicaType.DUPLICATED else self.division


@dataclass(frozen=True, slots=True, kw_only=True)
class MoveBudget:
    """The most replicas re-balancing may move in one pass: a count or a percentage."""

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, value: int | str) -> MoveBudget:
        """`25` or `"25"` (replicas) or `"10%"` (of the replicas in scope)."""
        text = str(value).strip()
        if text.endswith("%"):
            return cls(percent=float(text[:-1]))
        return cls(count=int(text))

    def of(self, replicas: int) -> int:
        """The budget in replicas when `replicas` are in scope (a percentage rounds down,
        but a non-zero percentage of a non-empty scope allows at least one)."""
        if self.count is not None:
            return self.count
        if self.percent is None:
            return replicas
        allowed = int(replicas * self.percent // 100)
        return max(allowed, 1) if self.percent > 0 and replicas > 0 else allowed


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where and how a workload is placed, normalised from every policy kind."""

    targets: tuple[ClusterAffinity, ...] = ()
    """Alternatives (ORed). Empty means every cluster. With affinity terms, each term's
    clusters are intersected with them (Karmada's `clusterAffinities` leave them empty)."""
    affinity_terms: tuple[AffinityTerm, ...] = ()
    """Karmada's ordered `clusterAffinities`, or one term per entry of `locations`."""
    locations: tuple[Location, ...] = ()
    """dro's `placement.locations`: city codes in order of preference (`affinity_terms` holds
    their terms). The location in use falls back down the list when it cannot take the
    workload; see `schedule.locations`."""
    tolerations: tuple[Toleration, ...] = ()
    replicas: ReplicaScheduling = ReplicaScheduling()
    spread: tuple[SpreadConstraint, ...] = ()
    water_level_limit: Mapping[str, float] = field(default_factory=empty)
    water_level_ceiling: Mapping[str, float] = field(default_factory=empty)
    """`waterLevelCeiling`: per resource, the water level up to which replicas that fit under
    no limit overflow (dro.yaml's, else 1.0)."""
    overflow: Literal["Always", "Never"] = "Always"
    """`overflow`: Never keeps the water-level limit hard (no overflow to the ceiling)."""
    preferred: tuple[tuple[ClusterAffinity, int], ...] = ()
    """Soft preference terms (weight 1..100); matching clusters score higher."""
    digest: str = ""
    """A hash of the placement as written, `rebalance` aside; a change re-divides the
    workloads it places."""
    max_moves: MoveBudget | None = None
    """`rebalance.maxMovesPerPass`: lowers the fleet's churn budget for these workloads."""
    failover: bool = True
    """Replicas leave a cluster unreachable for longer than `failover.after` (dro's policies
    always; Karmada's when they set `spec.failover`)."""
    data: tuple[DataAccess, ...] = ()
    """STCI: the data sets the workloads it places read and write (`placement.data`)."""
    allow_split: bool = False
    """A stateful workload may be split across clusters (by default it runs whole on one)."""
    max_data_latency_ms: float | None = None
    """STCI: clusters farther than this from a data set the workload uses are filtered out."""
    rebalance_requested_at: str | None = None
    """`rebalance.requestedAt` (RFC 3339): newer than a decision last served, it re-divides
    the workload in Fresh mode, moving replicas under the churn budget."""
    takeover: Literal["IfNoDiff", "Always", "Never"] = "IfNoDiff"
    """`apply.takeover`: whether apply adopts an object that exists on a cluster and that dro
    did not create (`apply.py`). Karmada's `conflictResolution: Overwrite` is Always, its
    default Abort is Never."""
    drift: Literal["Correct", "Report"] = "Correct"
    """`apply.drift`: whether apply writes again an object whose live copy drifted from the
    manifest dro last applied (Correct), or only reports it in `status/drift/` (Report)."""
    suspended_dispatching: bool = False
    """Karmada's `suspension.dispatching`: changes reach no member cluster (render keeps
    what each already has; scheduling goes on)."""
    suspended_on: tuple[str, ...] = ()
    """Karmada's `suspension.dispatchingOnClusters.clusterNames`: the same, on these only."""
    disruption: DisruptionBudget | None = None
    """`disruption.maxUnavailableClusters`: how many of the workload's clusters its voluntary
    moves may take out of service at once (None: dro.yaml's `spec.disruption`, else no limit)."""
    rollout: Rollout | None = None
    """`placement.rollout`: a template change reaches the clusters in waves (None: dro.yaml's
    `spec.rollout`, else every cluster at once)."""

    def dispatch_suspended(self, cluster: str) -> bool:
        """Whether changes to the workload are held back from `cluster`."""
        return self.suspended_dispatching or cluster in self.suspended_on


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
    pointers: tuple[str, ...] = ()
    """The JSON pointer of each operation in its policy document (for its line in errors)."""


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
