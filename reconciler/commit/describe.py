"""Commit messages for the output branch: what a pass changed, and why.

A commit on `dro/rendered` reads like one a person would write: a subject under
`SUBJECT_LIMIT` characters naming the biggest change (`scale shop/web 4 → 6`, `filling
eu-central-1: moved 2 shop/checkout replicas`, `place shop/cart on eu-west-1, us-east-1`,
`status: water levels of 3 clusters`) and how many more there are, then a body with one entry
per workload change and its triggers. `commit` appends the trailers.

The placements are compared by `comparison.workload_changes`, the comparison `dro plan` shows, so
a commit and the review of the same change say the same thing. The biggest change is the one
that touches the most replicas, a workload that became unschedulable first; ties go to the
(namespace, kind, name) order. This module is pure: the same decisions and files give the same
message, byte for byte, so a commit rebuilt after a lost push race is the same commit.

Called by `pipeline.publishing`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reconciler.branch import comparison, outputtree, paths, readback
from reconciler.domain import Decision, Move, MoveCode
from reconciler.domain import rollout as r

SUBJECT_LIMIT = 72
BODY_ENTRIES = 200
"""Workload changes listed in the body; the rest are counted."""
LISTED_CLUSTERS = 3
"""Clusters named in a subject's `place … on …`; more are counted."""


def compose(
    *,
    before: Sequence[Decision],
    after: Sequence[Decision],
    state: Mapping[str, bytes],
    tree: Mapping[str, bytes],
    source: str | None,
    compared: comparison.Compared | None = None,
) -> str:
    """The subject, a blank line and the body (no trailers), comparing the output branch's
    decisions and status files (`before`, `state`) with the pass's (`after`, `tree`);
    `compared` keeps the comparisons for the next pass of the process."""
    changes = comparison.workload_changes(before, after, compared=compared)
    first = not before
    differ = _differ(state, tree)
    levels = _changed(differ, paths.STATUS_CLUSTERS)
    health = _changed(differ, paths.STATUS_WORKLOADS)
    drift = _changed(differ, paths.STATUS_DRIFT)
    status = _status(levels, health, drift)
    rollouts = rollout_events(before, after)
    if rollouts and not first:
        more = len(rollouts) - 1 + len(changes)
        subject = rollouts[0] + (f" (and {more} more)" if more else "")
    elif first and changes:
        clusters = {c for change in changes for c in change.after}
        subject = (
            f"first placement: {len(changes)} {_plural(len(changes), 'workload')} on "
            f"{len(clusters)} {_plural(len(clusters), 'cluster')}"
        )
    elif changes:
        ranked = sorted(changes, key=weight, reverse=True)  # stable: ties keep key order
        subject = _subject(ranked[0], changes)
    elif status:
        subject = f"status: {status}"
    else:
        shown = f"source {source[:12]}" if source else "a local source"
        subject = f"update manifests from {shown}: placements unchanged"
    body = [f"- {event}" for event in rollouts[1:]] if not first else []
    body += [_entry(change, first) for change in changes[:BODY_ENTRIES]]
    if len(changes) > BODY_ENTRIES:
        body.append(f"- … and {len(changes) - BODY_ENTRIES} more workload changes")
    if levels:
        body.append(_listed("water levels", levels))
    if health:
        body.append(_listed("workload health", health))
    if drift:
        body.append(_listed("drift", drift))
    return subject + ("\n\n" + "\n".join(body) if body else "") + "\n"


def rollout_events(before: Sequence[Decision], after: Sequence[Decision]) -> list[str]:
    """A line per rollout this pass moved on: the wave released (`rollout shop/web 2/4:
    eu-west-1, eu-west-2`), a wave waiting for approval, failed, or rolled back, and a
    rollout completed; in workload order."""
    old = {d.key: d.rollout for d in before if d.rollout is not None}
    moved = [d for d in after if d.rollout is not None and d.key in old]
    events = []
    for decision in sorted(moved, key=lambda d: d.key.sort_key):
        now, then = decision.rollout, old[decision.key]
        if now is None or now is then or now == then:
            continue
        name = label(str(decision.key))
        same = then.revision == now.revision
        if not now.in_progress:
            if then.in_progress or not same:
                events.append(f"rollout {name} complete: revision {now.revision}")
        elif now.phase != then.phase or now.wave != then.wave or not same:
            events.append(_rollout_event(name, now))
    return events


