"""One pass, as one sentence per stage: load → validate → schedule → render → commit → apply.

Only this module knows the order of the stages. Each step names the reason it failed, so a
report says which stage broke. A pass that fails before `commit` changes nothing anywhere: the
last good state on the output branch stays in force.

Called by 8 modules, among them `cli`, `pipeline.sharded`, `review`, `service`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import structlog

from reconciler import audit, commit, foresee, laststate, live, load, render, schedule, validate
from reconciler.branch import phases as cluster_phases
from reconciler.domain import Decision, Observation, ResourceKey, Source, Spec, clock, fence
from reconciler.domain.drift import Drifted
from reconciler.domain.forecast import Forecasts
from reconciler.errors import Problem
from reconciler.laststate import FIRST_PASS, LastPass
from reconciler.pipeline import clusters, idle, publishing
from reconciler.pipeline.warm import Warm as Warm
from reconciler.render import rollout, rolloutgone
from reconciler.settings import Settings
from reconciler.validate import guard

StageHook = Callable[[str], None]
"""Called with each stage's name as it starts; the CLI uses it for its progress display."""


class Stage(StrEnum):
    """The stages of a pass, in order; a failure names the one that broke."""

    LOAD = "load"
    VALIDATE = "validate"
    OBSERVE = "observe"
    SCHEDULE = "schedule"
    RENDER = "render"
    COMMIT = "commit"
    APPLY = "apply"


def _before(stage: Stage) -> frozenset[Stage]:
    return frozenset(itertools.takewhile(lambda earlier: earlier != stage, Stage))


WRITES_NOTHING = _before(Stage.COMMIT)
"""Stages that write nothing anywhere: a pass in one of them may be abandoned at once."""
STOPPABLE = _before(Stage.APPLY)
"""Stages a pass may still stop before entering (shutdown, lost leadership): up to the
commit, which is one ref update, so that nothing is half-written."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Planned:
    """What the pure stages produced from one source: the spec, the decisions and the tree."""

    spec: Spec
    decisions: tuple[Decision, ...]
    tree: dict[str, bytes]
    water_levels: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Cluster → resource → the water level the decisions leave it at (`schedule.Placement`)."""
    still_filling: frozenset[str] = frozenset()
    """The Filling clusters this pass moved replicas into: they stay Filling."""

    def at_rest(self, published: commit.PublishResult) -> bool:
        """Whether the pass that planned this found the fixed point that later passes may
        stand on (`idle.fixed_point`), once its tree was `published`."""
        return idle.fixed_point(
            published.commit, published.on_remote, self.spec, self.decisions, self.still_filling
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PassResult:
    """The outcome of `reconcile_once`."""

    planned: Planned
    commit: str | None
    """The new output-branch commit, or None when the rendered tree was unchanged."""
    pushed: bool
    applied: live.Applied | None = None
    """Per-cluster apply reports; None when the pass ran offline (no `--kubeconfig`)."""
    unreachable: Mapping[str, str] = field(default_factory=dict)
    """Clusters whose API could not be listed this pass, and why."""
    passes: int = 1
    """2 when the moves' new copies became Healthy and a second pass retired the old ones."""
    skipped: str | None = None
    """Why an online pass applied nothing (`applied` is None), e.g. `NOT_ON_REMOTE`."""
    idle: bool = False
    """The pass stopped after loading: nothing changed since a pass that changed nothing."""


NOT_ON_REMOTE = (
    "the rendered tree was not pushed (--no-push): only what the remote branch holds is applied"
)


Observer = clusters.Observer


def _noop(_stage: str) -> None:
    return None


def read_source(settings: Settings, warm: Warm | None = None) -> Source:
    """Load: the source tree from git (`settings.repo`) or from a plain directory; `warm`
    keeps the files read for the next pass of the process, which reads only changed ones."""
    if settings.repo is not None:
        return load.from_git(
            settings.repo,
            settings.ref,
            settings.state_dir,
            credentials=load.credentials_from(
                settings.credentials_file, otherwise=settings.environment_credentials
            ),
            blobs=warm.blobs if warm is not None else None,
        )
    if settings.path is None:
        raise ValueError("settings need either a repo or a path")
    return load.from_directory(settings.path)


def decide(
    source: Source,
    *,
    on_stage: StageHook = _noop,
    before: LastPass = FIRST_PASS,
    diagnose: bool = True,
    now: float | None = None,
    observations: Mapping[str, Observation] | None = None,
    ceiling: guard.Guard = guard.BUILTIN,
) -> tuple[Spec, tuple[Decision, ...]]:
    """Validate → schedule: the spec and one decision per workload.

    `now` stamps moves and measures cooldowns; by default it is the source commit's time, so
    an offline run on the same commit gives the same bytes. `before` is the last pass's state:
    its decisions, and its clusters' phases, which say which clusters are filling.
    `observations` replace the declared figures of the clusters they name. `ceiling` is the
    operator's guard.
    """
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source, ceiling=ceiling)
    placement = _schedule(spec, on_stage, before, diagnose, now, source, observations)
    return spec, placement.decisions


