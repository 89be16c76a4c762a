"""Filter and scorer plugins; importing this package registers every one of them.

Each filter states its `order`: targets, lifecycle, taints, spread fields, water level, data
latency, node fit, capacity. A rejected cluster is charged to the first filter that rejects it.

Called by `schedule`.
"""

from reconciler.schedule.plugins import (
    availability,
    balance,
    capacity,
    cluster_affinity,
    cost,
    data_locality,
    lifecycle,
    locality,
    node_fit,
    preference,
    spread_fields,
    taint_toleration,
    water_level,
)

__all__ = [
    "availability",
    "balance",
    "capacity",
    "cluster_affinity",
    "cost",
    "data_locality",
    "lifecycle",
    "locality",
    "node_fit",
    "preference",
    "spread_fields",
    "taint_toleration",
    "water_level",
]
