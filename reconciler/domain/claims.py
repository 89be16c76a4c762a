"""Which placement policy claims each workload, by one total order.

1. a namespaced policy over a cluster-wide one, whatever their priorities;
2. the higher `priority`;
3. the more specific selector: name, then labelSelector, then kind only.
Two policies still tied claim the workload ambiguously: `validate` reports both files, where
Karmada would silently pick by name. There is no memory of earlier claims.

`Claims` answers the same question for many workloads at once: it indexes the policies by
what a workload must have for one of their selectors to match it (its group and kind, and a
label every selector requires), so that each workload is ranked against the few policies that
could select it rather than against all of them. `Claims(policies).claim(w)` is
`claim(policies, w)`.

Called by `render`, `schedule`, `simulate.policies`, `validate.defaulted`, `validate.memo` and
`validate.references`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


_Need = tuple[str, str]
"""(group, kind): what every selector needs of a workload first."""


class Claims:
    """`claim` for many workloads over one list of policies, by an index of the policies.

    A selector matches only its own group and kind; one without a name whose labelSelector
    has `matchLabels` also needs each of those labels. A policy is listed under (group, kind)
    and, when every such selector of it needs a label, under one needed label per selector,
    else among those always ranked. A workload is then ranked against the policies listed
    under its group and kind that are always ranked or listed under a label it has: every
    other policy cannot select it. Candidates keep the list's order, so ties break as in
    `claim`."""

    def __init__(self, policies: Sequence[PlacementPolicy]) -> None:
        self._always: dict[_Need, list[int]] = {}
        self._by_label: dict[_Need, dict[tuple[str, str], list[int]]] = {}
        self._policies = tuple(policies)
        for index, policy in enumerate(self._policies):
            self._add(index, policy)

    def _add(self, index: int, policy: PlacementPolicy) -> None:
        per_need: dict[_Need, list[ResourceSelector]] = {}
        for selector in policy.selectors:
            need = (group_of(selector.api_version), selector.kind)
            per_need.setdefault(need, []).append(selector)
        for need, selectors in per_need.items():
            labels = [_needed_label(s) for s in selectors]
            if any(label is None for label in labels):
                self._always.setdefault(need, []).append(index)
                continue
            by_label = self._by_label.setdefault(need, {})
            for label in dict.fromkeys(labels):
                assert label is not None
                by_label.setdefault(label, []).append(index)

    def candidates(self, workload: Workload) -> list[PlacementPolicy]:
        """The policies that could select `workload`, in the order they were given."""
        need = (workload.key.group, workload.key.kind)
        found = set(self._always.get(need, ()))
        by_label = self._by_label.get(need)
        if by_label:
            for label in workload.labels.items():
                found.update(by_label.get(label, ()))
        return [self._policies[index] for index in sorted(found)]

    def claim(self, workload: Workload) -> Claim:
        """`claim(policies, workload)`."""
        return claim(self.candidates(workload), workload)


def _needed_label(selector: ResourceSelector) -> tuple[str, str] | None:
    """A label the selector requires of every workload it matches, or None when it requires
    none (it selects by name, or has no matchLabels)."""
    if selector.name or selector.label_selector is None:
        return None
    required = selector.label_selector.match_labels
    if not required:
        return None
    key = min(required)
    return (key, required[key])
