"""Reporting: structlog configuration and the human-facing tables and problem lists.

Events are JSON lines on stderr with stable snake_case names and `stage=` bound. Tables for
people use rich, which prints plain text when the output is not a terminal. A logged
traceback carries its frames' file, line and function, never their local variables (a frame
may hold a token or a Secret's data), and every event passes `redact.scrub_event` last.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

import structlog
from rich.console import Console
from rich.table import Table

from reconciler import redact, summary
from reconciler.apply import ClusterSync
from reconciler.domain import Decision, Placed
from reconciler.domain.decision import CUT_OVER, DONE, PROVISIONING, SYNCING
from reconciler.errors import Problem

TRACEBACKS = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False, use_rich=False)
)
"""Exceptions as structured frames (file, line, function), without frame locals: structlog's
own `dict_tracebacks` shows them, and a crashed pass would log `Credentials(...)`, the
webhook secret or a Secret's data that way."""


def configure_logging(*, verbose: bool = False, stream: TextIO | None = None) -> None:
    """JSON events to stderr (or `stream`); info and up when verbose, warnings and up
    otherwise. Values bound with `structlog.contextvars` (a pass's source sha) join every
    event. Tracebacks carry no locals, and URL credentials are removed from every field."""
    level = logging.INFO if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            TRACEBACKS,
            redact.scrub_event,
            structlog.processors.JSONRenderer(sort_keys=True),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # sys.stderr is looked up per logger, not once: a replaced stream (a test's capture,
        # a closed terminal) must not keep receiving events.
        logger_factory=lambda *_: structlog.PrintLogger(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def print_problems(problems: Iterable[Problem], out: TextIO) -> None:
    """One `FILE:LINE: POINTER: MESSAGE` line per problem, in sorted order."""
    for problem in sorted(problems, key=lambda p: p.sort_key):
        out.write(f"{problem}\n")


MATRIX_COLUMNS = 12
"""Fleets up to this many clusters get one column per cluster; larger ones a list per row."""


def placement_table(decisions: Sequence[Decision], clusters: Sequence[str]) -> Table:
    """Replicas per workload and cluster, ✓ for objects without replicas.

    A small fleet is a workloads × clusters matrix; beyond `MATRIX_COLUMNS` clusters each row
    lists its clusters as `name=replicas`, which stays readable at any fleet size.
    """
    table = Table(title="placements", show_lines=False)
    table.add_column("workload", no_wrap=True)
    matrix = len(clusters) <= MATRIX_COLUMNS
    for name in clusters if matrix else ("replicas", "clusters"):
        table.add_column(name, justify="right" if matrix or name == "replicas" else "left")
    for decision in decisions:
        label = str(decision.key)
        if decision.unschedulable:
            label += " [red](unschedulable)[/red]"
        if not matrix:
            counts = [decision.effective.get(p.cluster, p.replicas) for p in decision.clusters]
            total = "-" if None in counts else str(sum(c or 0 for c in counts))
            listed = " ".join(
                p.cluster
                if p.replicas is None
                else f"{p.cluster}={summary.replicas_label(decision, p.cluster, p.replicas)}"
                for p in decision.clusters
            )
            table.add_row(label, total, listed or "·")
            continue
        by_cluster = {p.cluster: p.replicas for p in decision.clusters}
        cells = []
        for name in clusters:
            if name not in by_cluster:
                cells.append("·")
            else:
                cells.append(summary.replicas_label(decision, name, by_cluster[name]))
        table.add_row(label, *cells)
    return table


def apply_table(clusters: Sequence[ClusterSync]) -> Table:
    """Per cluster: objects applied, unchanged, pruned, drifted and failed, and the writes."""
    table = Table(title="apply")
    for name in ("cluster", "applied", "unchanged", "pruned", "drifted", "failed", "writes"):
        table.add_column(name, justify="left" if name == "cluster" else "right")
    for sync in clusters:
        label = sync.cluster if sync.reachable else f"{sync.cluster} [red](unreachable)[/red]"
        failed = len(sync.failed) + len(sync.rejected)
        counts = (sync.applied, sync.unchanged, sync.pruned, len(sync.drifted), failed)
        table.add_row(label, *(str(n) for n in counts), str(sync.writes))
    return table


def apply_details(clusters: Sequence[ClusterSync]) -> list[str]:
    """One line per drift corrected, failure and protected object, naming the cluster."""
    lines = []
    for sync in clusters:
        lines += [f"{sync.cluster}: drift corrected: {line}" for line in sync.drifted]
        lines += [f"{sync.cluster}: failed: {line}" for line in sync.failed]
        lines += [f"{sync.cluster}: not applied: {line}" for line in sync.rejected]
        lines += [f"{sync.cluster}: kept (not dro's to delete): {line}" for line in sync.released]
        lines += [f"{sync.cluster}: kept (deletion-protected): {ref}" for ref in sync.protected]
    return lines


def find_decision(decisions: Iterable[Decision], wanted: str) -> Decision | None:
    """The decision for `NAMESPACE/KIND/NAME` (KIND with or without its group; a
    cluster-scoped object as `_cluster/KIND/NAME` or `KIND/NAME`)."""
    parts = wanted.split("/")
    if len(parts) == 2:
        parts = ["", *parts]
    if len(parts) != 3:
        return None
    namespace, kind, name = parts
    namespace = "" if namespace == "_cluster" else namespace
    kind_name, _, group = kind.partition(".")
    for decision in decisions:
        key = decision.key
        if (key.namespace, key.name) != (namespace, name):
            continue
        if key.kind.lower() == kind_name.lower() and (not group or group == key.group):
            return decision
    return None


_WAITING = {
    PROVISIONING: "until the new copy on {target} is Healthy",
    SYNCING: "until the data is in sync on {target} (the data-sync hook Job completes, or the "
    "copy there is annotated multicluster.io/data-synced)",
    CUT_OVER: "the old copy is scaled to zero, its volumes kept, until {source} shows it down",
    DONE: "the old copy on {source} is removed",
}


def move_line(decision: Decision, entry: Placed) -> str:
    """`dro explain`'s line for a stateful move in flight: its phase and what it waits for."""
    target = decision.clusters[0].cluster if decision.clusters else "?"
    waiting = _WAITING.get(str(entry.phase), "").format(source=entry.cluster, target=target)
    return f"moving whole {entry.cluster} → {target}: {entry.phase} since {entry.since}; {waiting}"


def explanation(decision: Decision) -> list[object]:
    """The header lines and the per-cluster table `dro explain` prints."""
    diagnosis = decision.diagnosis
    replicas = {p.cluster: p.replicas for p in decision.clusters}
    weights = ", ".join(f"{name} {value:g}" for name, value in diagnosis.weights.items())
    lines: list[object] = [
        f"[bold]{decision.key}[/bold]  policy: {decision.policy or 'default placement'}",
        f"strategy: {diagnosis.strategy}   trigger: {diagnosis.trigger}   "
        f"fleet water level: {diagnosis.fleet_water_level:.2f}",
        f"weights: {weights or '(none)'}",
    ]
    if decision.unschedulable:
        lines.append(f"[red]unschedulable:[/red] {decision.unschedulable}")
    for move in decision.moves:
        lines.append(
            f"moved {move.replicas} replica(s) {move.source} → {move.target} at {move.at}: "
            f"{move.reason}"
        )
    entry = decision.moving
    if entry is not None:
        lines.append(move_line(decision, entry))
    elif decision.retiring:
        still = ", ".join(f"{p.cluster} {p.replicas}" for p in decision.retiring)
        lines.append(f"retiring (old copies kept until the new ones are up): {still}")
    scorers = list(diagnosis.weights)
    table = Table(show_lines=False)
    for column in ("cluster", "verdict", *scorers, "total", "replicas"):
        table.add_column(column, justify="left" if column in ("cluster", "verdict") else "right")
    for verdict in diagnosis.verdicts:
        shown = (
            summary.replicas_label(decision, verdict.cluster, replicas[verdict.cluster])
            if verdict.cluster in replicas
            else "—"
        )
        if verdict.rejected_by is not None:
            cells = ["" for _ in scorers]
            table.add_row(
                verdict.cluster, f"{verdict.rejected_by}: {verdict.reason}", *cells, "", shown
            )
            continue
        scores = [f"{verdict.scores.get(name, 0.0):.1f}" for name in scorers]
        table.add_row(verdict.cluster, "feasible", *scores, f"{verdict.total_score:.1f}", shown)
    lines.append(table)
    return lines


def console(out: TextIO) -> Console:
    """A rich console on `out`; colour only when it is a terminal."""
    return Console(file=out, soft_wrap=False, width=None if out.isatty() else 200)
