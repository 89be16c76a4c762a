"""`dro audit`: the REST API's writes, read back from git history.

Each write the API made is a commit whose trailers name the caller and the request
(`service.api.trail`); this lists them, oldest first: when, who, the request, the commit, the
policy, and the branch (the source branch, or a `dro-api/…` review branch not merged yet).
stdout holds only the table (`-o table`) or the document (`-o json|yaml`).

Called by `cli`.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from reconciler import load, settings
from reconciler.cli import habits as clihabits
from reconciler.cli import report
from reconciler.domain import durations
from reconciler.review import tables
from reconciler.service.api import trail

OPTIONS = settings.pick("repo", "ref", "state-dir", "git-credentials-file")
"""Where the history is: `--repo` (else the repository holding the current directory)."""


def add_parser(commands: Any) -> None:
    """The `audit` subcommand's arguments."""
    audit = commands.add_parser(
        "audit",
        help="list the REST API's writes from git history",
        description="List the commits the REST API made (from their Dro-Api-Caller and "
        "Dro-Api-Request trailers), oldest first: time, caller, request, commit, policy, and "
        "the dro-api/ review branch of a write not merged yet. Reads the repository holding "
        "the current directory unless --repo names one.",
    )
    clihabits.add_settings(audit, OPTIONS, convert=True)
    audit.add_argument(
        "--since",
        metavar="WHEN",
        help="only writes at or after WHEN: an ISO date or time (2026-11-24, "
        "2026-11-24T10:00:00Z; UTC unless it says) or a duration back from now (24h, 7d)",
    )
    audit.add_argument(
        "-o",
        "--output",
        choices=clihabits.OUTPUTS,
        default="table",
        help="json, yaml or table (one row per write; the default)",
    )


def run(args: argparse.Namespace, _hook: Any) -> int:
    """Print the API's writes; exit 0 (an empty trail is not an error)."""
    since = trail.since(args.since, time.time())
    credentials = load.credentials_from(
        args.git_credentials_file, otherwise=settings.git_credentials()
    )
    found = trail.read(args.repo, args.ref, args.state_dir, since=since, credentials=credentials)
    if args.output != "table":
        report.write_document([entry.as_json() for entry in found], args.output)
        return 0
    if not found:
        sys.stderr.write(
            "no writes by the REST API" + (f" since {args.since}" if args.since else "") + "\n"
        )
        return 0
    tables.render(grid(found), sys.stdout)
    return 0


def grid(found: list[trail.Entry]) -> tables.Grid:
    """One row per write, as `-o table` prints it."""
    headers = ("TIME", "CALLER", "REQUEST", "COMMIT", "POLICY", "BRANCH")
    rows = tuple(
        (
            durations.rfc3339(e.time),
            e.caller,
            e.request,
            e.sha[:12],
            f"{e.kind}/{e.name}",
            e.branch,
        )
        for e in found
    )
    return tables.Grid(headers=headers, rows=rows)
