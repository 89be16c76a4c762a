"""Commit: the planned tree as one commit on the output branch, pushed unless `--no-push`.

Called by `pipeline`.
"""

from __future__ import annotations

from reconciler import audit, commit, load
from reconciler.branch import status
from reconciler.commit import describe as commitmessage
from reconciler.domain import Decision, Source, fence
from reconciler.laststate import LastPass
from reconciler.settings import Settings


def committed(
    settings: Settings,
    source: Source,
    before: LastPass,
    tree: dict[str, bytes],
    decisions: tuple[Decision, ...],
    *,
    observed: bool,
    now: float,
    fenced: fence.Fence,
    writers: commit.Writers | None = None,
    stage: str,
) -> commit.PublishResult:
    """Commit: the tree as one commit on the output branch, pushed unless `--no-push`, and
    told to the operators (`audit.published`, under `stage`). `observed` says whether the
    clusters' figures came from their APIs this pass; `writers` are the process's tree
    writers (`pipeline.Warm.commit`)."""
    assert settings.repo is not None
    published = commit.publish(
        settings.repo,
        settings.state_dir,
        branch=settings.output_branch,
        tree=tree,
        source_sha=source.commit,
        commit_time=source.commit_time,
        push=settings.push,
        observations=status.observations_digest(tree) if observed else "declared",
        hold=before.held_status(tree, now, settings.status_interval),
        author=(settings.author_name, settings.author_email),
        credentials=load.credentials_from(
            settings.credentials_file, otherwise=settings.environment_credentials
        ),
        summary=lambda: commitmessage.compose(
            before=before.decisions,
            after=decisions,
            state=before.files,
            tree=tree,
            source=source.commit,
            compared=writers.compared if writers is not None else None,
        ),
        fenced=fenced,
        writers=writers,
    )
    audit.published(stage, source, published, branch=settings.output_branch, repo=settings.repo)
    return published
