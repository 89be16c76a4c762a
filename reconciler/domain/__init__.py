"""Frozen values that flow between the stages of a pass.

`load` produces a `Source`; `validate` turns it into a `Spec`; `schedule` turns a `Spec` into
`Decision`s; `render` turns both into an output tree. Kubernetes objects stay plain mappings keyed
by `ResourceKey`; there is no class per Kubernetes kind. Nothing here does I/O.

One module per responsibility: `base` (keys and object refs, origins, the source), `cluster`,
`policy`, `spec` (workloads, settings, the validated Spec), `decision`, `verdicts` (a
decision's per-cluster why, built when read) and `reasons` (a decision's trigger and a move's
reason, as codes),
`forecast` (cluster history and forecasts); beside them the rules every stage shares:
`claims` (which policy claims a workload), `durations`, `fence` (a write only while the Lease is
held) and `paths`.

Called by 122 modules, among them `audit`, `branch.comparison`, `cli`, `commit.describe`.
"""

from reconciler.domain.base import (
    CLUSTER_SCOPED_KINDS,
    DRO_API_VERSION,
    EMPTY,
    KARMADA_POLICY_API_VERSION,
    Document,
    Manifest,
    ObjectRef,
    Origin,
    ResourceKey,
    Source,
    SourceFile,
    group_of,
)
from reconciler.domain.cluster import (
    Cluster,
    Observation,
    Taint,
    Toleration,
)
from reconciler.domain.decision import (
    Decision,
    Diagnosis,
    Move,
    Placed,
)
from reconciler.domain.disruption import Disruption, DisruptionBudget, Waiting
from reconciler.domain.forecast import (
    ClusterForecast,
    ClusterSample,
    Forecasts,
    History,
)
from reconciler.domain.policy import (
    CITY_CODE_LABEL,
    AffinityTerm,
    ClusterAffinity,
    Division,
    DivisionPreference,
    FieldRequirement,
    LabelRequirement,
    LabelSelector,
    Location,
    MoveBudget,
    OverridePolicy,
    OverrideRule,
    Placement,
    PlacementPolicy,
    PolicyRef,
    ReplicaScheduling,
    ReplicaType,
    ResourceSelector,
    SpreadConstraint,
    Strategy,
)
from reconciler.domain.reasons import (
    MoveCode,
    MoveReason,
    Trigger,
    TriggerCode,
)
from reconciler.domain.spec import (
    Output,
    Prediction,
    Rebalance,
    SchedulerConfig,
    Scoring,
    Spec,
    Workload,
)
from reconciler.domain.verdicts import LISTED_OTHERS, ClusterVerdict, Listing, Verdicts

__all__ = [
    "CITY_CODE_LABEL",
    "CLUSTER_SCOPED_KINDS",
    "DRO_API_VERSION",
    "EMPTY",
    "KARMADA_POLICY_API_VERSION",
    "LISTED_OTHERS",
    "AffinityTerm",
    "Cluster",
    "ClusterAffinity",
    "ClusterForecast",
    "ClusterSample",
    "ClusterVerdict",
    "Decision",
    "Diagnosis",
    "Disruption",
    "DisruptionBudget",
    "Division",
    "DivisionPreference",
    "Document",
    "FieldRequirement",
    "Forecasts",
    "History",
    "LabelRequirement",
    "LabelSelector",
    "Listing",
    "Location",
    "Manifest",
    "Move",
    "MoveBudget",
    "MoveCode",
    "MoveReason",
    "ObjectRef",
    "Observation",
    "Origin",
    "Output",
    "OverridePolicy",
    "OverrideRule",
    "Placed",
    "Placement",
    "PlacementPolicy",
    "PolicyRef",
    "Prediction",
    "Rebalance",
    "ReplicaScheduling",
    "ReplicaType",
    "ResourceKey",
    "ResourceSelector",
    "SchedulerConfig",
    "Scoring",
    "Source",
    "SourceFile",
    "Spec",
    "SpreadConstraint",
    "Strategy",
    "Taint",
    "Toleration",
    "Trigger",
    "TriggerCode",
    "Verdicts",
    "Waiting",
    "Workload",
    "group_of",
]
