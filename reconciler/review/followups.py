"""Follow-ups: what later passes will still do after the pass a review plans.

`dro plan` shows one pass, but three things finish only over several: a move keeps its old
copies (`Decision.retiring`) until a later pass sees the new ones Healthy; a stateful move goes
through its phases (`Decision.moving`), one or more passes each; and a Filling cluster (added or
recovered) is filled by re-balancing over several passes, at most `rebalance.maxMovesPerPass`
replicas each, for as long as a pass still moves replicas into it. `sentences` says each of
them in one line, so a reviewer knows the plan is not the end state.

This module is pure: `review` passes it the head's decisions and the clusters still filling.

Called by `review`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from reconciler.domain import Decision, MoveBudget, durations
from reconciler.domain.decision import MOVE_PHASES
from reconciler.render import rolloutview

SHOWN = 5
"""Workloads named per sentence; the rest are counted."""


def sentences(
    decisions: Sequence[Decision], *, filling: Collection[str], budget: MoveBudget, now: float
) -> tuple[str, ...]:
    """One sentence per kind of work left for later passes, in a fixed order: moves in flight,
    stateful moves, the clusters still `filling` after the pass at `now`, under `budget`."""
    found = []
    retiring = [d for d in decisions if any(p.phase is None for p in d.retiring)]
    if retiring:
        found.append(_retiring(retiring))
    for decision in decisions:
        entry = decision.moving
        if entry is not None:
            found.append(_moving(decision, entry.cluster, entry.phase or ""))
    if filling:
        found.append(_filling(decisions, sorted(filling), budget, durations.rfc3339(now)))
    found += [
        rolloutview.plan_sentence(d) for d in decisions if d.rollout and d.rollout.in_progress
    ]
    return tuple(found)


def _retiring(decisions: Sequence[Decision]) -> str:
    replicas = sum(p.replicas or 0 for d in decisions for p in d.retiring if p.phase is None)
    clusters = sorted({p.cluster for d in decisions for p in d.retiring if p.phase is None})
    names = _names([str(d.key) for d in decisions])
    return (
        f"Moves in flight: {replicas} old {_plural(replicas, 'replica')} of {names} keep running "
        f"on {', '.join(clusters)} (make-before-break); a later pass retires them once the new "
        "copies are observed Healthy (on a cluster dro does not observe, the next pass)."
    )


def _moving(decision: Decision, source: str, phase: str) -> str:
    target = decision.clusters[0].cluster if decision.clusters else "?"
    left = MOVE_PHASES[MOVE_PHASES.index(phase) + 1 :] if phase in MOVE_PHASES else ()
    then = f"; later passes take it through {' → '.join(left)}" if left else ""
    return f"Stateful move of {decision.key}: {source} → {target}, now {phase}{then}."


def _filling(
    decisions: Sequence[Decision], clusters: Sequence[str], budget: MoveBudget, at: str
) -> str:
    moved = sum(
        m.replicas for d in decisions for m in d.moves if m.target in clusters and m.at == at
    )
    limit = (
        f"{budget.count} {_plural(budget.count, 'replica')}"
        if budget.count is not None
        else f"{budget.percent:g}% of the movable replicas"
        if budget.percent is not None
        else "all movable replicas"
    )
    return (
        f"Filling {', '.join(clusters)}: this pass moves {moved} "
        f"{_plural(moved, 'replica')} in; later passes move more, at most {limit} per pass "
        "(rebalance.maxMovesPerPass), until a pass finds no move worth the threshold."
    )


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"
