"""What changed between two sets of decisions: per workload, its placement and why.

`dro plan` compares the decisions of a pull request's base and head (`review.plandiff`), and
every pass compares its decisions with the last pass's to write the output branch's commit
message (`commit.describe`): both read placements through this one comparison. Pure.

Called by `commit`, `commit.describe`, `review.plandiff`, `review.planreport` and
`review.planterminal`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from reconciler.domain import Decision, Move, ResourceKey, TriggerCode

NEW = "new in the head"
"""The trigger of a workload that only the head places."""
REMOVED = "removed in the head"
"""The trigger of a workload that only the base places."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadChange:
    """One workload whose placement, schedulability or policy differs between the sides."""

    workload: str
    before: Mapping[str, int | None]
    """Cluster → target replicas that run on the base side (None: a kind without replicas):
    the division's count, or what an override of `spec.replicas` makes run instead."""
    after: Mapping[str, int | None]
    divided_before: Mapping[str, int] = field(default_factory=dict)
    """Cluster → the division's count, where an override makes another count run."""
    divided_after: Mapping[str, int] = field(default_factory=dict)
    retiring_before: Mapping[str, int] = field(default_factory=dict)
    retiring_after: Mapping[str, int] = field(default_factory=dict)
    move_before: str | None = None
    """A stateful move in flight on the base side: `us-east-1 → eu-west-1, Syncing`."""
    move_after: str | None = None
    moved: int = 0
    """Replicas that leave one cluster for another (the smaller of removed and added)."""
    unschedulable_before: str | None = None
    unschedulable_after: str | None = None
    pending_before: int = 0
    """Replicas that fit nowhere on the base side (a partial placement)."""
    pending_after: int = 0
    over_limit_before: Mapping[str, int] = field(default_factory=dict)
    """Cluster → replicas past the water-level limit (within the ceiling), base side."""
    over_limit_after: Mapping[str, int] = field(default_factory=dict)
    policy_before: str | None = None
    policy_after: str | None = None
    triggers: tuple[str, ...] = ()
    """Every reason the placement changed, in a fixed order (`_triggers`)."""
    scaled: bool = False
    """The division's total changed, or the head's trigger says its replicas changed."""
    moves: tuple[Move, ...] = ()
    """The moves the head's pass makes (re-balancing, filling, drain, failover)."""
    status: str = "changed"
    """`changed`, `added` (only in head) or `removed` (only in base)."""
    cost_before: float | None = None
    """What the base side's replicas cost per hour (`Decision.cost_per_hour`)."""
    cost_after: float | None = None

    @property
    def why(self) -> str:
        """Every trigger, in one line."""
        return "; ".join(self.triggers)

    def deltas(self) -> list[str]:
        """Per cluster, in name order, what changes: `eu-west-1 +2`/`us-east-1 −1` replicas,
        or `joins`/`leaves` for a kind without replicas."""
        deltas = []
        for cluster in sorted({*self.before, *self.after}):
            before, after = self.before.get(cluster, 0), self.after.get(cluster, 0)
            if cluster not in self.after:
                deltas.append(f"{cluster} leaves" if before is None else f"{cluster} −{before}")
            elif cluster not in self.before:
                deltas.append(f"{cluster} joins" if after is None else f"{cluster} +{after}")
            elif before is not None and after is not None and after != before:
                sign = "+" if after > before else "−"
                deltas.append(f"{cluster} {sign}{abs(after - before)}")
        return deltas

    @property
    def divided_totals(self) -> tuple[int | None, int | None]:
        """The division's replicas summed on each side, overrides aside: what a scale of
        the workload changes (None for a kind without replicas)."""
        return (
            _total({**self.before, **self.divided_before}),
            _total({**self.after, **self.divided_after}),
        )

    @property
    def replicas_before(self) -> int | None:
        """The target replicas on the base side, summed; None for a kind without replicas."""
        return _total(self.before)

    @property
    def replicas_after(self) -> int | None:
        """The target replicas on the head side, summed; None for a kind without replicas."""
        return _total(self.after)

    @property
    def schedulability(self) -> str | None:
        """`unschedulable` or `schedulable` when that changed; None otherwise."""
        if self.status != "changed":
            return None
        if self.unschedulable_after and not self.unschedulable_before:
            return "unschedulable"
        if self.unschedulable_before and not self.unschedulable_after:
            return "schedulable"
        return None


