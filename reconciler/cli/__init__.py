"""The `dro` command line: validate, schedule, explain, render, plan, diff, simulate,
reconcile and audit.

Exit codes: 0 ok, 1 failed (bad input, a usage error, or the world was unavailable), 2
differences found (`plan --exit-code`, in `cli_plan`; `diff`, in `cli_diff`). Only data goes
to stdout, in the format `-o` names (`validate -o json` prints its problems as a JSON list);
problems go to stderr one per line as `FILE:LINE: POINTER: MESSAGE`, with errors, events and
progress. An unexpected exception is one line, `dro COMMAND: internal error: …`, with the
traceback under `-v`.

Called by `cli.__main__`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler import laststate, pipeline, redact, settings
from reconciler.branch import rollouts, summary
from reconciler.cli import audit as cli_audit
from reconciler.cli import completion, outdir, progress, report
from reconciler.cli import diff as cli_diff
from reconciler.cli import habits as clihabits
from reconciler.cli import plan as cli_plan
from reconciler.cli import render as cli_render
from reconciler.cli import run as cli_run
from reconciler.cli import simulate as cli_simulate
from reconciler.domain import Decision, Source
from reconciler.errors import DroError, UsageError, ValidationFailed
from reconciler.review import tables
from reconciler.validate import guard

SOURCE = settings.pick("repo", "ref", "state-dir", "git-credentials-file", "guard")
"""The settings of every command that reads the source: where it is and what may be placed."""
CLUSTERS = settings.pick(
    "kubeconfig",
    "sops-age-key-file",
    "in-cluster",
    "cluster-timeout",
    "parallel",
    "move-wait",
    "status-interval",
)
"""The settings of the cluster stages: without --kubeconfig (or --in-cluster) a pass is
offline."""
OUTPUT_BRANCH = settings.pick("output-branch")


def _add_source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="a plain directory holding the source repo (default: .); --repo reads a git "
        "repository instead",
    )
    clihabits.add_settings(parser, SOURCE, convert=True)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = clihabits.Parser(
        prog="dro", description="Declarative GitOps reconciler for multi-cluster placement."
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"dro {clihabits.version()}",
        help="print the version",
    )
    clihabits.add_globals(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "validate",
        help="check every file against the schemas",
        description="Validate every file of the source repo against "
        "dro's JSON Schemas and the Kubernetes OpenAPI.",
    )
    _add_source_args(check)
    _add_output_arg(check, "table: one FILE:LINE: POINTER: MESSAGE line per problem")

    sched = commands.add_parser(
        "schedule",
        help="print the placement decisions",
        description="Validate and schedule; print the decisions.",
    )
    _add_source_args(sched)
    _add_output_arg(sched, "table: replicas per workload and cluster")

    why = commands.add_parser(
        "explain",
        help="show why a workload is placed where it is",
        description="One row per cluster: the filter that rejected it and why, or each "
        "scorer's score, the weights and the final replicas.",
    )
    _add_source_args(why)
    why.add_argument(
        "workload",
        metavar="NAMESPACE/KIND/NAME",
        help="e.g. shop/Deployment/web or shop/deploy/web (kubectl's short names work)",
    )
    _add_output_arg(why, "table: one row per cluster")
    clihabits.add_settings(why, OUTPUT_BRANCH, convert=True)

    rend = commands.add_parser(
        "render",
        help="write the output-branch tree to a directory",
        description="Validate, schedule and render the per-cluster "
        "manifests and decisions into DIR. It reads no earlier pass: every workload is "
        "placed as on a first pass, and every rollout is rendered at its end state (the new "
        "template on every cluster). `dro plan` shows the waves a change takes; dro/rendered "
        "holds what reconcile committed.",
    )
    _add_source_args(rend)
    rend.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="directory to write the tree to"
    )
    rend.add_argument(
        "--clean",
        action="store_true",
        help="replace DIR if an earlier dro render made it (otherwise it must be empty); "
        "never the working directory, the source or a folder holding .git",
    )

    cli_plan.add_parser(commands)
    cli_diff.add_parser(commands, _add_source_args)
    cli_run.add_parser(commands)
    cli_simulate.add_parser(commands)
    cli_audit.add_parser(commands)

    rec = commands.add_parser(
        "reconcile",
        help="run one pass: pull, plan, commit, push",
        description="Pull the source repo, validate, schedule, render, "
        "and commit the result to the output branch.",
    )
    _add_source_args(rec)
    rec.add_argument(
        "--once",
        action="store_true",
        required=True,
        help="run a single pass and exit (the loop is `dro run`)",
    )
    clihabits.add_settings(rec, OUTPUT_BRANCH, convert=True)
    rec.add_argument(
        "--no-push",
        action="store_true",
        help="commit to the local cache only; do not push to the remote",
    )
    group = rec.add_argument_group("clusters (observe and apply)")
    clihabits.add_settings(group, CLUSTERS, convert=True)
    clihabits.add_info_commands(commands, version=clihabits.version())
    for sub in commands.choices.values():
        clihabits.add_globals(sub, top=False)
    return parser


def _add_output_arg(parser: argparse.ArgumentParser, table: str) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=clihabits.OUTPUTS,
        default="table",
        help=f"json, yaml or table ({table}; the default)",
    )


def _settings(args: argparse.Namespace) -> settings.Settings:
    path = args.path if args.path is not None else (None if args.repo else Path("."))
    if args.repo and args.path is not None:
        raise UsageError("give either PATH or --repo, not both")
    if path is not None and not path.is_dir():
        raise UsageError(f"{path}: not a directory")
    return settings.Settings(
        repo=args.repo,
        path=path,
        ref=args.ref,
        state_dir=args.state_dir,
        credentials_file=args.git_credentials_file,
        output_branch=getattr(args, "output_branch", settings.DEFAULT_OUTPUT_BRANCH),
        push=not getattr(args, "no_push", False),
        guard=args.guard or guard.BUILTIN,
        **_cluster_settings(args),
    )


def _cluster_settings(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "kubeconfig", None) is None and not getattr(args, "in_cluster", False):
        return {}
    if args.kubeconfig is not None and not args.kubeconfig.exists():
        raise UsageError(f"--kubeconfig {args.kubeconfig}: no such file or directory")
    if args.parallel < 1:
        raise UsageError("--parallel must be at least 1")
    found = {
        "kubeconfig": args.kubeconfig,
        "in_cluster": args.in_cluster,
        "sops_age_key_file": getattr(args, "sops_age_key_file", None),
        "cluster_timeout": args.cluster_timeout,
        "parallel": args.parallel,
    }
    for name in ("move_wait", "status_interval"):  # reconcile's; dro diff applies nothing
        if getattr(args, name, None) is not None:
            found[name] = getattr(args, name)
    return found


def _cmd_validate(args: argparse.Namespace, hook: pipeline.StageHook) -> int:
    result = pipeline.validated(_settings(args), hook)
    source, warnings = result.source, result.removed
    if args.output != "table":
        document = report.problems_document(result.problems) + [
            {"file": None, "line": None, "pointer": None, "message": w, "severity": "warning"}
            for w in warnings
        ]
        report.write_document(document, args.output)
    else:
        report.print_problems(result.problems, sys.stderr)
        for warning in warnings:
            sys.stderr.write(f"warning: {warning}\n")
    if result.spec is None:
        return 1
    spec = result.spec
    sys.stderr.write(
        f"ok: {len(source.files)} files, {len(spec.clusters)} clusters, "
        f"{len(spec.workloads)} objects, {len(spec.placement_policies)} placement "
        f"and {len(spec.override_policies)} override policies\n"
    )
    return 0


def _schedule_document(source: Source, decisions: Sequence[Decision]) -> dict[str, Any]:
    return {
        "source": source.commit,
        "decisions": [summary.decision_entry(d) for d in decisions],
    }


def _cmd_schedule(args: argparse.Namespace, hook: pipeline.StageHook) -> int:
    placed = pipeline.decided(_settings(args), hook, diagnose=False)
    source, spec, decisions = placed.source, placed.spec, placed.decisions
    if args.output != "table":
        report.write_document(_schedule_document(source, decisions), args.output)
    else:
        names = [c.name for c in spec.clusters]
        tables.render(report.placement_table(decisions, names), sys.stdout)
    return 0


def _cmd_explain(args: argparse.Namespace, hook: pipeline.StageHook) -> int:
    wanted: str = args.workload
    decided = pipeline.decided(
        _settings(args),
        hook,
        from_last_pass=True,
        explained=lambda key: report.names(key, wanted),
    )
    decisions = decided.decisions
    decision = report.find_decision(decisions, args.workload)
    if decision is None:
        close = report.suggestions(decisions, args.workload)
        hint = f"; did you mean {' or '.join(close)}?" if close else " (NAMESPACE/KIND/NAME)"
        raise UsageError(f"no workload {args.workload} in the source{hint}")
    decision = _standing(_settings(args), decision)
    clusters = [v.cluster for v in decision.diagnosis.verdicts.every()] or [
        p.cluster for p in decision.clusters
    ]
    if args.output == "table":
        shown = report.forecast_lines(decided.forecasts, clusters)
        report.show([*report.explanation(decision), *shown], sys.stdout)
        return 0
    document = {
        **summary.decision_entry(decision),
        "costPerHour": decision.cost_per_hour,
        "unpricedReplicas": decision.unpriced,
        "diagnosis": summary.diagnosis_document(decision, every=True),
    }
    if decision.disruption is not None:
        document["disruption"] = summary.disruption_status(decision.disruption)
    if decision.rollout is not None:
        document["rollout"] = rollouts.document(decision.rollout)
    if decided.forecasts:
        document["forecasts"] = {
            name: {
                **summary.forecast_status(decided.forecasts[name]),
                "samples": decided.forecasts[name].samples,
            }
            for name in clusters
            if name in decided.forecasts
        }
    report.write_document(document, args.output)
    return 0


def _standing(where: settings.Settings, decision: Decision) -> Decision:
    """The decision with its rollout as the last pass left it (observed health included),
    unless the source has a new template: then the rollout it starts."""
    last = {d.key: d.rollout for d in laststate.offline(where).decisions}.get(decision.key)
    if decision.rollout is None or last is None or last.revision != decision.rollout.revision:
        return decision
    return dataclasses.replace(decision, rollout=last)


def _cmd_render(args: argparse.Namespace, hook: pipeline.StageHook) -> int:
    out: Path = args.out
    outdir.check(out, clean=args.clean, protected=cli_render.kept(args))

    def write(placed: pipeline.Decided) -> None:
        seen = cli_render.Seen(forecasts=placed.forecasts)
        with outdir.staged(out) as stage:
            cli_render.render_to(stage, placed.spec, placed.decisions, seen)

    pipeline.rendered(_settings(args), hook, write)
    sys.stderr.write(f"wrote the rendered tree to {out}\n")
    return 0


REPORTED_EVENTS = frozenset({"cluster_unreachable"})
"""Log events `reconcile`'s own report states: a person reads each failure once."""


