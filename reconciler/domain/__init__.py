"""Frozen values that flow between the stages of a pass.

`load` produces a `Source`; `validate` turns it into a `Spec`; `schedule` turns a `Spec` into
`Decision`s; `render` turns both into an output tree. Kubernetes objects stay plain mappings keyed
by `ResourceKey`; there is no class per Kubernetes kind. Nothing here does I/O.

One module per responsibility: `base` (keys and object refs, origins, the source), `cluster`,
`policy`, `spec` (workloads, settings, the validated Spec) and `decision`; beside them the rules
every stage shares: `claims` (which policy claims a workload), `durations`, `fence` (a write
only while the Lease is held) and `paths`.
"""

from reconciler.domain.base import (
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
    ClusterVerdict,
    Decision,
    Diagnosis,
    Move,
    Placed,
)
from reconciler.domain.policy import (
    AffinityTerm,
    ClusterAffinity,
    Division,
    FieldRequirement,
    LabelRequirement,
    LabelSelector,
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
)
from reconciler.domain.spec import (
    Rebalance,
    SchedulerConfig,
    Scoring,
    Spec,
    Workload,
)

__all__ = [
    "DRO_API_VERSION",
    "EMPTY",
    "KARMADA_POLICY_API_VERSION",
    "AffinityTerm",
    "Cluster",
    "ClusterAffinity",
    "ClusterVerdict",
    "Decision",
    "Diagnosis",
    "Division",
    "Document",
    "FieldRequirement",
    "LabelRequirement",
    "LabelSelector",
    "Manifest",
    "Move",
    "MoveBudget",
    "ObjectRef",
    "Observation",
    "Origin",
    "OverridePolicy",
    "OverrideRule",
    "Placed",
    "Placement",
    "PlacementPolicy",
    "PolicyRef",
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
    "Taint",
    "Toleration",
    "Workload",
    "group_of",
]
