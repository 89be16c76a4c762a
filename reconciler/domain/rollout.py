"""Progressive rollouts: a placement's waves (`placement.rollout`) and where a rollout stands
(a decision's `status.rollout`).

A change to a workload's template reaches its clusters wave by wave. `Rollout` is the setting
(from a policy, else dro.yaml's `spec.rollout`); `RolloutStatus` is the state each pass
records in the decision and the next pass advances (`reconciler.render.rollout`).

Called by 13 modules, among them `branch.rollouts`, `cli.report`, `commit.describe`,
`domain.decision`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from reconciler.domain.base import empty

PROMOTE_ANNOTATION = "multicluster.io/rollout-promote"
"""On a workload: the approval wave its rollout may now start (`approval: true`)."""
REST = "rest"
"""The name of the last wave: the placed clusters no named wave takes."""
REVISION_ANNOTATION = "multicluster.io/revision"
"""On a rendered object under a rollout: the template revision it carries, which observe
reads back so a wave counts as Healthy only with the new revision."""

# Phases of a rollout (`RolloutStatus.phase`).
COMPLETE = "Complete"
PROGRESSING = "Progressing"
AWAITING_APPROVAL = "AwaitingApproval"
PAUSED = "Paused"
ROLLED_BACK = "RolledBack"
PHASES = (PROGRESSING, AWAITING_APPROVAL, PAUSED, ROLLED_BACK, COMPLETE)

# States of one cluster in a rollout (`ClusterRollout.state`).
WAITING = "Waiting"
"""Not reached yet: it keeps the template in force."""
UPDATING = "Updating"
"""Given the new template, not yet observed Healthy with it."""
SOAKING = "Soaking"
"""Observed Healthy with the new template since `healthy_since`."""
UPDATED = "Updated"
"""Given the new template and done (soaked, or not observed: one wave per pass)."""
FAILED = "Failed"
"""Not Healthy within `healthTimeout`."""
ROLLED_BACK_CLUSTER = "RolledBack"
"""Given the previous template back after its wave failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Wave:
    """One named wave: the placed clusters it names or whose labels match, in order."""

    name: str
    clusters: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=empty)
    approval: bool = False
    """The wave waits for a source commit that sets `rollout-promote: <name>`."""

    def matches(self, cluster: str, labels: Mapping[str, str]) -> bool:
        """Whether the wave takes `cluster` (by name, else by every one of its labels)."""
        if self.clusters:
            return cluster in self.clusters
        return bool(self.labels) and all(labels.get(k) == v for k, v in self.labels.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollout:
    """`placement.rollout`: named `waves`, or waves of `max_clusters` (a count, or a percent
    of the placed clusters); durations in seconds."""

    waves: tuple[Wave, ...] = ()
    max_clusters: int | None = None
    max_percent: float | None = None
    soak: float = 600.0
    health_timeout: float = 900.0
    on_failure: Literal["Pause", "Rollback"] = "Pause"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterRollout:
    """One cluster's place in a rollout."""

    cluster: str
    wave: int
    """1-based wave number."""
    state: str
    revision: str
    """The template revision rendered there this pass."""
    commit: str
    """The source commit that template comes from."""
    from_revision: str
    """The revision it ran when this rollout started (what a rollback gives back)."""
    from_commit: str
    """The source commit of `from_revision`."""
    healthy_since: str | None = None
    """RFC 3339: since when it is observed Healthy with the new revision."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutStatus:
    """A decision's `status.rollout`: the revisions from → to, the wave and each cluster."""

    revision: str
    """The template revision of the source (the rollout's target)."""
    commit: str
    """The source commit that brought `revision`."""
    phase: str = COMPLETE
    previous: str | None = None
    """The revision the rollout started from (None when complete)."""
    previous_commit: str | None = None
    """The source commit of `previous`."""
    wave: int = 0
    """Waves released so far (the last released is in progress)."""
    waves: int = 0
    wave_names: tuple[str, ...] = ()
    started_at: str | None = None
    wave_started_at: str | None = None
    clusters: tuple[ClusterRollout, ...] = ()
    message: str | None = None
    promote_at_start: str | None = None
    """`rollout-promote` as the change that started the rollout left it: approving a wave
    takes a later commit that sets it (or `<wave>@<revision>`)."""

    @property
    def in_progress(self) -> bool:
        """Whether clusters still run another template than `revision` by this rollout."""
        return self.phase != COMPLETE

    def cluster(self, name: str) -> ClusterRollout | None:
        """The state of one cluster, or None when it is not in the rollout."""
        return next((c for c in self.clusters if c.cluster == name), None)

    def wave_clusters(self, number: int) -> tuple[str, ...]:
        """The clusters of wave `number` (1-based), sorted."""
        return tuple(c.cluster for c in self.clusters if c.wave == number)

    def wave_name(self, number: int) -> str:
        """The name of wave `number` (1-based)."""
        if 1 <= number <= len(self.wave_names):
            return self.wave_names[number - 1]
        return str(number)
