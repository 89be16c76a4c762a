"""Where rollouts stand, in words: for `dro explain`, the output README, `dro plan`'s later
passes and the metrics (`render.rollout` keeps the state machine).

Called by `cli.report`, `render.shared`, `review.followups` and `service`.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.domain import Decision
from reconciler.domain import rollout as r


def standing(status: r.RolloutStatus) -> str:
    """Where a rollout stands, in one line: `wave 2/4 (eu) Progressing since …: 2 of 5
    clusters on the new template`."""
    if not status.in_progress:
        return f"complete at revision {status.revision}"
    updated = sum(1 for c in status.clusters if c.revision == status.revision)
    wave = f"wave {wave_label(status, status.wave)}/{status.waves}"
    since = f" since {status.wave_started_at}" if status.wave_started_at else ""
    line = (
        f"{status.previous or '?'} → {status.revision}: {wave} {status.phase}{since}, "
        f"{updated} of {len(status.clusters)} clusters on the new template"
    )
    return line + (f"; {status.message}" if status.message else "")


def wave_label(status: r.RolloutStatus, number: int) -> str:
    """`2`, or `2 (prod)` for a named wave."""
    name = status.wave_name(number)
    return str(number) if name == str(number) or not number else f"{number} ({name})"


def readme_section(decisions: Sequence[Decision]) -> str:
    """The output README's list of rollouts in progress (empty when there is none)."""
    going = [d for d in decisions if d.rollout is not None and d.rollout.in_progress]
    if not going:
        return ""
    lines = [
        "",
        "## Rollouts in progress",
        "",
        "Clusters not reached yet keep the template in force (`status.rollout` of each "
        "decision says which cluster runs which revision).",
        "",
        "| workload | from → to | wave | phase | clusters on the new template |",
        "|---|---|---|---|---|",
    ]
    for decision in sorted(going, key=lambda d: d.key.sort_key):
        status = decision.rollout
        assert status is not None
        updated = [c.cluster for c in status.clusters if c.revision == status.revision]
        wave = f"{wave_label(status, status.wave)}/{status.waves}"
        lines.append(
            f"| `{decision.key}` | {status.previous or '?'} → {status.revision} | {wave} | "
            f"{status.phase} | {', '.join(updated) or '—'} |"
        )
    return "\n".join(lines) + "\n"


def counts(decisions: Sequence[Decision]) -> dict[str, int]:
    """Rollouts by phase (every phase listed, Complete included), for metrics."""
    found = dict.fromkeys(r.PHASES, 0)
    for decision in decisions:
        if decision.rollout is not None:
            found[decision.rollout.phase] += 1
    return found


def plan_sentence(decision: Decision) -> str:
    """For `dro plan`: the waves a rollout in progress takes, and which clusters get the new
    template first."""
    status = decision.rollout
    assert status is not None
    waves = []
    for number in range(1, status.waves + 1):
        names = ", ".join(status.wave_clusters(number))
        name = status.wave_name(number)
        waves.append(names if name == str(number) else f"{name}: {names}")
    first = [c.cluster for c in status.clusters if c.revision == status.revision]
    now = f"this pass gives it to {', '.join(first)}" if first else "no cluster gets it this pass"
    waiting = f" ({status.message})" if status.message else ""
    return (
        f"Rollout of {decision.key} to revision {status.revision} in {status.waves} waves "
        f"({' → '.join(waves)}): {now}; wave {status.wave or 1} is {status.phase}{waiting}. "
        "The next wave starts once the last one is observed Healthy for its soak (on a "
        "cluster dro does not observe, at the next pass)."
    )