# --- placements -------------------------------------------------------------------------------


def workload_changes(
    base: Sequence[Decision],
    head: Sequence[Decision],
    *,
    gone: Set[str] = frozenset(),
    compared: Compared | None = None,
) -> tuple[WorkloadChange, ...]:
    """Every workload whose placement, retiring replicas, stateful move, schedulability or
    policy differs between the decisions `base` and `head`, in (namespace, kind, name) order;
    `gone` are the clusters whose files the head removed. `dro plan` and the output branch's
    commit messages (`commit.describe`) both read placements through this one comparison.
    `compared` keeps each pair of decisions' comparison for the next call (`Compared`)."""
    if compared is not None:
        return compared.changes(base, head, gone)
    return _sorted(_compare(_by_key(base, head), _by_key(head, base), gone))


def _by_key(side: Sequence[Decision], other: Sequence[Decision]) -> dict[ResourceKey, Decision]:
    """Key → decision of one side; a decision that is on both sides as one object is no
    change, so it is left out."""
    on_other = {id(d) for d in other}
    return {d.key: d for d in side if id(d) not in on_other}


def _compare(
    before: Mapping[ResourceKey, Decision],
    after: Mapping[ResourceKey, Decision],
    gone: Set[str],
    keys: Iterable[ResourceKey] | None = None,
) -> dict[ResourceKey, WorkloadChange]:
    """Key → change of `keys` (default: every key of either side); a decision that is one
    object on both sides is no change."""
    changes = {}
    for key in before.keys() | after.keys() if keys is None else keys:
        one, other = before.get(key), after.get(key)
        if one is other:
            continue
        change = _workload(one, other, gone)
        if change is not None:
            changes[key] = change
    return changes


def _sorted(changes: Mapping[ResourceKey, WorkloadChange]) -> tuple[WorkloadChange, ...]:
    """The changes in (namespace, kind, name) order."""
    return tuple(changes[key] for key in sorted(changes, key=lambda key: key.sort_key))


class Compared:
    """`workload_changes` kept from call to call: `dro run` compares the output branch's
    decisions (one object per blob, `branch.readback`) with the pass's (the scheduler's own
    objects where a turn was reused, `schedule.reuse`), so from one pass to the next nearly
    every decision on each side is the same object as before.

    A call finds the decisions of each side that are not the last call's objects (identity
    checks, no comparison of fields) and compares again only the workloads they name; every
    other workload's change is the last call's. When the removed clusters differ, or a side
    names a workload twice (or on the first call), every workload is compared."""

    def __init__(self) -> None:
        self._gone: frozenset[str] | None = None
        """The removed clusters of the last call; None: the next call compares everything."""
        self._ids: tuple[dict[int, Decision], dict[int, Decision]] = ({}, {})
        """Each side's decisions of the last call by identity (kept, so ids are not reused)."""
        self._maps: tuple[dict[ResourceKey, Decision], dict[ResourceKey, Decision]] = ({}, {})
        self._changes: dict[ResourceKey, WorkloadChange] = {}

    def changes(
        self, base: Sequence[Decision], head: Sequence[Decision], gone: Set[str]
    ) -> tuple[WorkloadChange, ...]:
        """`workload_changes(base, head, gone=gone)`, comparing only what changed since the
        last call."""
        sides, removed = (tuple(base), tuple(head)), frozenset(gone)
        touched = self._touched(sides) if removed == self._gone else None
        if touched is None:
            before, after = _by_key(*sides), _by_key(sides[1], sides[0])
            self._changes = _compare(before, after, removed)
            self._maps = ({d.key: d for d in sides[0]}, {d.key: d for d in sides[1]})
            unique = all(len(m) == len(s) for m, s in zip(self._maps, sides, strict=True))
            self._gone = removed if unique else None
            self._ids = ({id(d): d for d in sides[0]}, {id(d): d for d in sides[1]})
        else:
            for key in touched:
                self._changes.pop(key, None)
            self._changes.update(_compare(*self._maps, removed, touched))
        return _sorted(self._changes)

    def _touched(
        self, sides: tuple[tuple[Decision, ...], tuple[Decision, ...]]
    ) -> set[ResourceKey] | None:
        """The keys whose decision on either side is not the last call's object, with each
        side's map brought up to date; None when a side names a key twice."""
        touched: set[ResourceKey] = set()
        objects = ({id(d): d for d in sides[0]}, {id(d): d for d in sides[1]})
        for now, before, by_key in zip(objects, self._ids, self._maps, strict=True):
            for gone in before.keys() - now.keys():
                old = before[gone]
                if by_key.get(old.key) is old:
                    del by_key[old.key]
                touched.add(old.key)
            for added in now.keys() - before.keys():
                new = now[added]
                if new.key in by_key:
                    return None
                by_key[new.key] = new
                touched.add(new.key)
        self._ids = objects
        return touched


