"""One pass, as one sentence per stage: load → validate → schedule → render → commit → apply.

Only this module knows the order of the stages. Each step names the reason it failed, so a
report says which stage broke. A pass that fails before `commit` changes nothing anywhere: the
last good state on the output branch stays in force.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import structlog

from reconciler import commit, load, render, schedule, summary, validate
from reconciler.domain import Decision, Source, Spec
from reconciler.settings import Settings

log = structlog.get_logger("dro")

StageHook = Callable[[str], None]
"""Called with each stage's name as it starts; the CLI uses it for its progress display."""


class Stage(StrEnum):
    """The stages of a pass, in order; a failure names the one that broke."""

    LOAD = "load"
    VALIDATE = "validate"
    SCHEDULE = "schedule"
    RENDER = "render"
    COMMIT = "commit"
    APPLY = "apply"


@dataclass(frozen=True, slots=True, kw_only=True)
class Planned:
    """What the pure stages produced from one source: the spec, the decisions and the tree."""

    spec: Spec
    decisions: tuple[Decision, ...]
    tree: dict[str, bytes]


@dataclass(frozen=True, slots=True, kw_only=True)
class PassResult:
    """The outcome of `reconcile_once`."""

    planned: Planned
    commit: str | None
    """The new output-branch commit, or None when the rendered tree was unchanged."""
    pushed: bool
    apply_skipped: str
    """Why apply did not run (apply arrives with the cluster-access stage)."""


def _noop(_stage: str) -> None:
    return None


def read_source(settings: Settings) -> Source:
    """Load: the source tree from git (`settings.repo`) or from a plain directory."""
    if settings.repo is not None:
        return load.from_git(
            settings.repo,
            settings.ref,
            settings.state_dir,
            credentials=load.credentials_from(settings.credentials_file),
        )
    if settings.path is None:
        raise ValueError("settings need either a repo or a path")
    return load.from_directory(settings.path)


def decide(
    source: Source,
    *,
    on_stage: StageHook = _noop,
    previous: Sequence[Decision] = (),
    phases: Mapping[str, str] | None = None,
    diagnose: bool = True,
    now: float | None = None,
) -> tuple[Spec, tuple[Decision, ...]]:
    """Validate → schedule: the spec and one decision per workload.

    `now` stamps moves and measures cooldowns; by default it is the source commit's time, so
    an offline run on the same commit gives the same bytes. `phases` are the clusters' phases
    after the last pass (`load.previous_phases`), which say which clusters are filling.
    """
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source)
    on_stage(Stage.SCHEDULE)
    decisions = schedule.place(
        spec,
        {d.key: d for d in previous} or None,
        diagnose=diagnose,
        now=pass_time(source, now),
        filling=filling(spec, phases or {}),
    )
    return spec, decisions


def pass_time(source: Source, now: float | None) -> float:
    """The pass's "now": the given time, else the source commit's time."""
    return now if now is not None else float(source.commit_time or 0)


def filling(spec: Spec, phases: Mapping[str, str]) -> set[str]:
    """Clusters that re-balancing fills this pass: still `Filling` after the last pass,
    recovering (`Unreachable` then; the fill step skips it while it still is), or added since
    it (no status file, when the last pass wrote any)."""
    return {
        c.name
        for c in spec.clusters
        if phases.get(c.name) in (summary.FILLING, summary.UNREACHABLE)
        or (phases and c.name not in phases)
    }


def previous_decisions(settings: Settings) -> tuple[Decision, ...]:
    """The last pass's decisions from the output branch (none when reading a directory)."""
    if settings.repo is None:
        return ()
    state = load.previous_state(settings.repo, settings.output_branch, settings.state_dir)
    return tuple(load.previous_decisions(state).values())


def plan(
    source: Source,
    *,
    on_stage: StageHook = _noop,
    previous: Sequence[Decision] = (),
    phases: Mapping[str, str] | None = None,
    now: float | None = None,
) -> Planned:
    """Validate → schedule → render: the pure part of a pass, shared by every command."""
    spec, decisions = decide(source, on_stage=on_stage, previous=previous, phases=phases, now=now)
    on_stage(Stage.RENDER)
    still = schedule.still_filling(decisions, filling(spec, phases or {}), pass_time(source, now))
    tree = render.tree(spec, decisions, filling=still)
    return Planned(spec=spec, decisions=decisions, tree=tree)


def reconcile_once(settings: Settings, *, on_stage: StageHook = _noop) -> PassResult:
    """One full pass: pull, validate, schedule, render, commit and push the output branch."""
    if settings.repo is None:
        raise ValueError("reconcile needs a source repository (--repo)")
    on_stage(Stage.LOAD)
    source = read_source(settings)
    state = load.previous_state(settings.repo, settings.output_branch, settings.state_dir)
    previous = tuple(load.previous_decisions(state).values())
    log.info(
        "source_loaded",
        stage=Stage.LOAD,
        source=source.commit,
        files=len(source.files),
        previous_decisions=len(previous),
    )
    planned = plan(
        source,
        on_stage=on_stage,
        previous=previous,
        phases=load.previous_phases(state),
        now=time.time(),
    )
    for warning in validate.removed_clusters(planned.spec, previous):
        log.warning("cluster_removed_with_replicas", stage=Stage.VALIDATE, detail=warning)
    log.info(
        "planned",
        stage=Stage.RENDER,
        source=source.commit,
        decisions=len(planned.decisions),
        files=len(planned.tree),
    )
    on_stage(Stage.COMMIT)
    published = commit.publish(
        settings.repo,
        settings.state_dir,
        branch=settings.output_branch,
        tree=planned.tree,
        source_sha=source.commit,
        commit_time=source.commit_time,
        push=settings.push,
        author=(settings.author_name, settings.author_email),
        credentials=load.credentials_from(settings.credentials_file),
    )
    log.info(
        "committed",
        stage=Stage.COMMIT,
        source=source.commit,
        commit=published.commit,
        pushed=published.pushed,
    )
    return PassResult(
        planned=planned,
        commit=published.commit,
        pushed=published.pushed,
        apply_skipped="apply skipped: cluster access is not part of this build yet",
    )