def _cmd_reconcile(args: argparse.Namespace, hook: pipeline.StageHook) -> int:
    if not args.repo:
        raise UsageError("reconcile needs --repo (a local path or URL of the source repo)")
    if args.log_format != "json":
        # the report below says each of these once; the log line would say it again
        report.configure_logging(
            verbose=args.verbose, quiet=args.quiet, log_format="console", omit=REPORTED_EVENTS
        )
    result = pipeline.reconcile_once(_settings(args), on_stage=hook)
    names = [c.name for c in result.planned.spec.clusters]
    tables.render(report.placement_table(result.planned.decisions, names), sys.stdout)
    if result.commit is None:
        print(f"output branch {args.output_branch}: unchanged (no commit)")
    else:
        where = "pushed to" if result.pushed else "committed in the cache of"
        remote = redact.urls(args.repo)
        print(f"output branch {args.output_branch}: {result.commit[:12]} {where} {remote}")
    if result.applied is None:
        print(f"apply skipped: {result.skipped or OFFLINE}")
        return 0
    tables.render(report.apply_table(result.applied.clusters), sys.stdout)
    done, wrong = report.apply_details(result.applied.clusters, result.unreachable)
    for line in done:
        print(line)
    for line in wrong:
        sys.stderr.write(line + "\n")
    if result.applied.prune_blocked:
        sys.stderr.write(f"prune held back: {result.applied.prune_blocked}\n")
    elif result.applied.prune_held:
        held = ", ".join(result.applied.prune_held)
        sys.stderr.write(
            f"prune held back for {held}: an object of that kind and namespace was not applied\n"
        )
    if result.passes == 2:
        print("moves completed: the new copies are Healthy and the old ones were retired")
    return 0 if result.applied.ok and not result.unreachable else 1