def _schedule(
    spec: Spec,
    on_stage: StageHook,
    before: LastPass,
    diagnose: bool,
    now: float | None,
    source: Source,
    observations: Mapping[str, Observation] | None,
    *,
    standing_verdicts: bool = True,
    explained: Callable[[ResourceKey], bool] | None = None,
    turns: schedule.reuse.Memo | None = None,
) -> schedule.Placement:
    on_stage(Stage.SCHEDULE)
    placed = schedule.place_and_project(
        spec,
        {d.key: d for d in before.decisions} or None,
        observations,
        diagnose=diagnose,
        standing_verdicts=standing_verdicts,
        now=pass_time(source, now),
        filling=filling(spec, before.phases),
        forecasts=foresee.forecasts(spec, before, observations, pass_time(source, now)),
        explained=explained,
        memo=turns,
    )
    previous = {d.key: d for d in before.decisions}
    budgets = schedule.disruption.rollout_room(spec, observations)
    waves = rollout.advance(
        spec, placed.decisions, previous, observations, pass_time(source, now), room=budgets
    )
    waves = rolloutgone.anchored(waves, previous, before.templates, before.kept)
    return dataclasses.replace(placed, decisions=waves)


def pass_time(source: Source, now: float | None) -> float:
    """The pass's "now": the given time, else the source commit's time."""
    return now if now is not None else float(source.commit_time or 0)


def filling(spec: Spec, phases: Mapping[str, str]) -> set[str]:
    """Clusters that re-balancing fills this pass: added, or back in service after the last
    pass (`branch.phases.filling`)."""
    return cluster_phases.filling(spec.clusters, phases)


def plan(
    source: Source,
    *,
    on_stage: StageHook = _noop,
    before: LastPass = FIRST_PASS,
    now: float | None = None,
    observer: Observer | None = None,
    diagnose: bool = True,
    ceiling: guard.Guard = guard.BUILTIN,
    warm: Warm | None = None,
) -> tuple[Planned, live.Observed]:
    """Validate → (observe) → schedule → render: the part of a pass every command shares.
    Without an `observer` nothing is observed, and the tree is a pure function of the source
    and the last pass's state (`before`). `diagnose=False` leaves the per-cluster verdicts out
    of the decisions. `ceiling` is the operator's guard; `warm` what earlier passes left
    (each source file's parse, the rendered files: `pipeline.Warm`)."""
    on_stage(Stage.VALIDATE)
    spec = validate.spec(
        source,
        ceiling=ceiling,
        parsed=warm.parsed if warm else None,
        memo=warm.validated if warm else None,
    )
    observed = live.Observed()
    if observer is not None:
        on_stage(Stage.OBSERVE)
        observed = observer(spec)
    seen = observed.observations
    turns = warm.turns if warm is not None else None
    placement = _schedule(
        spec, on_stage, before, diagnose, now, source, seen, standing_verdicts=False, turns=turns
    )
    decisions = placement.decisions
    on_stage(Stage.RENDER)
    still = schedule.still_filling(decisions, filling(spec, before.phases), pass_time(source, now))
    tree = render.tree(
        spec,
        decisions,
        observations=seen,
        suspended=observed.suspended,
        filling=still,
        kept=before.kept,
        forecasts=placement.forecasts,
        templates=before.templates,
        remembered=warm.render if warm is not None else None,
    )
    planned = Planned(
        spec=spec,
        decisions=decisions,
        tree=tree,
        water_levels=placement.water_levels,
        still_filling=frozenset(still),
    )
    return planned, observed


