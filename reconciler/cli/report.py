"""Reporting: structlog configuration and the human-facing tables and problem lists.

Events go to stderr with stable snake_case names and `stage=` bound: one line a person reads
(`--log-format console`, the CLI's default) or JSON lines (`--log-format json`, `dro run`'s
default). Tables for people are in `tables`. A logged
traceback carries its frames' file, line and function, never their local variables (a frame
may hold a token or a Secret's data), and every event passes `redact.scrub_event` last.

Called by 7 modules, among them `cli`.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any, TextIO

import structlog
from rich.console import Console

from reconciler import redact, yamlio
from reconciler.branch import overview, summary
from reconciler.cli import shortnames
from reconciler.domain import Decision, Disruption, Placed, ResourceKey
from reconciler.domain.decision import CUT_OVER, DONE, PROVISIONING, SYNCING
from reconciler.domain.disruption import in_flight_text
from reconciler.domain.forecast import Forecasts
from reconciler.domain.rollout import RolloutStatus
from reconciler.errors import Problem
from reconciler.live.outcome import ClusterSync
from reconciler.render import rolloutview
from reconciler.review import tables

TRACEBACKS = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False, use_rich=False)
)
"""Exceptions as structured frames (file, line, function), without frame locals: structlog's
own `dict_tracebacks` shows them, and a crashed pass would log `Credentials(...)`, the
webhook secret or a Secret's data that way."""