def _workload(
    before: Decision | None, after: Decision | None, gone: Set[str]
) -> WorkloadChange | None:
    shown = after or before
    assert shown is not None
    placed_before, placed_after = _targets(before), _targets(after)
    divided = (_divided(before), _divided(after))
    retiring_before, retiring_after = _retiring(before), _retiring(after)
    unschedulable = (_unschedulable(before), _unschedulable(after))
    policies = (_policy(before), _policy(after))
    moves = (_move(before), _move(after))
    pending = (before.pending if before else 0, after.pending if after else 0)
    over = (_over_limit(before), _over_limit(after))
    if (
        pending[0] == pending[1]
        and over[0] == over[1]
        and placed_before == placed_after
        and divided[0] == divided[1]
        and retiring_before == retiring_after
        and moves[0] == moves[1]
        and bool(unschedulable[0]) == bool(unschedulable[1])  # a reworded reason is no change
        and policies[0] == policies[1]
    ):
        return None
    return WorkloadChange(
        workload=str(shown.key),
        before=placed_before,
        after=placed_after,
        divided_before=divided[0],
        divided_after=divided[1],
        retiring_before=retiring_before,
        retiring_after=retiring_after,
        move_before=moves[0],
        move_after=moves[1],
        moved=_moved(placed_before, placed_after),
        unschedulable_before=unschedulable[0],
        unschedulable_after=unschedulable[1],
        pending_before=pending[0],
        pending_after=pending[1],
        over_limit_before=over[0],
        over_limit_after=over[1],
        policy_before=policies[0],
        policy_after=policies[1],
        triggers=_triggers(before, after, policies, gone),
        scaled=_is_scaled(before, after),
        moves=_new_moves(before, after),
        status="added" if before is None else "removed" if after is None else "changed",
        cost_before=None if before is None else before.cost_per_hour,
        cost_after=None if after is None else after.cost_per_hour,
    )


def _over_limit(decision: Decision | None) -> dict[str, int]:
    """Cluster → the replicas past the water-level limit there."""
    return {p.cluster: p.replicas or 0 for p in decision.over_limit} if decision else {}


def _targets(decision: Decision | None) -> dict[str, int | None]:
    """Cluster → the target replicas that run there (an override's count where one applies)."""
    if decision is None:
        return {}
    runs = decision.effective
    return {
        p.cluster: p.replicas if p.replicas is None else runs.get(p.cluster, p.replicas)
        for p in decision.clusters
    }


def _division(decision: Decision) -> dict[str, int | None]:
    """Cluster → the division's count, overrides aside: what a scale changes."""
    return {p.cluster: p.replicas for p in decision.clusters}


def _divided(decision: Decision | None) -> dict[str, int]:
    """Cluster → the division's count, where an override makes another count run."""
    if decision is None:
        return {}
    return {
        p.cluster: p.replicas
        for p in decision.clusters
        if p.replicas is not None and p.cluster in decision.effective
    }


def _retiring(decision: Decision | None) -> dict[str, int]:
    return {} if decision is None else {p.cluster: p.replicas or 0 for p in decision.retiring}


