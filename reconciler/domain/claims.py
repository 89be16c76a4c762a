"""Which placement policy claims each workload, by one total order.

1. a namespaced policy over a cluster-wide one, whatever their priorities;
2. the higher `priority`;
3. the more specific selector: name, then labelSelector, then kind only.
Two policies still tied claim the workload ambiguously: `validate` reports both files, where
Karmada would silently pick by name. There is no memory of earlier claims.

Called by `render`, `schedule`, `simulate.policies`, `validate.defaulted` and
`validate.references`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reconciler.domain import PlacementPolicy, ResourceSelector, Workload, group_of


def selector_matches(selector: ResourceSelector, workload: Workload) -> bool:
    """True when one resource selector selects the workload."""
    if selector.kind != workload.key.kind:
        return False
    if group_of(selector.api_version) != workload.key.group:
        return False
    if selector.namespace is not None and selector.namespace != workload.key.namespace:
        return False
    if selector.name:
        return selector.name == workload.key.name
    if selector.label_selector is not None:
        return selector.label_selector.matches(workload.labels)
    return True


def best_specificity(selectors: Iterable[ResourceSelector], workload: Workload) -> int:
    """The specificity of the most specific selector that matches, 0 when none does."""
    return max((s.specificity for s in selectors if selector_matches(s, workload)), default=0)


def policy_selects(policy: PlacementPolicy, workload: Workload) -> bool:
    """A namespaced policy only selects in its own namespace; then any selector may match."""
    if policy.namespaced and policy.ref.namespace != workload.key.namespace:
        return False
    return best_specificity(policy.selectors, workload) > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """The policy that claims a workload, and any policy tied with it (an ambiguity)."""

    policy: PlacementPolicy | None
    tied_with: tuple[PlacementPolicy, ...] = ()


def rank(policy: PlacementPolicy, workload: Workload) -> tuple[int, int, int]:
    """The sort key of the claim order; larger claims first."""
    return (int(policy.namespaced), policy.priority, best_specificity(policy.selectors, workload))


def claim(policies: Iterable[PlacementPolicy], workload: Workload) -> Claim:
    """The winning policy for one workload (None: the default policy applies)."""
    matching = [p for p in policies if policy_selects(p, workload)]
    if not matching:
        return Claim(policy=None)
    ranked = sorted(matching, key=lambda p: p.origin.path)
    ranked.sort(key=lambda p: rank(p, workload), reverse=True)
    best = rank(ranked[0], workload)
    tied = tuple(p for p in ranked[1:] if rank(p, workload) == best)
    return Claim(policy=ranked[0], tied_with=tied)
