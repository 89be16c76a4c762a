"""`dro simulate TRACE`: what-if replay of a trace for several policies, one table out.

stdout holds only the table (`-o table`: rich on a terminal, plain columns when piped) or the
document (`-o json|yaml`); progress goes to stderr. A bad trace exits 1 with each problem as
`FILE:LINE: POINTER: MESSAGE` (raised as `ValidationFailed`, reported by `cli.main`).

Called by `cli`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from reconciler import simulate
from reconciler.cli import habits as clihabits
from reconciler.cli import report
from reconciler.errors import UsageError
from reconciler.review import tables
from reconciler.simulate import chart, policies


def add_parser(commands: Any) -> None:
    """The `simulate` subcommand's arguments."""
    sim = commands.add_parser(
        "simulate",
        help="replay a trace for several policies and compare them",
        description="Replay a trace (a source repo at step 0 plus usage, replicas and "
        "cluster events over time) through dro's scheduler, in memory, for several policies, "
        "and print one table: overload events, peak water level, pending replica-steps, "
        "replicas moved without a scale change, water-level spread, cost and cross-domain "
        "bytes.",
    )
    sim.add_argument("trace", type=Path, metavar="TRACE", help="the trace file (kind Trace)")
    sim.add_argument(
        "--policies",
        metavar="LIST",
        help=f"comma-separated, from {', '.join(policies.ALL)} "
        f"(default: {','.join(policies.POLICIES)})",
    )
    sim.add_argument(
        "-o",
        "--output",
        choices=clihabits.OUTPUTS,
        default="table",
        help="json, yaml or table (one row per policy; the default)",
    )
    sim.add_argument(
        "--plot", type=Path, metavar="FILE", help="also draw water levels over time to FILE.svg|png"
    )
    sim.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="replay N policies at once, in forked processes (default: one per core)",
    )
    sim.add_argument(
        "--timings",
        action="store_true",
        help="add the seconds per step of each policy (varies from run to run)",
    )


HEADERS = (
    ("policy", "policy"),
    ("overloadEvents", "overload"),
    ("peakWaterLevel", "peak WL"),
    ("pendingReplicaSteps", "pending"),
    ("movedReplicas", "moved"),
    ("movedPercent", "moved %"),
    ("waterLevelSpread", "spread"),
    ("cost", "cost"),
    ("crossDomainBytes", "cross-domain"),
)


def grid(result: simulate.Result, *, timings: bool = False) -> tables.Grid:
    """The result as `-o table` prints it: one row per policy."""
    headers = [label for _, label in HEADERS]
    keys = [key for key, _ in HEADERS]
    if any("forecastMape" in r for r in result.rows):
        headers.append("forecast MAPE")
        keys.append("forecastMape")
    if timings:
        headers.append("s/step")
    rows = []
    for row in result.rows:
        cells = [_cell(key, row.get(key)) for key in keys]
        if timings:
            cells.append(f"{result.timings[row['policy']]['secondsPerStep']:.3f}")
        rows.append(tuple(cells))
    forecast = result.forecast
    naive = forecast.get("seasonalNaiveMape")
    title = f"{result.trace.name}: {result.trace.steps} steps"
    if naive is not None:
        title += f"; seasonal-naive forecast MAPE {naive:.1%}"
    return tables.Grid(
        title=title,
        headers=tuple(headers),
        rows=tuple(rows),
        right=frozenset(range(1, len(headers))),
    )


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "policy":
        return str(value)
    if key in ("peakWaterLevel", "waterLevelSpread"):
        return f"{value:.2f}"
    if key == "movedPercent":
        return f"{value:.2f}"
    if key == "forecastMape":
        return f"{value:.1%}"
    if key == "cost":
        return f"{value:,.2f}"
    if key == "crossDomainBytes":
        return _bytes(float(value))
    return f"{value:,}"


def _bytes(value: float) -> str:
    for unit, size in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def run(args: argparse.Namespace, hook: Any) -> int:
    """Replay the trace and print the comparison."""
    del hook  # the progress lines below say where the run stands
    names = simulate.choose(args.policies)
    if args.plot is not None:
        chart.check(args.plot)

    def progress(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(line + "\n")

    if args.jobs < 0:
        raise UsageError("--jobs must be 0 (one per core) or more")
    jobs = args.jobs or os.cpu_count() or 1
    result = simulate.run(args.trace, names, progress, jobs=jobs)
    if args.output == "table":
        tables.render(grid(result, timings=args.timings), sys.stdout)
    else:
        report.write_document(simulate.document(result, timings=args.timings), args.output)
    if args.plot is not None:
        simulate.plot(result, args.plot)
        sys.stderr.write(f"wrote the water-level chart to {args.plot}\n")
    return 0
