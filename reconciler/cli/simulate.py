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
from reconciler.domain import durations
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
    ("peakWaterLevel", "peak"),
    ("pendingReplicaSteps", "pending"),
    ("movedReplicas", "moved"),
    ("movedPercent", "moved %"),
    ("waterLevelSpread", "spread"),
    ("cost", "cost"),
    ("crossDomainBytes", "cross-domain"),
    ("forecastMape", "MAPE"),
)
NARROW = (
    "policy",
    "overloadEvents",
    "peakWaterLevel",
    "pendingReplicaSteps",
    "movedPercent",
    "cost",
)
"""The columns kept on a terminal too narrow for the whole table."""


def grid(result: simulate.Result, *, timings: bool = False) -> tables.Grid:
    """The result as `-o table` prints it: one row per policy. Cross-domain bytes show when a
    workload uses data, the forecast error when a policy forecast."""
    shown = [
        (key, label)
        for key, label in HEADERS
        if not (key == "crossDomainBytes" and not result.uses_data)
        and not (key == "forecastMape" and all(r.get(key) is None for r in result.rows))
    ]
    if timings:
        shown.append(("secondsPerStep", "s/step"))
    rows = []
    for row in result.rows:
        values = {**row, **result.timings[row["policy"]]}
        rows.append(tuple(_cell(key, values.get(key)) for key, _ in shown))
    narrow = [i for i, (key, _) in enumerate(shown) if key in NARROW]
    title = (
        f"{result.trace.name}: {result.trace.steps} steps of {durations.short(result.trace.step)}"
    )
    return tables.Grid(
        title=title,
        headers=tuple(label for _, label in shown),
        rows=tuple(rows),
        right=frozenset(range(1, len(shown))),
        narrow=tables.Grid(
            title=title,
            headers=tuple(shown[i][1] for i in narrow),
            rows=tuple(tuple(r[i] for i in narrow) for r in rows),
            right=frozenset(range(1, len(narrow))),
        ),
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
    if key == "secondsPerStep":
        return f"{value:.3f}"
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
