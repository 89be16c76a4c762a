"""Apply's outcomes as values: one `ObjectResult` per object a pass touched on a cluster, and
`ClusterSync`, the cluster's result, which aggregates them.

Each object gets a `ResultCode`, as gitops-engine's sync results do (Synced, SyncFailed,
Pruned, PruneSkipped), with the codes dro needs besides: an object already as rendered is
Unchanged, one that had drifted is DriftCorrected (DriftReported under the drift rule
Report), one dro may not take over is Refused, a
stale object left in place is Released (not dro's to delete) or Protected (deletion-protected),
and one whose prune a rejected neighbour holds back is Held.

Written by `apply`; read by `live.Members` (the prune gate), `audit` (the audit log),
`cli.report` (the apply table and details) and `service.metrics` (the counters). The lines
they print are made here, from the values, once.

Called by `audit`, `cli.report`, `live`, `live.apply` and `service.metrics`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from reconciler.domain import ObjectRef, ResourceKey
from reconciler.kube.inventory import Record

KindInNamespace = tuple[str, str, str]
"""(group, kind, namespace): the scope a rejected object holds prune back in."""


class ResultCode(enum.StrEnum):
    """What apply did with one object."""

    SYNCED = "Synced"
    """Applied: created, or updated because its manifest changed."""
    DRIFT_CORRECTED = "DriftCorrected"
    """Applied again: the live object had drifted from the manifest dro last applied."""
    DRIFT_REPORTED = "DriftReported"
    """Left as it is: the live object had drifted (or was deleted), and its drift rule is
    Report."""
    UNCHANGED = "Unchanged"
    """Already as rendered: nothing written."""
    SYNC_FAILED = "SyncFailed"
    """The API server rejected it (422 Invalid, 400, 403, 404 …)."""
    REFUSED = "Refused"
    """It exists, dro did not create it, and its takeover rule does not let dro adopt it."""
    PRUNED = "Pruned"
    """Deleted: stale, and dro created it."""
    RELEASED = "Released"
    """Stale and left in place: adopted, or it no longer carries dro's label."""
    PROTECTED = "Protected"
    """Stale and left in place: annotated `multicluster.io/deletion-protected: Always`."""
    HELD = "Held"
    """Stale, and not pruned yet: an object of its kind in its namespace was rejected."""

    @property
    def action(self) -> str | None:
        """The audit log's action for a code that wrote to the cluster, else None."""
        return _ACTIONS.get(self)

    @property
    def failed(self) -> bool:
        """Whether the object could not be applied (rejected or refused)."""
        return self in (ResultCode.SYNC_FAILED, ResultCode.REFUSED)


_ACTIONS = {
    ResultCode.SYNCED: "apply",
    ResultCode.DRIFT_CORRECTED: "apply",
    ResultCode.PRUNED: "prune",
}


@dataclass(frozen=True, slots=True)
class ObjectResult:
    """One object's outcome on one cluster."""

    key: ResourceKey
    code: ResultCode
    message: str = ""
    """Why, or what: the drifted fields, the server's or the takeover rule's refusal."""
    where: str = ""
    """`FILE:LINE` of the object's source manifest, when known (reported with a failure)."""

    @property
    def line(self) -> str:
        """The report's line: `FILE:LINE: why` for a failure, `Kind ns/name[: what]` else."""
        if self.code.failed:
            return f"{self.where}: {self.message}" if self.where else self.message
        return f"{self.key.brief}: {self.message}" if self.message else self.key.brief


@dataclass(slots=True)
class ClusterSync:
    """What one cluster's pass did: a result per object touched, and the cluster's failures.
    The counts and report lines are read from the results."""

    cluster: str
    reachable: bool = True
    results: list[ObjectResult] = field(default_factory=list)
    """In the order apply met the objects: applied stage by stage, then pruned."""
    failed: list[str] = field(default_factory=list)
    """Failures of the cluster itself: its later stages were not applied."""
    writes: int = 0
    """Requests that wrote to the cluster, the inventory's included."""
    held: dict[ObjectRef, Record] = field(default_factory=dict, repr=False)
    """The inventory as read."""
    stored: dict[ObjectRef, Record] = field(default_factory=dict, repr=False)
    """The inventory as it stands on the cluster now (after the intent was written)."""
    stale: tuple[ObjectRef, ...] = field(default=(), repr=False)
    """Inventory objects no longer rendered: what a prune would delete, in reverse order."""
    done: dict[ObjectRef, Record] = field(default_factory=dict, repr=False)
    """Objects applied (or already as rendered) this pass → their record."""
    refused: set[ResourceKey] = field(default_factory=set, repr=False)
    """Objects rejected or not adopted this pass."""
    holds: set[KindInNamespace] = field(default_factory=set, repr=False)
    """Where a rejected object holds prune back."""

    def add(self, result: ObjectResult) -> None:
        """Record one object's outcome; a failed one holds back its kind's prune here."""
        self.results.append(result)
        if result.code.failed:
            self.refused.add(result.key)
            self.holds.add(scope(result.key))

    def lines(self, *codes: ResultCode) -> list[str]:
        """The report lines of the results with one of `codes`, in order."""
        return [r.line for r in self.results if r.code in codes]

    def count(self, *codes: ResultCode) -> int:
        """How many results have one of `codes`."""
        return sum(1 for r in self.results if r.code in codes)

    @property
    def applied(self) -> int:
        """Objects written this pass (created, updated or drift corrected)."""
        return self.count(ResultCode.SYNCED, ResultCode.DRIFT_CORRECTED)

    @property
    def unchanged(self) -> int:
        """Objects already as rendered."""
        return self.count(ResultCode.UNCHANGED)

    @property
    def pruned(self) -> int:
        """Stale objects deleted."""
        return self.count(ResultCode.PRUNED)

    @property
    def drifted(self) -> list[str]:
        """`Kind ns/name: fields` for each object that had drifted, corrected or reported."""
        return self.lines(ResultCode.DRIFT_CORRECTED, ResultCode.DRIFT_REPORTED)

    @property
    def corrected(self) -> list[str]:
        """`Kind ns/name: fields` for each object whose drift was corrected."""
        return self.lines(ResultCode.DRIFT_CORRECTED)

    @property
    def reported(self) -> list[str]:
        """`Kind ns/name: fields` for each drifted object left as it is (drift rule Report)."""
        return self.lines(ResultCode.DRIFT_REPORTED)

    @property
    def rejected(self) -> list[str]:
        """`FILE:LINE: cluster …: why` for each object the API rejected or dro would not
        adopt."""
        return self.lines(ResultCode.SYNC_FAILED, ResultCode.REFUSED)

    @property
    def protected(self) -> list[str]:
        """Stale objects spared because they are deletion-protected."""
        return self.lines(ResultCode.PROTECTED)

    @property
    def released(self) -> list[str]:
        """Stale objects left in place because dro did not create them, and why."""
        return self.lines(ResultCode.RELEASED)

    @property
    def written(self) -> list[ObjectResult]:
        """The results that wrote an object (applied or pruned), for the audit log."""
        return [r for r in self.results if r.code.action is not None]

    @property
    def clean(self) -> bool:
        """Reached, and the cluster itself did not fail (objects may have been rejected)."""
        return self.reachable and not self.failed

    @property
    def ok(self) -> bool:
        """Reached, and nothing failed or was rejected."""
        return self.clean and not self.refused


def scope(key: ResourceKey) -> KindInNamespace:
    """Where a rejected object holds prune back: its group, kind and namespace."""
    return (key.group, key.kind, key.namespace)
