"""One pass, as one sentence per stage: load → validate → schedule → render → commit → apply.

Only this module knows the order of the stages. Each step names the reason it failed, so a
report says which stage broke. A pass that fails before `commit` changes nothing anywhere: the
last good state on the output branch stays in force.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import structlog

from reconciler import commit, live, load, render, schedule, validate
from reconciler.branch import lastpass, status, summary
from reconciler.commit import describe as commitmessage
from reconciler.domain import Decision, Observation, ResourceKey, Source, Spec, fence
from reconciler.git import gitrepo
from reconciler.live import takeover
from reconciler.live.outcome import ClusterSync
from reconciler.settings import Settings
from reconciler.validate import guard

log = structlog.get_logger("dro")

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Planned:
    """What the pure stages produced from one source: the spec, the decisions and the tree."""

    spec: Spec
    decisions: tuple[Decision, ...]
    tree: dict[str, bytes]
    water_levels: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Cluster → resource → the water level the decisions leave it at (`schedule.Placement`)."""


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


NOT_ON_REMOTE = (
    "the rendered tree was not pushed (--no-push): only what the remote branch holds is applied"
)


Observer = Callable[[Spec], "live.Observed"]
"""Observes the clusters of a validated spec (between validate and schedule)."""


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
    observations: Mapping[str, Observation] | None = None,
    ceiling: guard.Guard = guard.BUILTIN,
) -> tuple[Spec, tuple[Decision, ...]]:
    """Validate → schedule: the spec and one decision per workload.

    `now` stamps moves and measures cooldowns; by default it is the source commit's time, so
    an offline run on the same commit gives the same bytes. `phases` are the clusters' phases
    after the last pass (`lastpass.phases`), which say which clusters are filling.
    `observations` replace the declared figures of the clusters they name. `ceiling` is the
    operator's guard.
    """
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source, ceiling=ceiling)
    placement = _schedule(spec, on_stage, previous, phases, diagnose, now, source, observations)
    return spec, placement.decisions


def _schedule(
    spec: Spec,
    on_stage: StageHook,
    previous: Sequence[Decision],
    phases: Mapping[str, str] | None,
    diagnose: bool,
    now: float | None,
    source: Source,
    observations: Mapping[str, Observation] | None,
) -> schedule.Placement:
    on_stage(Stage.SCHEDULE)
    return schedule.place_and_project(
        spec,
        {d.key: d for d in previous} or None,
        observations,
        diagnose=diagnose,
        now=pass_time(source, now),
        filling=filling(spec, phases or {}),
    )


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
    return tuple(lastpass.decisions(state).values())


def plan(
    source: Source,
    *,
    on_stage: StageHook = _noop,
    previous: Sequence[Decision] = (),
    phases: Mapping[str, str] | None = None,
    now: float | None = None,
    observer: Observer | None = None,
    diagnose: bool = True,
    ceiling: guard.Guard = guard.BUILTIN,
    kept: render.Kept | None = None,
) -> tuple[Planned, live.Observed]:
    """Validate → (observe) → schedule → render: the part of a pass every command shares.
    Without an `observer` nothing is observed, and the tree is a pure function of the source
    and the previous state. `diagnose=False` leaves the per-cluster verdicts out of the
    decisions. `ceiling` is the operator's guard."""
    on_stage(Stage.VALIDATE)
    spec = validate.spec(source, ceiling=ceiling)
    observed = live.Observed()
    if observer is not None:
        on_stage(Stage.OBSERVE)
        observed = observer(spec)
    seen = observed.observations
    placement = _schedule(spec, on_stage, previous, phases, diagnose, now, source, seen)
    decisions = placement.decisions
    on_stage(Stage.RENDER)
    still = schedule.still_filling(decisions, filling(spec, phases or {}), pass_time(source, now))
    documents = {
        name: status.cluster_status(seen[name], suspended=name in observed.suspended)
        for name in sorted(seen)
    }
    tree = render.tree(spec, decisions, observations=documents, filling=still, kept=kept)
    tree.update(status.workload_files(decisions, seen))
    planned = Planned(
        spec=spec,
        decisions=decisions,
        tree=dict(sorted(tree.items())),
        water_levels=placement.water_levels,
    )
    return planned, observed