@dataclass(frozen=True, slots=True, kw_only=True)
class Validated:
    """What `validated` found: every problem, the spec when there was no error, and the
    clusters removed while the last pass still placed replicas on them."""

    source: Source
    problems: tuple[Problem, ...]
    spec: Spec | None
    removed: tuple[str, ...] = ()


def validated(settings: Settings, on_stage: StageHook = _noop) -> Validated:
    """Load → validate, every problem at once (`dro validate`); a valid spec is compared with
    the last pass's decisions for removed clusters."""
    source = _loaded(settings, on_stage)
    on_stage(Stage.VALIDATE)
    checked = validate.check(source, ceiling=settings.guard)
    removed: list[str] = []
    if checked.spec is not None:
        removed = validate.removed_clusters(checked.spec, laststate.offline(settings).decisions)
    return Validated(
        source=source, problems=checked.problems, spec=checked.spec, removed=tuple(removed)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """What `decided` placed: the source, its spec and one decision per workload."""

    source: Source
    spec: Spec
    decisions: tuple[Decision, ...]
    forecasts: Forecasts = field(default_factory=dict)
    """The forecasts scheduled with (prediction on, from the last pass's history)."""


def decided(
    settings: Settings,
    on_stage: StageHook = _noop,
    *,
    diagnose: bool = True,
    from_last_pass: bool = False,
    explained: Callable[[ResourceKey], bool] | None = None,
) -> Decided:
    """Load → validate → schedule (`dro schedule`, `dro explain`), offline. `from_last_pass`
    starts from the last pass's decisions, as the next pass does; without it every workload
    is placed as if for the first time. The workloads `explained` selects keep every
    cluster's verdict, the others what their decision file lists."""
    source = _loaded(settings, on_stage)
    before = laststate.offline(settings) if from_last_pass else FIRST_PASS
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source, ceiling=settings.guard)
    placement = _schedule(spec, on_stage, before, diagnose, None, source, None, explained=explained)
    return Decided(
        source=source, spec=spec, decisions=placement.decisions, forecasts=placement.forecasts
    )


def rendered(
    settings: Settings,
    on_stage: StageHook,
    write: Callable[[Decided], None],
) -> None:
    """Load → validate → schedule → render (`dro render`): `write` renders the decisions
    (and the forecasts, for the status files) where the command wants them (on every core,
    into a folder)."""
    placed = decided(settings, on_stage)
    on_stage(Stage.RENDER)
    write(placed)


def reconcile_once(
    settings: Settings,
    *,
    on_stage: StageHook = _noop,
    fenced: fence.Fence = fence.UNFENCED,
    warm: Warm | None = None,
) -> PassResult:
    """One full pass: pull, validate, observe, schedule, render, commit, push and apply.

    Without `settings.kubeconfig` the pass is offline: it stops after the push. When the
    pass moved replicas and their new copies became Healthy within `settings.move_wait`, a
    second pass on the same source retires the old copies (make-before-break). Every write
    (the push, each cluster write) checks `fenced` first; a failed check raises
    `fence.Deposed` and the pass stops there. `warm` holds what earlier passes of this
    process left for the next one (`pipeline.warm`); a fresh one is made when none is given."""
    if settings.repo is None:
        raise ValueError("reconcile needs a source repository (--repo)")
    if warm is None:  # no later pass of this process: its connections are closed after
        with Warm(state_dir=settings.state_dir) as once:
            return reconcile_once(settings, on_stage=on_stage, fenced=fenced, warm=once)
    try:
        result = _one_pass(settings, on_stage, fenced, warm)
    finally:
        warm.keep()
    if result.applied is not None and result.passes == 2:
        second = _one_pass(settings, on_stage, fenced, warm, follow_up=True)
        return PassResult(
            planned=second.planned,
            commit=second.commit or result.commit,
            pushed=second.pushed or result.pushed,
            applied=second.applied,
            unreachable=second.unreachable,
            passes=2,
        )
    return result


