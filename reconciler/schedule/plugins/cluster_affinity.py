"""Filter: the placement's targets (dro's targetClusters, Karmada's clusterAffinity or the
current term of its clusterAffinities, with that term's overflow tiers; or the current one
of dro's `placement.locations`, within the targets).

Called by `schedule.plugins`.
"""

from __future__ import annotations

from reconciler.schedule import framework
from reconciler.schedule.fleet import Fleet


@framework.register_filter("ClusterAffinity", order=10, karmada=True, static=True)
def cluster_affinity(_fleet: Fleet, subject: framework.Subject) -> framework.Verdict:
    """Keep the clusters the placement's targets select."""
    if subject.placement.locations:
        return framework.verdict(
            subject.target,
            "outside the location",
            "not in the location's cities, or not selected by the policy's targets",
        )
    return framework.verdict(
        subject.target, "not targeted by the placement", "not selected by the policy's targets"
    )