def reconcile_once(
    settings: Settings, *, on_stage: StageHook = _noop, fenced: fence.Fence = fence.UNFENCED
) -> PassResult:
    """One full pass: pull, validate, observe, schedule, render, commit, push and apply.

    Without `settings.kubeconfig` the pass is offline: it stops after the push. When the
    pass moved replicas and their new copies became Healthy within `settings.move_wait`, a
    second pass on the same source retires the old copies (make-before-break). Every write
    (the push, each cluster write) checks `fenced` first; a failed check raises
    `fence.Deposed` and the pass stops there."""
    if settings.repo is None:
        raise ValueError("reconcile needs a source repository (--repo)")
    result = _one_pass(settings, on_stage, fenced)
    if result.applied is not None and result.passes == 2:
        second = _one_pass(settings, on_stage, fenced, follow_up=True)
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
    settings: Settings, on_stage: StageHook, fenced: fence.Fence, *, follow_up: bool = False
) -> PassResult:
    assert settings.repo is not None
    on_stage(Stage.LOAD)
    source = read_source(settings)
    state = load.previous_state(settings.repo, settings.output_branch, settings.state_dir)
    previous = tuple(lastpass.decisions(state).values())
    log.info(
        "source_loaded",
        stage=Stage.LOAD,
        source=source.commit,
        files=len(source.files),
        previous_decisions=len(previous),
        follow_up=follow_up,
    )
    now = time.time()
    members: live.Members | None = None
    structlog.contextvars.bind_contextvars(source=source.commit)
    try:
        statuses = status.previous_statuses(state)

        def observer(spec: Spec) -> live.Observed:
            nonlocal members
            members = live.Members(spec, _access(settings, fenced)).open()
            return members.observe(statuses, now)

        planned, observed = plan(
            source,
            on_stage=on_stage,
            previous=previous,
            phases=lastpass.phases(state),
            now=now,
            observer=observer if settings.online else None,
            ceiling=settings.guard,
            kept=load.previous_rendered(settings.repo, settings.output_branch, settings.state_dir),
        )
        for warning in validate.removed_clusters(planned.spec, previous):
            log.warning("cluster_removed_with_replicas", stage=Stage.VALIDATE, detail=warning)
        log.info(
            "planned",
            stage=Stage.RENDER,
            source=source.commit,
            decisions=len(planned.decisions),
            files=len(planned.tree),
            unreachable=sorted(observed.unreachable),
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
            observations=_digest(planned.tree) if observed.observations else "declared",
            hold=_held_status(state, planned.tree, now, settings.status_interval),
            author=(settings.author_name, settings.author_email),
            credentials=load.credentials_from(settings.credentials_file),
            summary=lambda: commitmessage.compose(
                before=previous,
                after=planned.decisions,
                state=state,
                tree=planned.tree,
                source=source.commit,
            ),
            fenced=fenced,
        )
        log.info(
            "committed",
            stage=Stage.COMMIT,
            source=source.commit,
            commit=published.commit,
            pushed=published.pushed,
        )
        if published.commit is not None:
            who = {"source": source.commit, "author": source.author}
            log.info(
                "audit",
                action="commit",
                branch=settings.output_branch,
                commit=published.commit,
                **who,
            )
            if published.pushed:
                log.info(
                    "audit",
                    action="push",
                    branch=settings.output_branch,
                    commit=published.commit,
                    remote=gitrepo.redact(settings.repo),
                    **who,
                )
        if members is None or not published.on_remote:
            skipped = None if members is None else NOT_ON_REMOTE
            if skipped:
                log.warning("apply_skipped", stage=Stage.APPLY, reason=skipped)
            return PassResult(
                planned=planned,
                commit=published.commit,
                pushed=published.pushed,
                skipped=skipped,
            )
        on_stage(Stage.APPLY)
        down = ", ".join(sorted(observed.unreachable))
        applied = members.apply(
            planned.tree,
            held_back=f"clusters could not be listed ({down})" if down else None,
            provenance=provenance(planned.spec),
        )
        for cluster in applied.clusters:
            log.info("applied", stage=Stage.APPLY, **_fields(cluster))
            for write in cluster.written:
                log.info(
                    "audit",
                    action=write.code.action,
                    cluster=cluster.cluster,
                    object=write.key.brief,
                    source=source.commit,
                    author=source.author,
                )
        retire = not follow_up and applied.ok and members.await_moves(planned.decisions)
        return PassResult(
            planned=planned,
            commit=published.commit,
            pushed=published.pushed,
            applied=applied,
            unreachable=dict(observed.unreachable),
            passes=2 if retire else 1,
        )
    finally:
        structlog.contextvars.unbind_contextvars("source")
        if members is not None:
            members.close()


def provenance(spec: Spec) -> dict[ResourceKey, takeover.Provenance]:
    """Each source object's `FILE:LINE` and takeover rule (from the policy that claims it, or
    dro.yaml's default placement), for apply's reports and its takeover decisions."""
    found = {}
    for workload in spec.workloads:
        policy = (spec.claims or {}).get(workload.key)
        placement = policy.placement if policy is not None else spec.config.default_placement
        found[workload.key] = takeover.Provenance(
            where=f"{workload.origin.path}:{workload.origin.line}", takeover=placement.takeover
        )
    return found


def _access(settings: Settings, fenced: fence.Fence) -> live.Access:
    return live.Access(
        fence=fenced,
        kubeconfig=settings.kubeconfig,
        in_cluster=settings.in_cluster,
        timeout=settings.cluster_timeout,
        parallel=settings.parallel,
        move_wait=settings.move_wait,
    )


def _digest(tree: Mapping[str, bytes]) -> str:
    """`Dro-Observations`: the sha256 of the cluster status files the decisions used."""
    hashed = hashlib.sha256()
    for path, data in sorted(tree.items()):
        if path.startswith(status.CLUSTERS):
            hashed.update(path.encode() + b"\0" + data + b"\0")
    return hashed.hexdigest()


def _held_status(
    state: Mapping[str, bytes], tree: Mapping[str, bytes], now: float, interval: float
) -> dict[str, bytes] | None:
    """The last committed `status/` files when a change to status alone must wait for
    `--status-interval` (health and reachability unchanged); None when it may be committed."""
    before = {p: d for p, d in state.items() if p.startswith("status/")}
    after = {p: d for p, d in tree.items() if p.startswith("status/")}
    if before == after or status.urgent(before, after) or status.due(before, now, interval):
        return None
    return before


def _fields(report: ClusterSync) -> dict[str, object]:
    return {
        "cluster": report.cluster,
        "reachable": report.reachable,
        "applied": report.applied,
        "unchanged": report.unchanged,
        "pruned": report.pruned,
        "drifted": report.drifted,
        "failed": report.failed,
        "rejected": report.rejected,
        "released": report.released,
        "writes": report.writes,
    }
