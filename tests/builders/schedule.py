"""Builders for the scheduler's tests: clusters, Deployments, a spec with one policy, and one
workload as the plugins see it (`subject`); shared by test_schedule, test_express,
test_rebalance, test_stci, test_engine, test_filling, test_failover, test_moving and
test_observe."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from reconciler.domain import (
    Cluster,
    Decision,
    LabelSelector,
    Origin,
    Placement,
    PlacementPolicy,
    PolicyRef,
    Rebalance,
    ReplicaScheduling,
    ResourceKey,
    ResourceSelector,
    SchedulerConfig,
    Source,
    Spec,
    Taint,
    Workload,
)
from reconciler.schedule import batch, framework
from reconciler.schedule.fleet import Fleet

ORIGIN = Origin(path="test.yaml", line=1)


def cluster(
    name: str,
    *,
    region: str = "r1",
    provider: str = "aws",
    cpu: float = 100,
    used: float = 10,
    taints: tuple[Taint, ...] = (),
) -> Cluster:
    return Cluster(
        name=name,
        origin=ORIGIN,
        labels=MappingProxyType({"region": region, "provider": provider}),
        capacity=MappingProxyType({"cpu": cpu, "memory": 1e12, "pods": 1000}),
        allocated=MappingProxyType({"cpu": used, "memory": 1e11, "pods": 10}),
        taints=taints,
    )


def deployment(name: str, replicas: int, cpu: str = "1") -> Workload:
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "prod"},
        "spec": {
            "replicas": replicas,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
                    ]
                }
            },
        },
    }
    return Workload(
        key=ResourceKey("apps", "Deployment", "prod", name),
        api_version="apps/v1",
        manifest=manifest,
        origin=ORIGIN,
        replicas=replicas,
    )


def spec_of(clusters: list[Cluster], workloads: list[Workload], placement: Placement) -> Spec:
    policy = PlacementPolicy(
        ref=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name="p"),
        origin=ORIGIN,
        api_version="multicluster.io/v1alpha1",
        namespaced=False,
        selectors=(ResourceSelector(api_version="apps/v1", kind="Deployment"),),
        placement=placement,
    )
    return Spec(
        source=Source(files=()),
        config=SchedulerConfig(),
        clusters=tuple(clusters),
        workloads=tuple(workloads),
        placement_policies=(policy,),
    )


GPU = Taint(key="dedicated", value="gpu", effect="NoSchedule")
SOFT = Taint(key="spot", value="", effect="PreferNoSchedule")
FLEET = Fleet(
    clusters=(
        cluster("a", region="eu"),
        cluster("b", region="us", provider="gcp"),
        cluster("c", region="us", taints=(GPU,)),
        cluster("d", region="ap", taints=(SOFT,)),
    )
)


PLAIN = Placement()


def subject(
    placement: Placement = PLAIN,
    *,
    fleet: Fleet = FLEET,
    replicas: int = 1,
    cpu: float = 1.0,
    holders: tuple[str, ...] = (),
    allocatable: list[int] | None = None,
    limit: dict[str, float] | None = None,
) -> framework.Subject:
    """One workload as the plugins see it, built by hand for table-driven plugin tests."""
    demand = np.array([{"cpu": cpu, "pods": 1.0}.get(r, 0.0) for r in fleet.resources])
    held = np.isin(fleet.names, list(holders))
    limits = np.array([(limit or {}).get(r, 1.0) for r in fleet.resources])
    requested = np.flatnonzero(demand > 0)
    usage = np.ascontiguousarray(fleet.used.T)
    headroom = fleet.capacity_by_resource * limits[:, np.newaxis] - usage
    return framework.Subject(
        workload=deployment("w", replicas),
        placement=placement,
        extensions=True,
        strategy=placement.replicas.strategy,
        replicas=replicas,
        demand=demand,
        requested=requested,
        limit=limits,
        target=fleet.any_affinity(placement.targets),
        holders=held,
        previous=held.astype(np.int64),
        usage=usage,
        headroom=headroom,
        allocatable=np.array(allocatable if allocatable is not None else [100] * fleet.size),
        node_fit=batch.node_fit(fleet, demand[np.newaxis, :])[0],
    )


def labelled(workload: Workload, group: str) -> Workload:
    metadata = {**workload.manifest["metadata"], "labels": {"p": group}}
    return replace(workload, manifest={**workload.manifest, "metadata": metadata})


def policy(group: int, placement: Placement, extensions: bool) -> PlacementPolicy:
    """Policy `p<group>`, for the Deployments labelled `p: <group>`."""
    labels = LabelSelector(match_labels=MappingProxyType({"p": str(group)}))
    return PlacementPolicy(
        ref=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name=f"p{group}"),
        origin=ORIGIN,
        api_version="multicluster.io/v1alpha1",
        namespaced=False,
        selectors=(
            ResourceSelector(api_version="apps/v1", kind="Deployment", label_selector=labels),
        ),
        placement=placement,
        dro_extensions=extensions,
    )


DYNAMIC = ReplicaScheduling(type="Divided", division="DynamicWeight")


def counts(decision: Decision) -> dict[str, int | None]:
    return {p.cluster: p.replicas for p in decision.clusters}


def with_rebalance(spec: Spec, **settings: object) -> Spec:
    return replace(spec, config=SchedulerConfig(rebalance=Rebalance(**settings)))  # type: ignore[arg-type]
