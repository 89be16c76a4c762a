"""Builders for the data-locality (STCI) tests: clusters with zones, a divided placement and a
spec that places one StatefulSet; shared by test_stci, test_moving and test_rebalance_data."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

from reconciler.domain import Cluster, Origin, ResourceSelector
from tests.builders.schedule import deployment, spec_of, subject

ORIGIN = Origin(path="datasets/d.yaml", line=1)
TIB = float(2**40)
GIB = float(2**30)


def cluster(name: str, provider: str, region: str, zone: str) -> Cluster:
    return Cluster(
        name=name,
        origin=ORIGIN,
        labels=MappingProxyType({"provider": provider, "region": region, "zone": zone}),
        capacity=MappingProxyType({"cpu": 100.0, "memory": 1e12, "pods": 1000.0}),
        allocated=MappingProxyType({"cpu": 10.0, "memory": 1e11, "pods": 10.0}),
    )


def statefulset(name: str, replicas: int) -> Any:
    made = deployment(name, replicas)
    manifest = {**made.manifest, "apiVersion": "apps/v1", "kind": "StatefulSet"}
    key = made.key._replace(kind="StatefulSet")
    return dataclasses.replace(made, key=key, manifest=manifest)


def divided(**changes: Any) -> Any:
    base = subject().placement
    replicas = dataclasses.replace(base.replicas, type="Divided", division="DynamicWeight")
    return dataclasses.replace(base, replicas=replicas, **changes)


STORES = [cluster("a", "aws", "eu", "eu-1a"), cluster("b", "aws", "eu", "eu-1b")]


def stateful_spec(clusters: list[Cluster], replicas: int, placement: Any) -> Any:
    """A spec whose one policy places StatefulSets (spec_of's places Deployments)."""
    spec = spec_of(clusters, [statefulset("db", replicas)], placement)
    (policy,) = spec.placement_policies
    selector = ResourceSelector(api_version="apps/v1", kind="StatefulSet")
    return dataclasses.replace(
        spec, placement_policies=(dataclasses.replace(policy, selectors=(selector,)),)
    )