def _one_pass(
    settings: Settings,
    on_stage: StageHook,
    fenced: fence.Fence,
    warm: Warm,
    *,
    follow_up: bool = False,
) -> PassResult:
    """Load, plan, commit, apply: each a call that returns the next one's input, and each
    result told to the operators once (`audit`)."""
    assert settings.repo is not None
    warm.begin(settings.repo)
    source = _loaded(settings, on_stage, warm)
    tip = load.output_tip(settings.repo, settings.output_branch, settings.state_dir)
    inputs = idle.Inputs.of(source, tip, settings)
    now = time.time()
    found = None if follow_up else idle.idle(warm.steady, inputs, now)
    warm.steady = None
    with (
        clusters.Clusters(settings, fenced, warm.connections) as fleet,
        _working_on(source),
        clock.recording() as c,
    ):
        if found is not None and (seen := fleet.standing(found, now, on_stage)) is not None:
            warm.steady = found
            audit.idle(Stage.LOAD if fleet.members is None else Stage.OBSERVE, source, tip)
            members, stood = fleet.members, found.planned
            applied = clusters.applied(members, stood, seen, source, on_stage) if members else None
            unreachable = dict(seen.unreachable)
            return PassResult(
                planned=stood,
                commit=None,
                pushed=False,
                idle=True,
                applied=applied,
                unreachable=unreachable,
            )
        before = laststate.online(settings, warm.readback)
        audit.loaded(Stage.LOAD, source, before.decisions, follow_up=follow_up)
        planned, observed = plan(
            source,
            on_stage=on_stage,
            before=before,
            now=now,
            observer=fleet.observer(before, now),
            ceiling=settings.guard,
            warm=warm,
        )
        audit.removed_clusters(
            Stage.VALIDATE, validate.removed_clusters(planned.spec, before.decisions)
        )
        planned, published = surveyed_and_committed(
            settings, source, before, planned, observed, fleet.members, now, fenced, warm, on_stage
        )
        if planned.at_rest(published):
            saw = fleet.seen(observed)
            warm.steady = idle.FixedPoint(inputs, planned, c.earliest, saw, before.statuses)
        if fleet.members is None or not published.on_remote:
            return _unapplied(planned, published, online=fleet.members is not None)
        applied = clusters.applied(fleet.members, planned, observed, source, on_stage)
        retire = not follow_up and applied.ok and fleet.members.await_moves(planned.decisions)
        return PassResult(
            planned=planned,
            commit=published.commit,
            pushed=published.pushed,
            applied=applied,
            unreachable=dict(observed.unreachable),
            passes=2 if retire else 1,
        )


def surveyed_and_committed(
    settings: Settings,
    source: Source,
    before: LastPass,
    planned: Planned,
    observed: live.Observed,
    members: live.Members | None,
    now: float,
    fenced: fence.Fence,
    warm: Warm,
    on_stage: StageHook,
    *,
    others_drift: Mapping[str, Sequence[Drifted]] | None = None,
) -> tuple[Planned, commit.PublishResult]:
    """After render: the clusters' drift surveyed into the tree (`members`, online), the plan
    told to the operators, and the tree committed (`publishing`); the tree as committed and
    the commit's result. The sharded leader's pass shares it (`pipeline.sharded`), and adds
    `others_drift`: what the other members surveyed on the clusters they own."""
    if members is not None:
        tree = clusters.drift_surveyed(
            members, planned.tree, planned.spec, before, now, others_drift or {}
        )
        planned = replace(planned, tree=tree)
    audit.planned(Stage.RENDER, source, planned.decisions, planned.tree, observed.unreachable)
    on_stage(Stage.COMMIT)
    published = publishing.committed(
        settings,
        source,
        before,
        planned.tree,
        planned.decisions,
        observed=bool(observed.observations),
        now=now,
        fenced=fenced,
        writers=warm.commit,
        stage=Stage.COMMIT,
    )
    return planned, published


def _loaded(settings: Settings, on_stage: StageHook, warm: Warm | None = None) -> Source:
    """Load: the source tree the pass works on."""
    on_stage(Stage.LOAD)
    return read_source(settings, warm)


@contextlib.contextmanager
def _working_on(source: Source) -> Iterator[None]:
    """Every event logged inside names the source commit the pass works on."""
    structlog.contextvars.bind_contextvars(source=source.commit)
    try:
        yield
    finally:
        structlog.contextvars.unbind_contextvars("source")


def _unapplied(planned: Planned, published: commit.PublishResult, *, online: bool) -> PassResult:
    """The pass ends at the commit: offline, or online when the tree is not on the remote."""
    skipped = NOT_ON_REMOTE if online else None
    audit.apply_skipped(Stage.APPLY, skipped)
    return PassResult(
        planned=planned, commit=published.commit, pushed=published.pushed, skipped=skipped
    )