def _rollout_event(name: str, status: r.RolloutStatus) -> str:
    wave = f"{status.wave}/{status.waves}"
    if status.phase == r.AWAITING_APPROVAL:
        waiting = status.wave_name(status.wave + 1)
        return f"rollout {name}: wave {waiting} waits for approval"
    if status.phase == r.PAUSED:
        return f"rollout {name} {wave} paused: wave {status.wave_name(status.wave)} not Healthy"
    if status.phase == r.ROLLED_BACK:
        return f"rollout {name} {wave} rolled back: {_few(status.wave_clusters(status.wave))}"
    return f"rollout {name} {wave}: {_few(status.wave_clusters(status.wave))}"


def _few(names: Sequence[str]) -> str:
    """Up to `LISTED_CLUSTERS` names, and how many more."""
    shown = ", ".join(names[:LISTED_CLUSTERS])
    extra = len(names) - LISTED_CLUSTERS
    return shown + (f" and {extra} more" if extra > 0 else "")


def _subject(
    biggest: comparison.WorkloadChange, changes: Sequence[comparison.WorkloadChange]
) -> str:
    """The biggest change, or every move made for the same reason as its first one (`filling
    c: moved 3 replicas of 2 workloads`), and how many other workload changes there are."""
    covered = [biggest]
    if biggest.moves and not _phrase(biggest).startswith(("place", "remove", "move ")):
        reason = _move_reason(biggest.moves[0])
        covered = [c for c in changes if any(_move_reason(m) == reason for m in c.moves)]
    more = len(changes) - len(covered)
    tail = f" and {more} more" if more else ""
    for compact in (False, True):
        if len(covered) > 1:
            moved = sum(m.replicas for c in covered for m in c.moves if _move_reason(m) == reason)
            phrase = f"{reason}: moved {moved} replicas of {len(covered)} workloads"
        else:
            phrase = _phrase(biggest, compact=compact)
        subject = phrase + tail
        if len(subject) <= SUBJECT_LIMIT:
            return subject
    return subject[: SUBJECT_LIMIT - len(tail) - 1].rstrip() + "…" + tail


def weight(change: comparison.WorkloadChange) -> tuple[bool, int, int]:
    """How big a change is: whether it made the workload unschedulable, then the replicas it
    adds, removes or retires, then the copies of a kind without replicas (a ConfigMap that
    follows a Deployment counts after the Deployment) and a policy change."""
    replicas = copies = 0
    for cluster in {*change.before, *change.after}:
        old, new = change.before.get(cluster), change.after.get(cluster)
        if old is None and new is None:  # a kind without replicas, or absent on one side
            copies += (cluster in change.before) != (cluster in change.after)
        else:
            replicas += abs((new or 0) - (old or 0))
    replicas += abs(sum(change.retiring_before.values()) - sum(change.retiring_after.values()))
    copies += change.policy_before != change.policy_after
    return change.schedulability == "unschedulable", replicas, copies


def _phrase(change: comparison.WorkloadChange, *, compact: bool = False) -> str:
    """The change in a few words, as in a subject line; `compact` counts clusters."""
    name = label(change.workload)
    if change.status == "removed":
        return f"remove {name}"
    if change.pending_after and change.after and change.pending_after != change.pending_before:
        pending = change.pending_after  # a partial placement: what fits runs
        return f"place {name} on {_clusters(change.after, compact)}, {pending} pending"
    if change.schedulability == "unschedulable":
        return f"{name} became unschedulable"
    if change.status == "added" and change.unschedulable_after:
        return f"{name} is unschedulable"
    if change.status == "added" or change.schedulability == "schedulable":
        return f"place {name} on {_clusters(change.after, compact)}"
    if change.move_after is not None and change.move_after != change.move_before:
        return f"move {name} {change.move_after}"
    if change.moves:
        return _moved(name, change.moves)
    total = change.divided_totals
    if change.scaled:
        return f"scale {name} {total[0]} → {total[1]}"
    retired = _retired(change)
    if retired:
        return f"retire {retired} old {name} {_plural(retired, 'replica')}"
    if change.policy_before != change.policy_after:
        return f"{name}: policy {change.policy_before or '(default)'} → {change.policy_after}"
    deltas = change.deltas()
    if not deltas:
        return f"{name}: placement changed"
    return f"{name}: {', '.join(deltas if not compact else deltas[:LISTED_CLUSTERS])}"


