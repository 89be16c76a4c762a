"""`dro plan`: the pull-request review of placements and manifests between two refs.

Exit codes: 0 no differences (or differences without `--exit-code`), 2 differences with
`--exit-code`, 1 an error, including an invalid head (the report still says why, with each
problem's `FILE:LINE`).

Called by `cli`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from reconciler import load, pipeline, review, settings, yamlio
from reconciler.cli import habits as clihabits
from reconciler.cli import report
from reconciler.review import chart, planreport, planterminal
from reconciler.validate import guard

DIFFERENCES = 2
OPTIONS = (
    dataclasses.replace(
        settings.TABLE["repo"],
        default=".",
        help="the source repository: a local path, opened in place so any revision resolves, "
        "or a URL",
    ),
    dataclasses.replace(
        settings.TABLE["output-branch"],
        help="where the last decisions and observations are read from (a local branch or "
        "origin/<branch>)",
    ),
    *settings.pick("state-dir", "git-credentials-file", "guard"),
)
"""The settings of `dro plan`, from the one table: here the repository is the working one."""
FORMATS = ("markdown", "json", "yaml", "text", "table")
"""`-o`: every command's json, yaml and table (here the same as text), and markdown."""


def add_parser(commands: Any) -> None:
    """The `plan` subcommand's arguments."""
    plan = commands.add_parser(
        "plan",
        help="review a change: placement and manifest diffs between two refs",
        description="Schedule and render two refs of the source repository offline, from the "
        "output branch's last observations, and show what merging the head changes: replicas "
        "per cluster and why, (un)schedulable workloads, clusters added or removed, water "
        "levels, and a diff of every rendered manifest (Secret values redacted).",
    )
    plan.add_argument("--base", required=True, help="the ref merged into, e.g. origin/main")
    plan.add_argument("--head", default="HEAD", help="the ref under review (default: HEAD)")
    clihabits.add_settings(plan, OPTIONS[:2], convert=True)
    plan.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default=None,
        help="markdown (a pull-request comment), json, yaml, or text (colour; also called "
        "table); default: text on a terminal, markdown otherwise",
    )
    plan.add_argument("--chart", type=Path, help="also draw the water levels to FILE.svg|png")
    plan.add_argument("--exit-code", action="store_true", help="exit 2 when there are differences")
    clihabits.add_settings(plan, OPTIONS[2:], convert=True)


def run(args: argparse.Namespace, hook: pipeline.StageHook) -> int:
    """Plan both refs, print the review in the chosen format, and return the exit code."""
    ceiling = args.guard or guard.BUILTIN
    diff = review.plan_review(
        args.repo,
        args.base,
        args.head,
        output_branch=args.output_branch,
        state_dir=args.state_dir,
        credentials=load.credentials_from(
            args.git_credentials_file, otherwise=settings.git_credentials()
        ),
        on_stage=hook,
        ceiling=ceiling,
    )
    output = args.output or ("text" if sys.stdout.isatty() else "markdown")
    if output == "json":
        sys.stdout.write(json.dumps(planreport.document(diff), indent=2) + "\n")
    elif output == "yaml":
        sys.stdout.write(yamlio.dump(planreport.document(diff)))
    elif output == "markdown":
        sys.stdout.write(planreport.markdown(diff))
    else:
        console = report.console(sys.stdout)
        for item in planterminal.terminal(diff, console):
            console.print(item)
    if args.chart is not None:
        chart.write(diff, args.chart)
        sys.stderr.write(f"wrote the water-level chart to {args.chart}\n")
    if not diff.head.valid:
        return 1
    return DIFFERENCES if args.exit_code and diff.differs else 0
