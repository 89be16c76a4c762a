"""Filter: the placement's targets (dro's targetClusters, Karmada's clusterAffinity)."""

from __future__ import annotations

from reconciler.schedule import framework


@framework.register_filter("ClusterAffinity")
def cluster_affinity(context: framework.Context) -> framework.Verdict:
    """Keep the clusters that any target term selects (all clusters when there are none)."""
    if context.target_mask is not None:
        mask = context.target_mask.copy()
    else:
        mask = context.fleet.any_affinity(context.placement.targets)
    return framework.verdict(
        mask,
        "cluster(s) did not match the placement's targets",
        "not selected by the policy's targets",
    )