def configure_logging(
    *,
    verbose: bool = False,
    stream: TextIO | None = None,
    log_format: str = "json",
    quiet: bool = False,
    omit: frozenset[str] = frozenset(),
) -> None:
    """Events to stderr (or `stream`): info and up when verbose, errors only when quiet,
    warnings and up otherwise. `log_format` "json" writes one object a line (for collectors,
    `dro run`'s default); "console" one line a person reads, `warning: event key=value`.
    Values bound with `structlog.contextvars` (a pass's source sha) join every event.
    Tracebacks carry no locals, and URL credentials are removed from every field. Events
    named in `omit` are dropped: the command reports them itself."""
    level = logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING
    renderer: Any = (
        _console_line
        if log_format == "console"
        else structlog.processors.JSONRenderer(sort_keys=True)
    )
    structlog.configure(
        processors=[
            _Omit(omit),
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            TRACEBACKS,
            redact.scrub_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # sys.stderr is looked up per logger, not once: a replaced stream (a test's capture,
        # a closed terminal) must not keep receiving events.
        logger_factory=lambda *_: structlog.PrintLogger(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


class _Omit:
    """A structlog processor that drops the events a command reports itself."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def __call__(self, _logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
        if event.get("event") in self.names:
            raise structlog.DropEvent
        return event


def _console_line(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> str:
    """`warning: cluster_unreachable cluster=eu-west-1 error="…"`: the level, the event and its
    fields in sorted order, without the timestamp a terminal does not need. An exception shows
    its type and message; its frames stay in the JSON format."""
    level = event.pop("level", "info")
    name = event.pop("event", "")
    event.pop("timestamp", None)
    exception = event.pop("exception", None)
    if isinstance(exception, list) and exception:
        last = exception[-1]
        if isinstance(last, dict):
            event["error"] = f"{last.get('exc_type', '')}: {last.get('exc_value', '')}"
    fields = " ".join(f"{key}={_console_value(event[key])}" for key in sorted(event))
    return f"{level}: {name}" + (f" {fields}" if fields else "")


def _console_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    if text and all(c.isalnum() or c in "-_./:@" for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def print_problems(problems: Iterable[Problem], out: TextIO) -> None:
    """One `FILE:LINE: POINTER: MESSAGE` line per problem, in sorted order."""
    for problem in sorted(problems, key=lambda p: p.sort_key):
        out.write(f"{problem}\n")


def problems_document(problems: Iterable[Problem]) -> list[dict[str, Any]]:
    """`validate -o json`: one object per problem, in the order `print_problems` uses."""
    return [
        {
            "file": p.path,
            "line": p.line,
            "pointer": p.pointer or "/",
            "message": p.message,
            "severity": str(p.severity),
        }
        for p in sorted(problems, key=lambda p: p.sort_key)
    ]


MATRIX_COLUMNS = 12
"""Fleets up to this many clusters get one column per cluster; larger ones a list per row."""

UNSCHEDULABLE = " (unschedulable)"


def placement_table(decisions: Sequence[Decision], clusters: Sequence[str]) -> tables.Grid:
    """Replicas per workload and cluster, ✓ for objects without replicas, · where not placed.

    A small fleet is a workloads × clusters matrix; beyond `MATRIX_COLUMNS` clusters each row
    lists its clusters as `name=replicas`, which stays readable at any fleet size. On a
    terminal too narrow for either, one row per workload and cluster (`narrow`).
    """
    labels = [_label(d) for d in decisions]
    styles = tuple("red" if d.unschedulable else "" for d in decisions)
    rows: list[tuple[str, ...]] = []
    if len(clusters) <= MATRIX_COLUMNS:
        headers = ("WORKLOAD", *clusters)
        right = frozenset(range(1, len(headers)))
        for label, decision in zip(labels, decisions, strict=True):
            by_cluster = {p.cluster: p.replicas for p in decision.clusters}
            rows.append((label, *(_cell(decision, by_cluster, name) for name in clusters)))
    else:
        headers, right = ("WORKLOAD", "REPLICAS", "CLUSTERS"), frozenset({1})
        for label, decision in zip(labels, decisions, strict=True):
            counts = [decision.effective.get(p.cluster, p.replicas) for p in decision.clusters]
            total = "-" if None in counts else str(sum(c or 0 for c in counts))
            listed = " ".join(
                p.cluster
                if p.replicas is None
                else f"{p.cluster}={overview.replicas_label(decision, p.cluster, p.replicas)}"
                for p in decision.clusters
            )
            rows.append((label, total, listed or "·"))
    return tables.Grid(
        title="placements",
        headers=headers,
        rows=tuple(rows),
        right=right,
        styles=styles,
        narrow=_by_cluster(labels, decisions),
    )


def _by_cluster(labels: Sequence[str], decisions: Sequence[Decision]) -> tables.Grid:
    """The placements as one row per cluster and workload, grouped by cluster: what a narrow
    terminal shows instead of the matrix. A workload placed nowhere is listed under `<none>`."""
    entries: list[tuple[str, str, str, str]] = []
    for label, decision in zip(labels, decisions, strict=True):
        style = "red" if decision.unschedulable else ""
        if not decision.clusters:
            entries.append(("<none>", label, "", style))
        for placed in decision.clusters:
            shown = overview.replicas_label(decision, placed.cluster, placed.replicas)
            entries.append((placed.cluster, label, shown, style))
    entries.sort(key=lambda entry: entry[0])  # stable: workloads keep their order
    return tables.Grid(
        title="placements",
        headers=("CLUSTER", "WORKLOAD", "REPLICAS"),
        rows=tuple(entry[:3] for entry in entries),
        right=frozenset({2}),
        styles=tuple(entry[3] for entry in entries),
        group=0,
    )


def _label(decision: Decision) -> str:
    return str(decision.key) + (UNSCHEDULABLE if decision.unschedulable else "")


def _cell(decision: Decision, by_cluster: dict[str, int | None], name: str) -> str:
    if name not in by_cluster:
        return "·"
    return overview.replicas_label(decision, name, by_cluster[name])


def apply_table(clusters: Sequence[ClusterSync]) -> tables.Grid:
    """Per cluster: objects applied, unchanged, pruned, drifted and failed, and the writes."""
    headers = ("CLUSTER", "APPLIED", "UNCHANGED", "PRUNED", "DRIFTED", "FAILED", "WRITES")
    rows = []
    for sync in clusters:
        label = sync.cluster if sync.reachable else f"{sync.cluster} (unreachable)"
        failed = len(sync.failed) + len(sync.rejected)
        counts = (sync.applied, sync.unchanged, sync.pruned, len(sync.drifted), failed)
        rows.append((label, *(str(n) for n in counts), str(sync.writes)))
    return tables.Grid(
        title="apply",
        headers=headers,
        rows=tuple(rows),
        right=frozenset(range(1, len(headers))),
        styles=tuple("" if s.reachable else "red" for s in clusters),
    )


def apply_details(
    clusters: Sequence[ClusterSync], unreachable: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """(what went as asked, what went wrong): one line per drift corrected or reported and
    per protected object, and one per failure, naming the cluster. Each failure is said once:
    a cluster that could not be reached is one `unreachable` line, not also one per stage it
    then skipped."""
    done: list[str] = []
    wrong: list[str] = [
        f"{name}: unreachable: {_unprefixed(name, why)}"
        for name, why in sorted(unreachable.items())
    ]
    for sync in clusters:
        done += [f"{sync.cluster}: drift corrected: {line}" for line in sync.corrected]
        done += [f"{sync.cluster}: drift reported, not corrected: {line}" for line in sync.reported]
        if sync.cluster not in unreachable:
            wrong += [
                f"{sync.cluster}: failed: {_unprefixed(sync.cluster, line)}" for line in sync.failed
            ]
        wrong += [f"{sync.cluster}: not applied: {line}" for line in sync.rejected]
        done += [f"{sync.cluster}: kept (not dro's to delete): {line}" for line in sync.released]
        done += [f"{sync.cluster}: kept (deletion-protected): {ref}" for ref in sync.protected]
    return done, wrong


def _unprefixed(cluster: str, line: str) -> str:
    """`cluster b: why` → `why`, where the line is already under the cluster's name."""
    return line.removeprefix(f"cluster {cluster}: ")


def find_decision(decisions: Iterable[Decision], wanted: str) -> Decision | None:
    """The decision for `NAMESPACE/KIND/NAME` (KIND with or without its group, or kubectl's
    short name or plural: `deploy`, `deployments`; a cluster-scoped object as
    `_cluster/KIND/NAME` or `KIND/NAME`)."""
    return next((d for d in decisions if names(d.key, wanted)), None)


def names(key: ResourceKey, wanted: str) -> bool:
    """Whether `wanted` (as `find_decision` takes it) names the workload `key`."""
    parts = wanted.split("/")
    if len(parts) == 2:
        parts = ["", *parts]
    if len(parts) != 3:
        return False
    namespace, kind, name = parts
    namespace = "" if namespace == "_cluster" else namespace
    kind_name, _, group = kind.partition(".")
    if (key.namespace, key.name) != (namespace, name):
        return False
    return shortnames.matches(key.kind, kind_name) and (not group or group == key.group)


def suggestions(decisions: Sequence[Decision], wanted: str) -> list[str]:
    """The workloads closest to what was asked ("did you mean"): by name among those of the
    same namespace and kind when there are any (`shop/deploy/fronted` → frontend), else by the
    whole `NAMESPACE/KIND/NAME`."""
    parts = wanted.split("/")
    if len(parts) == 3:
        namespace, kind, name = parts
        namespace = "" if namespace == "_cluster" else namespace
        kind_name = kind.partition(".")[0]
        alike = {
            d.key.name: str(d.key)
            for d in decisions
            if d.key.namespace == namespace and shortnames.matches(d.key.kind, kind_name)
        }
        close = shortnames.did_you_mean(name, alike)
        if close:
            return [alike[n] for n in close]
        if kind_name.lower() in shortnames.SHORT_NAMES:
            parts[1] = shortnames.SHORT_NAMES[kind_name.lower()]
    known = {
        f"{d.key.namespace or '_cluster'}/{d.key.kind}/{d.key.name}": str(d.key) for d in decisions
    }
    return [known[n] for n in shortnames.did_you_mean("/".join(parts), known)]


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


def rollout_lines(status: RolloutStatus) -> list[object]:
    """Where a rollout stands, and each wave's clusters with their state."""
    lines: list[object] = [f"rollout: {rolloutview.standing(status)}"]
    for number in range(1, status.waves + 1):
        states = ", ".join(f"{c.cluster} {c.state}" for c in status.clusters if c.wave == number)
        lines.append(f"  wave {rolloutview.wave_label(status, number)}: {states}")
    return lines


def explanation(decision: Decision) -> list[object]:
    """The header lines and the per-cluster table `dro explain` prints."""
    diagnosis = decision.diagnosis
    replicas = {p.cluster: p.replicas for p in decision.clusters}
    weights = ", ".join(f"{name} {value:g}" for name, value in diagnosis.weights.items())
    lines: list[object] = [
        f"[bold]{decision.key}[/bold]  policy: {decision.policy or 'default placement'}",
        f"strategy: {diagnosis.strategy}   trigger: {diagnosis.trigger.text}   "
        f"fleet water level: {diagnosis.fleet_water_level:.2f}",
        f"weights: {weights or '(none)'}",
    ]
    if decision.unschedulable:
        lines.append(f"[red]unschedulable:[/red] {decision.unschedulable}")
    if decision.pending:
        lines.append(
            f"[red]pending:[/red] {decision.pending} replica(s) fit nowhere; "
            "placed when room appears"
        )
    if decision.over_limit:
        over = ", ".join(f"{p.cluster} {p.replicas}" for p in decision.over_limit)
        lines.append(
            f"[yellow]over limit:[/yellow] {over} (past the water-level limit, within the "
            "ceiling; moved back under a limit when room appears)"
        )
    if decision.cost_per_hour is not None or decision.unpriced:
        lines.append(f"cost per hour: {overview.cost_text(decision)}")
    for move in decision.moves:
        lines.append(
            f"moved {move.replicas} replica(s) {move.source} → {move.target} at {move.at}: "
            f"{move.reason.text}"
        )
    entry = decision.moving
    if entry is not None:
        lines.append(move_line(decision, entry))
    elif decision.retiring:
        still = ", ".join(f"{p.cluster} {p.replicas}" for p in decision.retiring)
        lines.append(f"retiring (old copies kept until the new ones are up): {still}")
    if decision.disruption is not None:
        lines.extend(disruption_lines(decision.disruption))
    if decision.rollout is not None:
        lines += rollout_lines(decision.rollout)
    scorers = list(diagnosis.weights)
    rows = []
    for verdict in diagnosis.verdicts.every():
        shown = (
            overview.replicas_label(decision, verdict.cluster, replicas[verdict.cluster])
            if verdict.cluster in replicas
            else "—"
        )
        if verdict.rejected_by is not None:
            cells = ["" for _ in scorers]
            rows.append(
                (verdict.cluster, f"{verdict.rejected_by}: {verdict.reason}", *cells, "", "", shown)
            )
            continue
        scores = [f"{verdict.scores.get(name, 0.0):.1f}" for name in scorers]
        each = verdict.cost_per_replica_hour
        price = "—" if each is None else f"{each:.4f}"
        total = f"{verdict.total_score:.1f}"
        rows.append((verdict.cluster, "feasible", *scores, total, price, shown))
    headers = ("CLUSTER", "VERDICT", *scorers, "TOTAL", "COST/REPLICA-H", "REPLICAS")
    lines.append(
        tables.Grid(headers=headers, rows=tuple(rows), right=frozenset(range(2, len(headers))))
    )
    return lines


def disruption_lines(disruption: Disruption) -> list[object]:
    """`dro explain`'s lines for a workload's disruption budget: what it allows, what is in
    flight against it, and what waits on it."""
    count = disruption.allowed
    in_flight = in_flight_text(disruption.leaving, disruption.entering)
    lines: list[object] = [
        f"disruption budget: maxUnavailableClusters {disruption.budget} ({count} cluster"
        f"{'s' if count != 1 else ''} at once); out of service now: "
        f"{disruption.out_of_service} ({in_flight})"
    ]
    for waiting in disruption.waiting:
        lines.append(
            f"[yellow]waiting:[/yellow] {waiting.replicas} replica(s) on {waiting.cluster}, "
            f"for a later pass: {waiting.reason}"
        )
    return lines


def forecast_lines(forecasts: Forecasts, clusters: Sequence[str]) -> list[object]:
    """`dro explain`'s forecasts (prediction on): per cluster of the workload, the model, the
    forecast level and next step of its background load, the recent error at the horizon and
    when it peaks within the horizon."""
    rows = []
    for name in clusters:
        forecast = forecasts.get(name)
        if forecast is None:
            continue
        shown = summary.forecast_status(forecast)
        rows.append(
            (
                name,
                forecast.model,
                _amounts(shown["level"]),
                _amounts(shown["nextStep"]),
                ", ".join(
                    f"{r} {shown['error'][r]:.0%}" for r in ("cpu", "memory") if r in shown["error"]
                )
                or "—",
                str(shown.get("peakAt", "—")),
            )
        )
    if not rows:
        return []
    headers = ("CLUSTER", "MODEL", "LEVEL", "NEXT STEP", "ERROR", "PEAK AT")
    return [
        "forecast background load (prediction on; the level is the peak over the horizon "
        "plus the error band):",
        tables.Grid(headers=headers, rows=tuple(rows), right=frozenset()),
    ]


def _amounts(values: dict[str, str]) -> str:
    """`cpu 37254m, memory 12Gi`: cpu and memory, which water levels are mostly about (the
    JSON output has every resource)."""
    return ", ".join(f"{r} {values[r]}" for r in ("cpu", "memory") if r in values) or "—"


def console(out: TextIO) -> Console:
    """A rich console on `out`; colour only when it is a terminal."""
    return Console(file=out, soft_wrap=False, width=None if out.isatty() else 200)


def show(items: Iterable[object], out: TextIO) -> None:
    """Print lines (rich markup, colour on a terminal) and `tables.Grid`s in the layout that
    fits `out`."""
    printer = console(out)
    for item in items:
        if isinstance(item, tables.Grid):
            tables.render(item, out)
        else:
            printer.print(item)


def write_document(document: Any, output: str, out: TextIO | None = None) -> None:
    """`document` on stdout (or `out`) as JSON or YAML, as `-o json|yaml` asks."""
    stream = out or sys.stdout
    if output == "yaml":
        stream.write(yamlio.dump(document))
    else:
        stream.write(json.dumps(document, indent=2) + "\n")
