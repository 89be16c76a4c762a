"""Review: plan both sides of a pull request offline, and compare them (`dro plan`).

Both sides are planned under the same conditions, so that the diff shows what the head's
changes do and nothing else: the same previous decisions and cluster phases (the output
branch's), the same cluster observations (the last committed ones, or the declared figures of
clusters never observed), and the same "now" (the later of the two commits' times, so a
review is reproducible byte for byte). Nothing is observed, applied or committed.

When the base is invalid, the state in force stands in for it: the output branch's rendered
manifests and decisions, and the water levels of its status files.

The review also says what it could not include: uncommitted changes in the work tree of a
local repository (a plan reads commits, never files), and a missing output branch (then every
cluster's declared capacity and allocation stand in for observations, and there are no previous
decisions). The head side lists what later passes will still do (`followups`).

Called by `cli.plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import structlog

from reconciler import laststate, live, load, pipeline
from reconciler.branch import status
from reconciler.domain import Decision, Source, Spec, TriggerCode
from reconciler.domain.credentials import Credentials
from reconciler.errors import Severity, ValidationFailed
from reconciler.git import gitrepo
from reconciler.review import followups, plandiff
from reconciler.validate import guard

log = structlog.get_logger("dro")

UNCOMMITTED_SHOWN = 10
"""Uncommitted files named in the review's note; the rest are counted."""


def plan_review(
    location: str,
    base: str,
    head: str,
    *,
    output_branch: str,
    state_dir: Path,
    credentials: Credentials | None = None,
    on_stage: pipeline.StageHook | None = None,
    ceiling: guard.Guard = guard.BUILTIN,
) -> plandiff.PlanDiff:
    """Plan `base` and `head` of the repository at `location` and compare them, both under the
    operator's guard `ceiling`."""
    stage = on_stage or _quiet
    stage(pipeline.Stage.LOAD)
    revisions = load.Revisions(location, state_dir, credentials=credentials)
    state = revisions.state(output_branch)
    sources = revisions.source(base, may_be_empty=True), revisions.source(head)
    now = float(max(s.commit_time or 0 for s in sources))
    last = laststate.of(
        state,
        history=revisions.history(output_branch),
        templates=laststate.templates(revisions.commit_source),
    )
    log.info(
        "review_loaded",
        base=sources[0].commit,
        head=sources[1].commit,
        previous_decisions=len(last.decisions),
        observed=sorted(last.statuses),
    )

    def side(ref: str, source: Source) -> plandiff.Side:
        return _side(ref, source, last, now, stage, ceiling)

    before, after = side(base, sources[0]), side(head, sources[1])
    if not before.valid and after.valid:
        before = _in_force(before, revisions, output_branch, last)
    diff = plandiff.compare(before, replace(after, note=_set_aside(after.decisions)))
    notes = (
        *_uncommitted(location, revisions.local),
        *_no_output_branch(output_branch, revisions.tip(output_branch) is not None, before.valid),
    )
    return replace(diff, notes=notes)


def _uncommitted(location: str, local: bool) -> tuple[str, ...]:
    """Said when the work tree of a local repository has source files the plan leaves out."""
    if not local:
        return ()
    changed = {
        path: how
        for path, how in gitrepo.worktree_changes(Path(location)).items()
        if load.is_source_path(path)
    }
    if not changed:
        return ()
    listed = [f"{path} ({how})" for path, how in changed.items()]
    shown = ", ".join(listed[:UNCOMMITTED_SHOWN])
    more = len(listed) - UNCOMMITTED_SHOWN
    if more > 0:
        shown += f" and {more} more"
    one = len(listed) == 1
    return (
        f"The working tree has {len(listed)} uncommitted {'change' if one else 'changes'} "
        f"that this plan does not include (dro plan reads commits, not files): {shown}. "
        f"Commit {'it' if one else 'them'} to plan {'it' if one else 'them'}.",
    )


def _no_output_branch(branch: str, found: bool, base_valid: bool) -> tuple[str, ...]:
    """Said when there is no output branch to take decisions and observations from."""
    if found or not base_valid:  # an invalid base's note already says it
        return ()
    return (
        f"No output branch `{branch}` was found: the clusters' declared capacity and "
        "allocation were used instead of observed water levels, and both sides were placed "
        "as a first placement.",
    )


def _set_aside(decisions: Sequence[Decision]) -> str:
    """What the head says about previous decisions it could not start from (`standing`)."""
    found = [
        f"{d.key}: {d.diagnosis.trigger.text}"
        for d in decisions
        if d.diagnosis.trigger.code is TriggerCode.SET_ASIDE
    ]
    if not found:
        return ""
    return (
        f"{len(found)} decision(s) on the output branch were set aside and divided again by "
        "their policies: " + "; ".join(found)
    )


def _quiet(_stage: str) -> None:
    return None


def _side(
    ref: str,
    source: Source,
    last: laststate.LastPass,
    now: float,
    on_stage: pipeline.StageHook,
    ceiling: guard.Guard,
) -> plandiff.Side:
    def committed(spec: Spec) -> live.Observed:
        return live.Observed(observations=status.committed_observations(last.files, spec.clusters))

    try:
        planned, _ = pipeline.plan(
            source,
            on_stage=on_stage,
            before=last,
            now=now,
            observer=committed,
            diagnose=False,
            ceiling=ceiling,
        )
    except ValidationFailed as failed:
        return plandiff.Side(ref=ref, commit=source.commit, problems=failed.problems)
    spec = planned.spec
    return plandiff.Side(
        ref=ref,
        commit=source.commit,
        decisions=planned.decisions,
        tree=planned.tree,
        clusters=tuple(sorted(c.name for c in spec.clusters)),
        water_levels=planned.water_levels,
        forecasts=status.forecast_levels(planned.tree),
        water_level_limits=dict(spec.config.water_level_limit),
        follow_ups=followups.sentences(
            planned.decisions,
            filling=planned.still_filling,
            budget=spec.config.rebalance.max_moves,
            now=now,
        ),
    )


def _in_force(
    invalid: plandiff.Side, revisions: load.Revisions, branch: str, last: laststate.LastPass
) -> plandiff.Side:
    """The output branch's last rendered state, standing in for an invalid base: its manifests,
    and the decisions and status of the last pass (`last`)."""
    files = revisions.state(branch, manifests=True)
    errors = sum(1 for p in invalid.problems if p.severity is Severity.ERROR)
    said = f"The base `{invalid.ref}` is invalid ({errors} problems)"
    if not files:
        return plandiff.Side(
            ref=invalid.ref,
            commit=invalid.commit,
            note=f"{said}, and there is no output branch `{branch}`: "
            "the head is compared with nothing.",
        )
    levels = {name: status.committed_water_levels(body) for name, body in last.statuses.items()}
    return plandiff.Side(
        ref=f"{branch} (in force)",
        commit=revisions.tip(branch),
        decisions=last.decisions,
        tree=files,
        clusters=tuple(sorted(levels)),
        water_levels=levels,
        note=f"{said}: the head is compared with the state in force, the output branch `{branch}`.",
    )
