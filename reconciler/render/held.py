"""What a suspended dispatch or a rollout whose source commit is gone holds back: the paths
whose last rendered file stays (`render.tree`'s `kept` and `templates`).

Called by `render` and `render.shared`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reconciler.domain import Decision, ResourceKey, Spec
from reconciler.render import rollout

Kept = Callable[[str], bytes | None]
"""The last rendered file at an output-branch path, or None (`pipeline` reads it lazily)."""
Templates = Callable[[str, ResourceKey], Mapping[str, Any] | None]
"""A workload's manifest at a source commit, or None (`laststate` reads it lazily)."""


class Held:
    """Which rendered paths a suspended dispatch holds back, and what they keep."""

    def __init__(self, spec: Spec, kept: Kept | None, templates: Templates | None = None) -> None:
        self._templates = templates
        self._placements = {
            p.ref: p.placement
            for p in spec.placement_policies
            if p.placement.suspended_dispatching or p.placement.suspended_on
        }
        self._kept = kept
        self._read: dict[str, bytes | None] = {}

    def holds(self, decision: Decision) -> bool:
        """Whether a suspended dispatch may hold back changes to the decision's workload."""
        return decision.policy is not None and decision.policy in self._placements

    def suspended(self, decision: Decision, cluster: str) -> bool:
        """Whether changes to the decision's workload are held back from `cluster`."""
        placement = self._placements.get(decision.policy) if decision.policy else None
        return placement is not None and placement.dispatch_suspended(cluster)

    def gone(self, decision: Decision, cluster: str) -> bool:
        """Whether `cluster` keeps a rollout's template in force from a source commit that is
        gone: it keeps the file last rendered there, if any (`rolloutgone`), never the new
        template."""
        force = rollout.in_force(decision, cluster)
        return (
            force is not None
            and self._templates is not None
            and self._templates(force[1], decision.key) is None
        )

    def previous(self, path: str) -> bytes | None:
        """The file last rendered at `path`, read once."""
        if self._kept is None:
            return None
        if path not in self._read:
            self._read[path] = self._kept(path)
        return self._read[path]
