"""`dro diff`: what the next pass would change on each cluster, rendered against live.

The rendered side is what `dro reconcile --once` would apply now, as `flux diff kustomization`
builds the source and `argocd app diff --local` renders it: the source (PATH, or `--repo` at
`--ref`) is validated, the clusters are observed, and the workloads are scheduled from the
last pass's decisions on the output branch (a plain PATH has none: placed as on a first pass)
and rendered. Nothing is committed or written. Each
cluster's rendered objects are then compared with the live ones through a server-side dry run
(`live.difference`), so defaulted fields are not differences.

Output: `-o text` (the default) is a unified diff per object, `--- live/CLUSTER/NAME` against
`+++ rendered/CLUSTER/NAME` as `kubectl diff` prints it; `-o json` is one document with each
cluster's objects and their changed fields (JSON pointer, live and rendered values). A Secret's
values are never shown. Exit codes: 0 no difference, 2 a difference, 1 an error (a cluster
that cannot be reached, an object the API server rejects, bad input).

Called by `cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from reconciler import laststate, live, pipeline, settings
from reconciler.cli import habits as clihabits
from reconciler.cli import report
from reconciler.domain import Spec
from reconciler.errors import UsageError
from reconciler.laststate import FIRST_PASS
from reconciler.live.difference import ClusterDifference

DIFFERENCES = 2
UNREACHABLE = frozenset({"cluster_unreachable"})
FORMATS = ("text", "json")
CLUSTERS = settings.pick(
    "kubeconfig", "sops-age-key-file", "in-cluster", "cluster-timeout", "parallel"
)
"""The cluster settings of `dro diff`: how clusters are reached; it applies nothing."""


def add_parser(commands: Any, add_source_args: Any) -> None:
    """The `diff` subcommand's arguments (`add_source_args`: PATH, --repo and the rest)."""
    diff = commands.add_parser(
        "diff",
        help="show what the next pass would change on each cluster (rendered vs live)",
        description="Validate, observe, schedule and render the source as the next `dro "
        "reconcile --once` would, then compare each cluster's rendered objects with the live "
        "ones through a server-side dry run (defaulted fields are not differences). Objects "
        "missing on a cluster, and objects dro holds there that are no longer rendered, are "
        "differences too, as are objects dro did not create that differ. Secret values are "
        "never shown. Exit 0: no difference; 2: differences; 1: an error.",
    )
    add_source_args(diff)
    diff.add_argument(
        "--cluster",
        action="append",
        metavar="NAME",
        help="compare only this cluster (repeat for more; default: every cluster dro reaches)",
    )
    diff.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default="text",
        help="text (a unified diff per object, as kubectl diff; the default) or json",
    )
    clihabits.add_settings(diff, settings.pick("output-branch"), convert=True)
    group = diff.add_argument_group("clusters")
    clihabits.add_settings(group, CLUSTERS, convert=True)


def run(args: argparse.Namespace, hook: pipeline.StageHook, conf: settings.Settings) -> int:
    """Render, compare every chosen cluster, print the differences; the exit code."""
    if not conf.online:
        raise UsageError("diff needs --kubeconfig (or --in-cluster) to reach the clusters")
    if args.log_format != "json":  # each cluster out of reach is said once, below
        report.configure_logging(
            verbose=args.verbose, quiet=args.quiet, log_format="console", omit=UNREACHABLE
        )
    source = pipeline.read_source(conf)
    before = laststate.online(conf) if conf.repo is not None else FIRST_PASS
    opened: list[live.Members] = []
    now = time.time()

    def observe(spec: Spec) -> live.Observed:
        _known(spec, args.cluster)
        opened.append(live.Members(spec, _access(conf)).open())
        return opened[0].observe(before.statuses, now)

    try:
        planned, observed = pipeline.plan(
            source, on_stage=hook, before=before, now=now, observer=observe, ceiling=conf.guard
        )
        hook("diff")
        members = opened[0]
        chosen = set(args.cluster or (*members.connections, *members.errors))
        down = {name: why for name, why in observed.unreachable.items() if name in chosen}
        found = members.differences(planned.tree, chosen - set(down))
        found |= {name: ClusterDifference(name, errors=[why]) for name, why in down.items()}
        found = dict(sorted(found.items()))
    finally:
        for members in opened:
            members.close()
    skipped = sorted(
        c.name
        for c in planned.spec.clusters
        if c.name not in found and (not args.cluster or c.name in args.cluster)
    )
    for name in skipped:
        sys.stderr.write(f"{name}: not compared: suspended, or dro has no way to reach it\n")
    _print(found, args.output)
    for name, cluster in found.items():
        for error in cluster.errors:
            sys.stderr.write(f"{name}: {error.removeprefix(f'cluster {name}: ')}\n")
    if any(cluster.errors for cluster in found.values()):
        return 1
    return DIFFERENCES if any(cluster.objects for cluster in found.values()) else 0


def _known(spec: Spec, chosen: list[str] | None) -> None:
    names = [cluster.name for cluster in spec.clusters]
    unknown = [name for name in chosen or () if name not in names]
    if unknown:
        raise UsageError(
            f"--cluster {', '.join(unknown)}: no such cluster in the source "
            f"(clusters: {', '.join(names) or 'none'})"
        )


def _access(conf: settings.Settings) -> live.Access:
    return live.Access(
        kubeconfig=conf.kubeconfig,
        sops_age_key_file=conf.sops_age_key_file,
        in_cluster=conf.in_cluster,
        timeout=conf.cluster_timeout,
        parallel=conf.parallel,
    )


def _print(found: Mapping[str, ClusterDifference], output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(document(found), indent=2) + "\n")
        return
    for name, cluster in found.items():
        for difference in cluster.objects:
            sys.stdout.writelines(difference.unified(name))


def document(found: Mapping[str, ClusterDifference]) -> dict[str, Any]:
    """`dro diff -o json`: per cluster, each differing object and its changed fields."""
    return {
        "differences": sum(len(c.objects) for c in found.values()),
        "clusters": [
            {
                "name": name,
                "objects": [d.document() for d in cluster.objects],
                "errors": list(cluster.errors),
            }
            for name, cluster in found.items()
        ],
    }
