"""A workload's status per location: its clusters grouped by city code.

Clusters may carry Datum's `topology.datum.net/city-code` label. A workload's status file
(`status/workloads/...`) then also lists, per city code (sorted): the clusters of that city it
was observed on, the replicas rendered there (`desired`, an override of `spec.replicas`
included; null for kinds without replicas), the replicas on those of them whose rollout is
Healthy (`ready`: a Healthy Deployment or StatefulSet has every replica updated and available,
`kube.health`), and the worst health among them. Clusters without a city code belong to no
location. This module is pure.

Called by `branch.status` and `render`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.domain import CITY_CODE_LABEL, Cluster, Decision
from reconciler.kube import health


def cities(clusters: Iterable[Cluster]) -> dict[str, str]:
    """Cluster name → its city code, for the clusters that carry one."""
    return {c.name: c.labels[CITY_CODE_LABEL] for c in clusters if CITY_CODE_LABEL in c.labels}


def entries(
    decision: Decision, per_cluster: Mapping[str, health.Health], cities: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The `locations` of a workload's status: one entry per city code of the observed
    clusters in `per_cluster`, sorted by code; empty when none of them has a city code."""
    rendered = {p.cluster: p.replicas for p in decision.rendered()}
    rendered.update(decision.effective)  # an override of spec.replicas is what runs
    grouped: dict[str, list[str]] = {}
    for name in sorted(per_cluster):
        if name in cities:
            grouped.setdefault(cities[name], []).append(name)
    result = []
    for code, names in sorted(grouped.items()):
        counts = [rendered.get(name) for name in names]
        desired = None if all(c is None for c in counts) else sum(c or 0 for c in counts)
        ready = None
        if desired is not None:
            ready = sum(
                rendered.get(name) or 0
                for name in names
                if per_cluster[name].status == health.HEALTHY
            )
        worst = health.workload({name: per_cluster[name] for name in names})
        result.append(
            {
                "cityCode": code,
                "clusters": names,
                "replicas": {"desired": desired, "ready": ready},
                "health": worst.status,
                "message": worst.message,
            }
        )
    return result
