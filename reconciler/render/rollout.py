"""Progressive rollouts: which template each cluster gets this pass, as a pure state machine.

A workload whose placement has a `rollout` (or dro.yaml's `spec.rollout`) carries its template
`revision` (a hash of its manifest without replicas, server fields and dro's own
`multicluster.io/` annotations) in its decision's `status.rollout`. When the revision changes,
the placed clusters are cut into waves (named, or `maxClusters` at a time, in name order) and
only the released waves get the new template; the others keep the one in force, read from
the source commit that brought it (`ClusterRollout.commit`), so the rendered tree shows what
runs where. Each pass `advance`s the state from the last pass's:

- a wave is done when its clusters are observed Healthy with the new revision for `soak`;
  a cluster not observed (offline passes, declared-only fleets) is done at the next pass;
- the next wave is released when the last one is done, unless it has `approval: true`: then
  it waits for a source commit that sets `multicluster.io/rollout-promote: <wave>`;
- a wave not done within `healthTimeout` fails: `Pause` holds the rollout there (it goes on
  if the wave becomes Healthy later), `Rollback` gives its clusters their previous template;
- a new revision mid-rollout starts a new rollout from what each cluster runs, so a cluster
  only ever switches between the template it has and the newest one;
- under a disruption budget (`placement.disruption`), a wave's clusters start in batches of
  at most the workload's `room` (what the budget leaves after its moves, drains and clusters
  not yet Healthy: `schedule.disruption.rollout_room`); the rest of the wave waits for a later
  pass, and the next wave starts only when the whole wave is done.

Nothing here reads a clock or does I/O: `now` is passed in.

Called by `pipeline`, `render`, `render.held` and `render.rolloutgone`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reconciler.domain import Decision, Observation, ResourceKey, Spec, Workload, clock, durations
from reconciler.domain import rollout as r
from reconciler.kube import health

_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
_DRO_PREFIX = "multicluster.io/"


def revision(manifest: Mapping[str, Any]) -> str:
    """The template revision of a workload's manifest: a short hash of everything but
    `spec.replicas`, `status`, server fields and dro's own `multicluster.io/` annotations."""
    body = {k: v for k, v in manifest.items() if k != "status"}
    meta = dict(body.get("metadata") or {})
    for name in _SERVER_FIELDS:
        meta.pop(name, None)
    notes = {
        k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(_DRO_PREFIX)
    }
    meta["annotations"] = notes
    body["metadata"] = meta
    spec = body.get("spec")
    if isinstance(spec, Mapping):
        body["spec"] = {k: v for k, v in spec.items() if k != "replicas"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def settings(spec: Spec) -> Callable[[Decision], r.Rollout | None]:
    """The rollout that applies to a decision's workload: its policy's, else dro.yaml's."""
    own = {p.ref: p.placement.rollout for p in spec.placement_policies}

    def setting(decision: Decision) -> r.Rollout | None:
        found = own.get(decision.policy) if decision.policy is not None else None
        return found if found is not None else spec.config.rollout

    return setting


def waves(
    setting: r.Rollout, clusters: Sequence[str], labels: Mapping[str, Mapping[str, str]]
) -> list[tuple[str, tuple[str, ...]]]:
    """The waves over the placed `clusters`, in order, as (name, sorted clusters); empty
    named waves are left out, and the clusters no named wave takes form a last `rest` wave."""
    names = sorted(set(clusters))
    if not setting.waves:
        size = setting.max_clusters
        if size is None:
            percent = setting.max_percent if setting.max_percent is not None else 100.0
            size = max(1, int(len(names) * percent // 100))
        chunks = [tuple(names[i : i + size]) for i in range(0, len(names), size)]
        return [(str(index + 1), chunk) for index, chunk in enumerate(chunks)]
    taken: set[str] = set()
    result: list[tuple[str, tuple[str, ...]]] = []
    for wave in setting.waves:
        members = tuple(c for c in names if c not in taken and wave.matches(c, labels.get(c, {})))
        taken.update(members)
        if members:
            result.append((wave.name, members))
    rest = tuple(c for c in names if c not in taken)
    if rest:
        result.append((r.REST, rest))
    return result


@dataclass(frozen=True, slots=True, kw_only=True)
class _Pass:
    """What one pass knows about one workload's rollout."""

    key: ResourceKey
    setting: r.Rollout
    revision: str
    commit: str
    promote: str | None
    waves: list[tuple[str, tuple[str, ...]]]
    observations: Mapping[str, Observation]
    now: float
    room: int | None = None
    """How many more of the workload's clusters may start the change now (None: no budget)."""

    def approved(self, name: str, status: r.RolloutStatus) -> bool:
        """Whether the wave `name` may start: no approval needed, or promoted by a commit
        after the rollout began (`<wave>`), or for this revision (`<wave>@<revision>`)."""
        wave = next((w for w in self.setting.waves if w.name == name), None)
        if wave is None or not wave.approval:
            return True
        if self.promote == f"{name}@{self.revision}":
            return True
        return self.promote == name and status.promote_at_start != name

    def ready(self, cluster: str, entry: r.ClusterRollout | None) -> tuple[bool, str | None]:
        """(done, healthy since) for a released cluster: observed Healthy with the new
        revision for `soak`, or not observed at all (one wave per pass); an unreachable
        cluster is not done."""
        seen = self.observations.get(cluster)
        if seen is None:
            return True, None
        if seen.stale:  # unreachable: its health is not known
            return False, None
        if not health.has_rollout(self.key.group, self.key.kind):
            return True, None
        status, _ = seen.health.get(self.key, ("Missing", ""))
        if status != "Healthy" or seen.revisions.get(self.key) != self.revision:
            return False, None
        since = entry.healthy_since if entry is not None and entry.healthy_since else None
        since = since or durations.rfc3339(self.now)
        return clock.elapsed(self.now, durations.epoch(since), self.setting.soak), since


def advance(
    spec: Spec,
    decisions: Sequence[Decision],
    previous: Mapping[ResourceKey, Decision],
    observations: Mapping[str, Observation] | None,
    now: float,
    room: Callable[[Decision], int | None] | None = None,
) -> tuple[Decision, ...]:
    """The decisions with their `rollout` advanced by one pass (those without a rollout
    setting unchanged); `room` says how many of a decision's clusters its disruption budget
    lets start a change now (None: no budget)."""
    if spec.config.rollout is None and not any(
        p.placement.rollout for p in spec.placement_policies
    ):
        return tuple(decisions)
    workloads = {w.key: w for w in spec.workloads}
    labels = {c.name: c.labels for c in spec.clusters}
    setting = settings(spec)
    result = []
    for decision in decisions:
        chosen = setting(decision)
        workload = workloads.get(decision.key)
        if chosen is None or workload is None:
            result.append(decision)
            continue
        placed = [p.cluster for p in decision.rendered()]
        state = _Pass(
            key=decision.key,
            setting=chosen,
            revision=revision(workload.manifest),
            commit=spec.source.commit or "",
            promote=_promote(workload),
            waves=waves(chosen, placed, labels),
            observations=observations or {},
            now=now,
            room=room(decision) if room is not None else None,
        )
        before = previous.get(decision.key)
        status = _next(state, before.rollout if before is not None else None)
        same = status == decision.rollout  # the very decision, for a warm render's reuse
        result.append(decision if same else replace(decision, rollout=status))
    return tuple(result)


def _promote(workload: Workload) -> str | None:
    notes = (workload.manifest.get("metadata") or {}).get("annotations") or {}
    value = notes.get(r.PROMOTE_ANNOTATION)
    return str(value) if value is not None else None


def _next(state: _Pass, before: r.RolloutStatus | None) -> r.RolloutStatus:
    if before is None:  # a first placement, or a rollout setting just added: nothing to keep
        return r.RolloutStatus(revision=state.revision, commit=state.commit)
    if before.revision != state.revision:
        return _start(state, before)
    if not before.in_progress:
        return before
    return _continue(state, before)


def _held(before: r.RolloutStatus, cluster: str) -> tuple[str, str]:
    """The (revision, commit) a cluster runs after the last pass."""
    entry = before.cluster(cluster)
    if entry is not None:
        return entry.revision, entry.commit
    if before.in_progress and before.previous is not None:
        return before.previous, before.previous_commit or before.commit
    return before.revision, before.commit


def _start(state: _Pass, before: r.RolloutStatus) -> r.RolloutStatus:
    """A new revision: a rollout from what each cluster runs, wave 1 released if it may."""
    entries = []
    for number, (_, members) in enumerate(state.waves, start=1):
        for cluster in members:
            revision, commit = _held(before, cluster)
            entries.append(
                r.ClusterRollout(
                    cluster=cluster,
                    wave=number,
                    state=r.WAITING,
                    revision=revision,
                    commit=commit,
                    from_revision=revision,
                    from_commit=commit,
                )
            )
    began = durations.rfc3339(state.now)
    status = r.RolloutStatus(
        revision=state.revision,
        commit=state.commit,
        phase=r.PROGRESSING,
        previous=before.revision if not before.in_progress else before.previous,
        previous_commit=before.commit if not before.in_progress else before.previous_commit,
        waves=len(state.waves),
        wave_names=tuple(name for name, _ in state.waves),
        started_at=began,
        clusters=tuple(sorted(entries, key=lambda e: e.cluster)),
        promote_at_start=state.promote,
    )
    if all(e.from_revision == state.revision for e in entries):
        return _complete(status)
    return _release(state, status)


def _release(state: _Pass, status: r.RolloutStatus) -> r.RolloutStatus:
    """Release the next wave (or wait for its approval, or complete after the last)."""
    number = status.wave + 1
    if number > status.waves:
        return _complete(status)
    name = status.wave_name(number)
    if not state.approved(name, status):
        return replace(
            status,
            phase=r.AWAITING_APPROVAL,
            message=f"wave {name} waits for approval: set the annotation "
            f"{r.PROMOTE_ANNOTATION}: {name} on the workload",
        )
    released = replace(status, phase=r.PROGRESSING, wave=number, message=None)
    if all(c.from_revision == state.revision for c in status.clusters if c.wave == number):
        return _release(state, released)  # nothing changes there: on to the next wave
    return _admit(state, released)


def _admit(state: _Pass, status: r.RolloutStatus) -> r.RolloutStatus:
    """Start the wave in flight on its clusters not yet started, as many as `room` allows
    (all without a budget), in name order; the others wait for a later pass."""
    pending = [c for c in status.clusters if c.wave == status.wave and c.revision != state.revision]
    take = len(pending) if state.room is None else min(len(pending), state.room)
    chosen = {c.cluster for c in pending[:take]}
    clusters = tuple(
        replace(c, state=r.UPDATING, revision=state.revision, commit=state.commit)
        if c.cluster in chosen
        else c
        for c in status.clusters
    )
    waiting = len(pending) - take
    message = (
        f"wave {status.wave_name(status.wave)}: {waiting} "
        f"{'cluster waits' if waiting == 1 else 'clusters wait'} for the disruption budget"
        if waiting
        else None
    )
    started = durations.rfc3339(state.now) if chosen else status.wave_started_at
    return replace(status, clusters=clusters, message=message, wave_started_at=started)


def _complete(status: r.RolloutStatus) -> r.RolloutStatus:
    return r.RolloutStatus(revision=status.revision, commit=status.commit)


def _continue(state: _Pass, before: r.RolloutStatus) -> r.RolloutStatus:
    """The same revision as the last pass: the wave in flight is checked, or an approval."""
    status = _regroup(state, before)
    if status.phase == r.ROLLED_BACK:
        return status
    if status.phase == r.AWAITING_APPROVAL:
        return _release(state, status)
    updated, done = [], True
    for entry in status.clusters:
        if entry.wave != status.wave or entry.revision != state.revision:
            updated.append(entry)
            continue
        ready, since = state.ready(entry.cluster, entry)
        done = done and ready
        waiting = r.FAILED if status.phase == r.PAUSED else r.UPDATING
        stage = r.UPDATED if ready else (r.SOAKING if since else waiting)
        updated.append(replace(entry, state=stage, healthy_since=since))
    status = replace(status, clusters=tuple(updated))
    if done and any(c.wave == status.wave and c.revision != state.revision for c in updated):
        return _admit(state, replace(status, phase=r.PROGRESSING))  # the wave's next batch
    if done:
        return _release(state, replace(status, phase=r.PROGRESSING, message=None))
    started = durations.epoch(status.wave_started_at or durations.rfc3339(state.now))
    if status.phase == r.PAUSED or clock.within(state.now, started, state.setting.health_timeout):
        return status
    return _fail(state, status)


def _fail(state: _Pass, status: r.RolloutStatus) -> r.RolloutStatus:
    """The wave in flight was not Healthy within healthTimeout: pause, or roll it back."""
    name = status.wave_name(status.wave)
    timeout = durations.short(state.setting.health_timeout)
    failed = [c.cluster for c in status.clusters if c.wave == status.wave and c.state != r.UPDATED]
    if state.setting.on_failure == "Rollback":
        clusters = tuple(
            replace(
                c,
                state=r.ROLLED_BACK_CLUSTER,
                revision=c.from_revision,
                commit=c.from_commit,
                healthy_since=None,
            )
            if c.wave == status.wave
            else c
            for c in status.clusters
        )
        return replace(
            status,
            phase=r.ROLLED_BACK,
            clusters=clusters,
            message=f"wave {name} was not Healthy within {timeout} on {', '.join(failed)}: "
            "its clusters run the previous template again",
        )
    clusters = tuple(
        replace(c, state=r.FAILED) if c.cluster in failed else c for c in status.clusters
    )
    return replace(
        status,
        phase=r.PAUSED,
        clusters=clusters,
        message=f"wave {name} was not Healthy within {timeout} on {', '.join(failed)}: "
        "paused (it goes on once they are Healthy, or with a new change)",
    )


def _regroup(state: _Pass, before: r.RolloutStatus) -> r.RolloutStatus:
    """The last pass's rollout over this pass's placed clusters: a cluster that left is
    dropped, one that joined takes its wave (the new template if that wave was released)."""
    entries = []
    for number, (_, members) in enumerate(state.waves, start=1):
        for cluster in members:
            entry = before.cluster(cluster)
            if entry is None:
                revision, commit = _held(before, cluster)
                released = number <= before.wave and before.phase != r.ROLLED_BACK
                entry = r.ClusterRollout(
                    cluster=cluster,
                    wave=number,
                    state=r.UPDATING if released else r.WAITING,
                    revision=state.revision if released else revision,
                    commit=state.commit if released else commit,
                    from_revision=revision,
                    from_commit=commit,
                )
            entries.append(replace(entry, wave=number))
    return replace(
        before,
        waves=len(state.waves),
        wave_names=tuple(name for name, _ in state.waves),
        clusters=tuple(sorted(entries, key=lambda e: e.cluster)),
    )


def in_force(decision: Decision, cluster: str) -> tuple[str, str] | None:
    """(revision, source commit) of the template a cluster keeps while a rollout has not
    reached it; None when it gets the source's own template."""
    status = decision.rollout
    if status is None or not status.in_progress:
        return None
    entry = status.cluster(cluster)
    if entry is None or entry.revision == status.revision:
        return None
    return entry.revision, entry.commit