def _move(decision: Decision | None) -> str | None:
    entry = decision.moving if decision is not None else None
    if entry is None or decision is None:
        return None
    target = decision.clusters[0].cluster if decision.clusters else "?"
    return f"{entry.cluster} → {target}, {entry.phase}"


def _unschedulable(decision: Decision | None) -> str | None:
    return None if decision is None else decision.unschedulable


def _policy(decision: Decision | None) -> str | None:
    return str(decision.policy) if decision is not None and decision.policy else None


def _moved(before: Mapping[str, int | None], after: Mapping[str, int | None]) -> int:
    removed = added = 0
    for cluster in before.keys() | after.keys():
        delta = (after.get(cluster) or 0) - (before.get(cluster) or 0)
        removed += max(0, -delta)
        added += max(0, delta)
    return min(removed, added)


def _total(placed: Mapping[str, int | None]) -> int | None:
    counts = [n for n in placed.values() if n is not None]
    return sum(counts) if counts or not placed else None


def _scaled(before: Decision, after: Decision) -> list[str]:
    """`replicas changed from 4 to 6` for a divided workload whose total changed (a
    Duplicated one has a copy per cluster: its sum follows its clusters, not a scale)."""
    if not after.diagnosis.strategy.divides or not before.clusters or not after.clusters:
        return []
    totals = _total(_division(before)), _total(_division(after))
    if totals[0] is None or totals[1] is None or totals[0] == totals[1]:
        return []
    return [f"replicas changed from {totals[0]} to {totals[1]}"]


def _is_scaled(before: Decision | None, after: Decision | None) -> bool:
    """Whether a scale is among the reasons both sides place the workload differently."""
    if before is None or after is None:
        return False
    return bool(_scaled(before, after)) or after.diagnosis.trigger.code is TriggerCode.SCALED


def _retired(before: Decision, after: Decision) -> list[str]:
    """`old copies on us-east-1 retired` where the retiring replicas went down: the new copies
    of a move were seen Healthy (or the cluster is not observed, where one pass suffices)."""
    kept = {p.cluster: p.replicas or 0 for p in after.retiring}
    done = sorted(p.cluster for p in before.retiring if kept.get(p.cluster, 0) < (p.replicas or 0))
    if not done:
        return []
    return [f"old copies on {', '.join(done)} retired: the move's new copies are up"]


def _new_moves(before: Decision | None, after: Decision | None) -> tuple[Move, ...]:
    """The head's moves that the base did not already hold (older ones are in cooldown)."""
    if after is None:
        return ()
    known = set(before.moves) if before is not None else set()
    return tuple(m for m in after.moves if m not in known)


def _triggers(
    before: Decision | None,
    after: Decision | None,
    policies: tuple[str | None, str | None],
    gone: Set[str],
) -> tuple[str, ...]:
    """Every reason the placement changed: the scheduler records only the first trigger of
    a division (and re-balancing records its own), so the ones it leaves out are read from
    the two decisions: a policy or placement change, a scale, each cluster removed, each
    move, an unschedulable reason. Each once, in that order."""
    if before is None:
        return (NEW,)
    if after is None:
        return (REMOVED,)
    found: list[str] = []
    if policies[0] != policies[1]:
        found.append(
            f"policy {policies[0] or '(default placement)'} → "
            f"{policies[1] or '(default placement)'}"
        )
    elif before.placement_digest and before.placement_digest != after.placement_digest:
        found.append("the placement changed")
    found += _scaled(before, after)
    found += [f"cluster {p.cluster} is gone" for p in before.clusters if p.cluster in gone]
    found += _retired(before, after)
    if after.diagnosis.trigger.code is not TriggerCode.NONE:
        found.append(after.diagnosis.trigger.text)
    found += sorted({m.reason.text for m in _new_moves(before, after)})
    if after.unschedulable:
        found.append(after.unschedulable)
    unique: list[str] = []
    for reason in found:  # the scheduler's own wording may hold a derived one, and say more
        if any(reason in kept for kept in unique):
            continue
        held = [i for i, kept in enumerate(unique) if kept in reason]
        if held:
            unique[held[0]] = reason
            unique = [kept for i, kept in enumerate(unique) if i not in held[1:]]
        else:
            unique.append(reason)
    return tuple(unique)
