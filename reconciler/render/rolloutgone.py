"""Rollouts whose template in force comes from a source commit that is gone (a force-push, a
garbage collection): the clusters not yet reached must never get the new template silently.

A cluster a rollout has not reached keeps the template of the commit that last finished a
rollout (`rollout.in_force`). When `templates` cannot give that commit's manifest, the cluster
keeps its object as the output branch last rendered it (`kept`: the file at its path, when it
carries the revision in force), the decision's `status.rollout.message` and a warning event
say so, and the rollout goes on from there: a wave reached later gets the new template as
usual. When a cluster has no such object either, the workload fails for this pass: an error
event names the commit, and the workload keeps the last pass's decision, so that nothing of
it changes (`render.tree` renders the same kept objects again).

Called by `pipeline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import structlog

from reconciler import yamlio
from reconciler.branch import paths
from reconciler.domain import Decision, ResourceKey
from reconciler.domain import rollout as rollouts
from reconciler.render import Kept, Templates, rollout
from reconciler.yamlio import YamlError

log = structlog.get_logger("dro")


def anchored(
    decisions: Sequence[Decision],
    previous: Mapping[ResourceKey, Decision],
    templates: Templates | None,
    kept: Kept | None,
) -> tuple[Decision, ...]:
    """`decisions` with every rollout whose template in force is gone anchored to the objects
    last rendered (a message in `status.rollout`), or back to the last pass's decision when
    those are not there either. Without `templates` (nothing reads earlier commits: `dro
    render`, `dro plan`) nothing changes."""
    if templates is None:
        return tuple(decisions)
    return tuple(
        d if d.rollout is None else _anchored(d, previous, templates, kept) for d in decisions
    )


def _anchored(
    decision: Decision,
    previous: Mapping[ResourceKey, Decision],
    templates: Templates,
    kept: Kept | None,
) -> Decision:
    status = decision.rollout
    if status is None or not status.in_progress:
        return decision
    gone: dict[str, list[str]] = {}  # commit → clusters that keep its template
    revisions: dict[str, str] = {}
    for placed in decision.rendered():
        force = rollout.in_force(decision, placed.cluster)
        if force is not None and templates(force[1], decision.key) is None:
            gone.setdefault(force[1], []).append(placed.cluster)
            revisions[placed.cluster] = force[0]
    if not gone:
        return decision
    for commit, clusters in sorted(gone.items()):
        for cluster in clusters:
            if not _rendered_at(kept, cluster, decision.key, revisions[cluster]):
                log.error(
                    "rollout_template_missing",
                    workload=str(decision.key),
                    commit=commit,
                    cluster=cluster,
                    error=f"{decision.key}: the rollout's template commit {commit} is gone "
                    f"and the output branch has no object of revision {revisions[cluster]} "
                    f"on {cluster}: the workload is left as the last pass rendered it (push "
                    "the commit back, or remove the rollout setting to render the new "
                    "template everywhere)",
                )
                before = previous.get(decision.key)
                return before if before is not None else decision
    said = "; ".join(
        f"the template of commit {commit[:12]} is gone: {', '.join(sorted(clusters))} keep "
        "the objects last rendered"
        for commit, clusters in sorted(gone.items())
    )
    for commit, clusters in sorted(gone.items()):
        log.warning(
            "rollout_template_gone",
            workload=str(decision.key),
            commit=commit,
            clusters=sorted(clusters),
        )
    message = said if not status.message else f"{status.message}; {said}"
    return replace(decision, rollout=replace(status, message=message))


def _rendered_at(kept: Kept | None, cluster: str, key: ResourceKey, revision: str) -> bool:
    """Whether the output branch holds the workload's object on `cluster` at `revision`."""
    path = paths.object_path(cluster, key)
    data = kept(path) if kept is not None else None
    if data is None:
        return False
    try:
        documents = yamlio.parse_documents(path, data)
    except YamlError:
        return False
    for document in documents:
        notes = (document.body.get("metadata") or {}).get("annotations") or {}
        if notes.get(rollouts.REVISION_ANNOTATION) == revision:
            return True
    return False
