"""Plan diff: what merging a pull request changes, from the plans of its two sides.

`dro plan` schedules and renders the base and the head of a review offline, each as a `Side`,
and `compare` turns them into a `PlanDiff`: the replicas per cluster of every workload whose
placement changed and why, the workloads that became (un)schedulable, the clusters added or
removed, the water level each cluster is left at, and a unified diff of every rendered
manifest that changed, per cluster. Secret values never reach the diff (`secrets`).

This module is pure: `pipeline.plan_review` builds the sides, `planreport` prints the diff.

Called by `review`, `review.chart`, `review.planreport` and `review.planterminal`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler.branch import overview, paths
from reconciler.branch.comparison import WorkloadChange, workload_changes
from reconciler.domain import Decision
from reconciler.errors import Problem, Severity
from reconciler.kube import secrets


def _empty_levels() -> Mapping[str, Mapping[str, float]]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    """One side of a review: what its ref plans, or the problems that stopped it."""

    ref: str
    commit: str | None = None
    decisions: tuple[Decision, ...] = ()
    tree: Mapping[str, bytes] = field(default_factory=dict)
    clusters: tuple[str, ...] = ()
    water_levels: Mapping[str, Mapping[str, float]] = field(default_factory=_empty_levels)
    problems: tuple[Problem, ...] = ()
    note: str = ""
    """Said about this side in the report, e.g. what it was replaced with."""
    water_level_limits: Mapping[str, float] = field(default_factory=dict)
    """Resource → the default water-level limit of `dro.yaml` (a policy may set its own)."""
    forecasts: Mapping[str, Mapping[str, float]] = field(default_factory=_empty_levels)
    """Cluster → resource → forecast water level over the horizon (prediction on; empty
    otherwise): what the pass scheduled with where it is above the level now."""
    follow_ups: tuple[str, ...] = ()
    """What later passes will still do after this side's pass: moves in flight, stateful
    moves' phases, clusters still filling (`followups`)."""

    @property
    def valid(self) -> bool:
        """False when validation found errors (warnings do not count)."""
        return not any(p.severity is Severity.ERROR for p in self.problems)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """One rendered manifest that differs: its path on the output branch and its unified diff."""

    path: str
    """`clusters/<cluster>/<namespace>/<kind>-<name>.yaml`, as on the output branch."""
    status: str
    """`added`, `removed` or `modified`."""
    diff: str
    secret_keys: tuple[str, ...] = ()
    """For a Secret: the names of the keys whose values changed (the values never show)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterChange:
    """One cluster's changed manifests."""

    cluster: str
    files: tuple[FileChange, ...]

    def count(self, status: str) -> int:
        """How many files have `status`."""
        return sum(1 for f in self.files if f.status == status)


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelChange:
    """A cluster's water levels per resource on both sides (None: not on that side)."""

    cluster: str
    before: Mapping[str, float] | None
    after: Mapping[str, float] | None
    forecast: Mapping[str, float] | None = None
    """The head's forecast water level (prediction on)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanDiff:
    """Everything `dro plan` reports about a review."""

    base: Side
    head: Side
    workloads: tuple[WorkloadChange, ...] = ()
    clusters_added: tuple[str, ...] = ()
    clusters_removed: tuple[str, ...] = ()
    manifests: tuple[ClusterChange, ...] = ()
    levels: tuple[LevelChange, ...] = ()
    notes: tuple[str, ...] = ()
    """What the plan could not include, said before everything else: uncommitted changes in
    the work tree, a missing output branch (`review`)."""

    @property
    def differs(self) -> bool:
        """Whether merging the head changes placements, clusters or rendered manifests."""
        return bool(self.workloads or self.clusters_added or self.clusters_removed) or bool(
            self.manifests
        )

    @property
    def cost(self) -> tuple[float, float]:
        """The whole placement's cost per hour on each side (priced clusters only)."""
        return overview.total_cost(self.base.decisions)[0], overview.total_cost(
            self.head.decisions
        )[0]

    def counts(self) -> dict[str, int]:
        """The summary figures, in the order the report shows them."""
        return {
            "workloads changed": len(self.workloads),
            "replicas moved": sum(w.moved for w in self.workloads),
            "became unschedulable": sum(
                w.schedulability == "unschedulable" for w in self.workloads
            ),
            "became schedulable": sum(w.schedulability == "schedulable" for w in self.workloads),
            "clusters added": len(self.clusters_added),
            "clusters removed": len(self.clusters_removed),
            "manifests changed": sum(len(c.files) for c in self.manifests),
            "clusters with changed manifests": len(self.manifests),
        }


def compare(base: Side, head: Side) -> PlanDiff:
    """The differences between the plans of `base` and `head`; only the head's problems
    when it is invalid (there is nothing to compare then)."""
    if not head.valid:
        return PlanDiff(base=base, head=head)
    gone = set(base.clusters) - set(head.clusters)
    return PlanDiff(
        base=base,
        head=head,
        workloads=workload_changes(base.decisions, head.decisions, gone=gone),
        clusters_added=tuple(sorted(set(head.clusters) - set(base.clusters))),
        clusters_removed=tuple(sorted(set(base.clusters) - set(head.clusters))),
        manifests=_manifests(base.tree, head.tree),
        levels=_levels(base, head),
    )


# --- manifests --------------------------------------------------------------------------------


def _cluster_files(tree: Mapping[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Cluster → path under it → bytes, for the rendered manifests of a tree (the kustomization
    only lists the others, and is left out)."""
    clusters: dict[str, dict[str, bytes]] = {}
    for path, data in tree.items():
        placed = paths.cluster_file(path)
        if placed is not None and not placed.is_kustomization:
            clusters.setdefault(placed.cluster, {})[placed.relative] = data
    return clusters


def _manifests(base: Mapping[str, bytes], head: Mapping[str, bytes]) -> tuple[ClusterChange, ...]:
    before, after = _cluster_files(base), _cluster_files(head)
    changes = []
    for cluster in sorted(before.keys() | after.keys()):
        old, new = before.get(cluster, {}), after.get(cluster, {})
        files = [
            _file(cluster, path, old.get(path), new.get(path))
            for path in sorted(old.keys() | new.keys())
            if old.get(path) != new.get(path)
        ]
        if files:
            changes.append(ClusterChange(cluster=cluster, files=tuple(files)))
    return tuple(changes)


def _file(cluster: str, path: str, old: bytes | None, new: bytes | None) -> FileChange:
    status = "added" if old is None else "removed" if new is None else "modified"
    label = paths.ClusterFile(cluster, path).path
    shown = secrets.redact_pair(label, old, new)
    lines = difflib.unified_diff(
        shown.before.splitlines(keepends=True),
        shown.after.splitlines(keepends=True),
        fromfile=f"a/{label}" if old is not None else "/dev/null",
        tofile=f"b/{label}" if new is not None else "/dev/null",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return FileChange(path=label, status=status, diff=text, secret_keys=shown.changed_keys)


# --- water levels -----------------------------------------------------------------------------


def _levels(base: Side, head: Side) -> tuple[LevelChange, ...]:
    names = sorted(set(base.clusters) | set(head.clusters))
    return tuple(
        LevelChange(
            cluster=name,
            before=base.water_levels.get(name, {}) if name in base.clusters else None,
            after=head.water_levels.get(name, {}) if name in head.clusters else None,
            forecast=head.forecasts.get(name),
        )
        for name in names
    )
