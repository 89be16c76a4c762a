"""Filter: the cluster's own lifecycle fields.

A draining cluster (`spec.drain`) takes nothing and loses what it holds. A cordoned one
(`spec.cordon`) keeps the replicas it holds and takes no new workload.
"""

from __future__ import annotations

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet


@framework.register_filter("ClusterLifecycle", order=20, karmada=True, static=True)
def lifecycle(fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Reject draining clusters, and cordoned ones that do not already hold the workload."""
    draining = fleet.draining
    cordoned = fleet.cordoned & ~subject.holders

    def label(row: int) -> tuple[str, str]:
        if draining[row]:
            return "cluster draining", "the cluster is being drained (spec.drain)"
        return "cluster cordoned", "the cluster is cordoned (spec.cordon) and takes no new work"

    return framework.Verdict(passed=~(draining | cordoned), label=label)
