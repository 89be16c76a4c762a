"""Reporting: structlog configuration and the human-facing tables and problem lists.

Events are JSON lines on stderr with stable snake_case names and `stage=` bound. Tables for
people use rich, which prints plain text when the output is not a terminal.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

import structlog
from rich.console import Console
from rich.table import Table

from reconciler.domain import Decision
from reconciler.errors import Problem


def configure_logging(*, verbose: bool = False, stream: TextIO | None = None) -> None:
    """JSON events to stderr; info and up when verbose, warnings and up otherwise."""
    level = logging.INFO if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(sort_keys=True),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def print_problems(problems: Iterable[Problem], out: TextIO) -> None:
    """One `FILE:LINE: POINTER: MESSAGE` line per problem, in sorted order."""
    for problem in sorted(problems, key=lambda p: p.sort_key):
        out.write(f"{problem}\n")


def placement_table(decisions: Sequence[Decision], clusters: Sequence[str]) -> Table:
    """A clusters × workloads table: replicas per cell, ✓ for objects without replicas."""
    table = Table(title="placements", show_lines=False)
    table.add_column("workload", no_wrap=True)
    for name in clusters:
        table.add_column(name, justify="right")
    for decision in decisions:
        by_cluster = {p.cluster: p.replicas for p in decision.clusters}
        cells = []
        for name in clusters:
            if name not in by_cluster:
                cells.append("·")
            else:
                replicas = by_cluster[name]
                cells.append("✓" if replicas is None else str(replicas))
        label = str(decision.key)
        if decision.unschedulable:
            label += " [red](unschedulable)[/red]"
        table.add_row(label, *cells)
    return table


def console(out: TextIO) -> Console:
    """A rich console on `out`; colour only when it is a terminal."""
    return Console(file=out, soft_wrap=False, width=None if out.isatty() else 200)
