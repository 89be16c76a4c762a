"""Filter: the cluster's own lifecycle fields.

A draining cluster (`spec.drain`) takes nothing and loses what it holds. A cordoned one
(`spec.cordon`) keeps the replicas it holds and takes no new workload; so does an unreachable
one, until it has been unreachable for `failover.after`: then a policy with failover (dro's
always, Karmada's when it sets `spec.failover`) loses what it holds there too.

Called by `schedule.plugins`.
"""

from __future__ import annotations

import numpy as np

from reconciler.domain import durations
from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet


@framework.register_filter("ClusterLifecycle", order=20, karmada=True, static=True)
def lifecycle(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject draining and failed-over clusters, and cordoned or unreachable ones that do not
    already hold the workload."""
    draining = fleet.draining
    failed = fleet.failed if subject.placement.failover else np.zeros(fleet.size, dtype=bool)
    cordoned = fleet.cordoned & ~subject.holders

    def label(row: int) -> tuple[str, str]:
        if draining[row]:
            return "cluster draining", "the cluster is being drained (spec.drain)"
        if failed[row] or fleet.unreachable[row]:
            return "cluster unreachable", (
                "the cluster has been unreachable since "
                f"{durations.rfc3339(float(fleet.unreachable_since[row]))}"
            )
        return "cluster cordoned", "the cluster is cordoned (spec.cordon) and takes no new work"

    return framework.Verdict(passed=~(draining | failed | cordoned), label=label)