OFFLINE = "offline pass (give --kubeconfig to observe and apply)"


def _cmd_completion(args: argparse.Namespace, _hook: pipeline.StageHook) -> int:
    sys.stdout.write(completion.script(args.shell, build_parser()))
    return 0


_COMMANDS = {
    "validate": _cmd_validate,
    "schedule": _cmd_schedule,
    "render": _cmd_render,
    "reconcile": _cmd_reconcile,
    "explain": _cmd_explain,
    "plan": cli_plan.run,
    "diff": lambda args, hook: cli_diff.run(args, hook, _settings(args)),
    "run": cli_run.run,
    "simulate": cli_simulate.run,
    "audit": cli_audit.run,
    "version": clihabits.show_version,
    "completion": _cmd_completion,
}
_SETTINGS = {
    "validate": SOURCE,
    "schedule": SOURCE,
    "explain": SOURCE + OUTPUT_BRANCH,
    "render": SOURCE,
    "reconcile": SOURCE + OUTPUT_BRANCH + CLUSTERS,
    "plan": cli_plan.OPTIONS,
    "diff": SOURCE + OUTPUT_BRANCH + cli_diff.CLUSTERS,
    "audit": cli_audit.OPTIONS,
}
"""The settings each one-pass command resolves before it runs (`dro run` resolves its own,
with its config file)."""
_QUIET = {"run", "version", "completion", "simulate", "audit"}
"""Commands without a stage spinner: a service logs its stages, the others have none."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dro` console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        args.log_format = settings.log_format(args.log_format)
    except UsageError as error:
        sys.stderr.write(f"dro: {error}\n")
        return clihabits.USAGE_ERROR
    log_format = args.log_format or "console"
    report.configure_logging(verbose=args.verbose, quiet=args.quiet, log_format=log_format)
    spin = sys.stderr.isatty() and not args.quiet and args.command not in _QUIET
    try:
        if args.command in _SETTINGS:
            # each flag not given: from the environment, else its default, converted alike
            given = settings.resolve(_SETTINGS[args.command], vars(args), flags_converted=True)
            vars(args).update(given)
        with progress.spinner(spin) as hook:
            return _COMMANDS[args.command](args, hook)
    except ValidationFailed as failed:
        if args.command == "validate" and args.output != "table":
            report.write_document(report.problems_document(failed.problems), args.output)
        else:
            report.print_problems(failed.problems, sys.stderr)
        return 1
    except DroError as error:
        sys.stderr.write(f"dro {args.command}: {redact.urls(str(error))}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"dro {args.command}: interrupted\n")
        return 130
    except Exception as error:  # the last line of defence: one line, exit 1
        return _internal_error(args, error)


def _internal_error(args: argparse.Namespace, error: Exception) -> int:
    """`dro COMMAND: internal error: …` in one line; the traceback (no frame locals) with -v."""
    if args.verbose:
        traceback.print_exception(error, file=sys.stderr)
    said = redact.urls(str(error).splitlines()[0] if str(error) else "")
    what = type(error).__name__ + (f": {said}" if said else "")
    hint = "" if args.verbose else " (run with -v for the traceback)"
    sys.stderr.write(f"dro {args.command}: internal error: {what}{hint}\n")
    return 1