def _moved(name: str, moves: Sequence[Move]) -> str:
    """`filling eu-central-1: moved 2 shop/checkout replicas`, for the first reason."""
    first = _move_reason(moves[0])
    replicas = sum(m.replicas for m in moves if _move_reason(m) == first)
    return f"{first}: moved {replicas} {name} {_plural(replicas, 'replica')}"


def _move_reason(move: Move) -> str:
    """A move's reason in a few words: `filling c`, `drain a`, `relieve a`, `ahead of a peak
    on a`, `failover from a`."""
    code = move.reason.code
    if code is MoveCode.FILLING:
        return f"filling {move.target}"
    if code is MoveCode.DRAINED:
        return f"drain {move.source}"
    if code is MoveCode.WATER_LEVEL:
        return f"relieve {move.source}"
    if code is MoveCode.FORECAST:
        return f"ahead of a peak on {move.source}"
    if code is MoveCode.FAILOVER:
        return f"failover from {move.source}"
    if code is MoveCode.PENDING:
        return f"pods pending on {move.source}"
    return move.reason.text.split(":", 1)[0]


def _retired(change: comparison.WorkloadChange) -> int:
    return max(0, sum(change.retiring_before.values()) - sum(change.retiring_after.values()))


def _entry(change: comparison.WorkloadChange, first: bool) -> str:
    """One body entry: the phrase, the per-cluster deltas, and every trigger."""
    text = f"- {_phrase(change)}"
    deltas = change.deltas()
    if deltas and change.status == "changed" and not text.endswith(", ".join(deltas)):
        text += f" ({', '.join(deltas)})"
    retired = _retired(change)
    if retired and not text.startswith("- retire"):
        text += f"; {retired} old {_plural(retired, 'replica')} retired"
    why = [] if first else [_source_words(t) for t in change.triggers]
    return text + (f"\n  why: {'; '.join(why)}" if why else "")


def _source_words(trigger: str) -> str:
    """The review's words for a workload only one side has, said of a pass instead."""
    if trigger == comparison.NEW:
        return "new in the source"
    if trigger == comparison.REMOVED:
        return "removed from the source"
    return trigger


def label(workload: str) -> str:
    """A short name: `shop/web` for a Deployment, `shop/service/web` for other kinds,
    `namespace/shop` for a cluster-scoped object."""
    namespace, kind, name = workload.split("/", 2)
    kind = kind.split(".", 1)[0]
    if namespace == "_cluster":
        return f"{kind.lower()}/{name}"
    return f"{namespace}/{name}" if kind == "Deployment" else f"{namespace}/{kind.lower()}/{name}"


def _clusters(placed: Mapping[str, int | None], compact: bool) -> str:
    names = sorted(placed)
    if not names:
        return "no cluster"
    if compact or len(names) > LISTED_CLUSTERS:
        return f"{len(names)} {_plural(len(names), 'cluster')}"
    return ", ".join(names)


def _differ(state: Mapping[str, bytes], tree: Mapping[str, bytes]) -> list[str]:
    """The `status/` files added, changed or removed, in path order; an unchanged file is
    told by its blob id, without reading it back (`readback.holds`)."""
    found = set(outputtree.under(state, paths.STATUS))
    found.update(outputtree.under(tree, paths.STATUS))
    return sorted(p for p in found if p not in tree or not readback.holds(state, p, tree[p]))


def _changed(differ: Sequence[str], folder: str) -> list[str]:
    """The names of the status files under `folder` among those that differ."""
    return [paths.status_name(p, folder) for p in differ if p.startswith(folder)]


def _status(levels: Sequence[str], health: Sequence[str], drift: Sequence[str]) -> str:
    parts = []
    if levels:
        parts.append(f"water levels of {len(levels)} {_plural(len(levels), 'cluster')}")
    if health:
        parts.append(f"health of {len(health)} {_plural(len(health), 'workload')}")
    if drift:
        parts.append(f"drift on {len(drift)} {_plural(len(drift), 'cluster')}")
    return ", ".join(parts)


def _listed(what: str, names: Sequence[str]) -> str:
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f"- {what}: {shown}"


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"
