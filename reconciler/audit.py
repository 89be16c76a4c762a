"""The narration of a pass for operators: one function per stage result, each logging the
events a collector or a person reads (`source_loaded`, `planned`, `committed`, `applied`, and
the `audit` trail of every commit, push and cluster write).

Called by `pipeline`, `pipeline.clusters`, `pipeline.publishing` and `pipeline.sharded`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import structlog

from reconciler import commit, live
from reconciler.domain import Decision, Source
from reconciler.git import gitrepo
from reconciler.live.outcome import ClusterSync

log = structlog.get_logger("dro")


def loaded(stage: str, source: Source, previous: Sequence[Decision], *, follow_up: bool) -> None:
    """The source was read, and the last pass's decisions with it."""
    log.info(
        "source_loaded",
        stage=stage,
        source=source.commit,
        files=len(source.files),
        previous_decisions=len(previous),
        follow_up=follow_up,
    )


def idle(stage: str, source: Source, tip: str | None) -> None:
    """An idle pass: the same source, output branch and settings as a pass that changed
    nothing, before the first instant its decisions wait for, and online the clusters as it
    saw them: the pass stops after loading (offline) or applies that pass's tree again
    (online, after observing: `stage`), without validate, schedule, render or commit
    (`pipeline.idle`)."""
    log.info(
        "pass_idle",
        stage=stage,
        source=source.commit,
        output=tip,
        reason="nothing changed since a pass that changed nothing",
    )


def removed_clusters(stage: str, warnings: Iterable[str]) -> None:
    """Clusters that left the source while the last pass still placed replicas on them."""
    for warning in warnings:
        log.warning("cluster_removed_with_replicas", stage=stage, detail=warning)


def planned(
    stage: str,
    source: Source,
    decisions: Sequence[Decision],
    tree: Mapping[str, bytes],
    unreachable: Iterable[str],
) -> None:
    """The pure stages are done: how many decisions and files, and which clusters were down."""
    log.info(
        "planned",
        stage=stage,
        source=source.commit,
        decisions=len(decisions),
        files=len(tree),
        unreachable=sorted(unreachable),
    )


def published(
    stage: str, source: Source, done: commit.PublishResult, *, branch: str, repo: str
) -> None:
    """The commit stage's result, and the audit trail of the commit and of its push."""
    log.info(
        "committed",
        stage=stage,
        source=source.commit,
        commit=done.commit,
        pushed=done.pushed,
    )
    if done.commit is None:
        return
    who = {"source": source.commit, "author": source.author}
    log.info("audit", action="commit", branch=branch, commit=done.commit, **who)
    if done.pushed:
        log.info(
            "audit",
            action="push",
            branch=branch,
            commit=done.commit,
            remote=gitrepo.redact(repo),
            **who,
        )


def apply_skipped(stage: str, reason: str | None) -> None:
    """An online pass applied nothing, and why (none said when the pass ran offline)."""
    if reason:
        log.warning("apply_skipped", stage=stage, reason=reason)


def applied(stage: str, source: Source, done: live.Applied) -> None:
    """Each cluster's apply report, and the audit trail of every write to it."""
    for cluster in done.clusters:
        log.info("applied", stage=stage, **_fields(cluster))
        for write in cluster.written:
            log.info(
                "audit",
                action=write.code.action,
                cluster=cluster.cluster,
                object=write.key.brief,
                source=source.commit,
                author=source.author,
            )


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
