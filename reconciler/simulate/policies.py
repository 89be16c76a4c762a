"""The policies `dro simulate` compares, as rewrites of the trace's own placement policies.

- `dro`: the source as written, prediction on (`simulate.seams.forecast` at every step, with
  `spec.prediction`'s horizon and window, whether or not the source enables it).
- `dro-reactive`: the source as written, prediction off.
- `dro-nocost`: `dro` with `pluginWeights.Cost: 0` (what the Cost scorer saves).
- `karmada-dynamic`: every policy (and the default placement) as a Karmada
  PropagationPolicy: no dro extensions (no water-level filter, no re-balancing), Divided
  workloads by `dynamicWeight: AvailableReplicas`.
- `karmada-static`: the same, Divided workloads by static weights proportional to each
  cluster's cpu capacity (Karmada's `staticWeightList`, one entry per cluster).
- `least-loaded`: no dro at all (`simulate.leastloaded`).

A rewrite replaces `Spec.claims` (which policy claims each workload) with rewritten policies,
so the workloads, their order and the policies' selectors stay as validated.

Called by `cli.simulate`, `simulate`, `simulate.leastloaded` and `simulate.replay`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from reconciler.domain import (
    Cluster,
    ClusterAffinity,
    Origin,
    Placement,
    PlacementPolicy,
    PolicyRef,
    ReplicaScheduling,
    ResourceKey,
    Spec,
    Strategy,
    claims,
)
from reconciler.domain.policy import ReplicaType

POLICIES = ("dro", "dro-reactive", "karmada-dynamic", "karmada-static", "least-loaded")
"""The default set, in the order the table lists them."""
OPTIONAL = ("dro-nocost",)
ALL = POLICIES + OPTIONAL
KARMADA_API = "policy.karmada.io/v1alpha1"


def claimed(spec: Spec) -> dict[ResourceKey, PlacementPolicy | None]:
    """Each workload's claiming policy, as validation resolved it (None: the default)."""
    if spec.claims is not None:
        return dict(spec.claims)
    return {w.key: claims.claim(spec.placement_policies, w).policy for w in spec.workloads}


def without_cost(spec: Spec) -> Spec:
    """`spec` with the Cost scorer's weight set to 0."""
    weights = {**spec.config.plugin_weights, "Cost": 0.0}
    config = dataclasses.replace(spec.config, plugin_weights=MappingProxyType(weights))
    return dataclasses.replace(spec, config=config)


class Karmada:
    """Rewrites a spec's policies as Karmada PropagationPolicies, per cluster set."""

    def __init__(self, spec: Spec, *, static: bool) -> None:
        self.static = static
        self.claims = claimed(spec)
        origin = spec.config.origin or Origin(path="dro.yaml", line=1)
        self.default = PlacementPolicy(
            ref=PolicyRef(kind="PropagationPolicy", namespace=None, name="default-placement"),
            origin=origin,
            api_version=KARMADA_API,
            namespaced=False,
            selectors=(),
            placement=spec.config.default_placement,
        )
        self._memo: dict[tuple[str, ...], Mapping[ResourceKey, PlacementPolicy | None]] = {}

    def claims_for(
        self, clusters: Sequence[Cluster]
    ) -> Mapping[ResourceKey, PlacementPolicy | None]:
        """The rewritten claims for this step's clusters (static weights name each cluster)."""
        names = tuple(c.name for c in clusters)
        found = self._memo.get(names if self.static else ())
        if found is not None:
            return found
        weights = tuple(
            (ClusterAffinity(names=(c.name,)), max(1, round(c.capacity.get("cpu", 1.0))))
            for c in clusters
        )
        rewritten: dict[int, PlacementPolicy] = {}
        result: dict[ResourceKey, PlacementPolicy | None] = {}
        for key, policy in self.claims.items():
            source = policy or self.default
            done = rewritten.get(id(source))
            if done is None:
                done = rewritten[id(source)] = self._rewrite(source, weights)
            result[key] = done
        frozen = MappingProxyType(result)
        self._memo[names if self.static else ()] = frozen
        return frozen

    def _rewrite(
        self, policy: PlacementPolicy, weights: tuple[tuple[ClusterAffinity, int], ...]
    ) -> PlacementPolicy:
        placement = policy.placement
        replicas = placement.replicas
        if replicas.type is ReplicaType.DIVIDED:
            if self.static:
                replicas = ReplicaScheduling(
                    type=ReplicaType.DIVIDED,
                    division=Strategy.STATIC_WEIGHT,
                    static_weights=weights,
                )
            else:
                replicas = ReplicaScheduling(
                    type=ReplicaType.DIVIDED, division=Strategy.DYNAMIC_WEIGHT
                )
        rewritten: Placement = dataclasses.replace(
            placement,
            replicas=replicas,
            water_level_limit=MappingProxyType({}),
            max_moves=None,
            data=(),
            max_data_latency_ms=None,
        )
        return dataclasses.replace(
            policy,
            ref=PolicyRef(
                kind="PropagationPolicy", namespace=policy.ref.namespace, name=policy.ref.name
            ),
            api_version=KARMADA_API,
            placement=rewritten,
            dro_extensions=False,
        )
