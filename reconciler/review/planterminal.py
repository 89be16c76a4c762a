"""Plan report for a terminal: a `PlanDiff` as rich renderables (summary, placements, water
levels, manifest diffs), with tables that change layout rather than cut a name.

Called by `cli.plan`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from reconciler.branch import comparison
from reconciler.review import plandiff, planreport, tables


def terminal(diff: plandiff.PlanDiff, console: Console) -> list[RenderableType]:
    """The diff for a colour terminal (rich): summary, placements, water levels, diffs."""
    title = Rule(
        f"dro plan: {planreport.side_name(diff.base)} → {planreport.side_name(diff.head)}".replace(
            "`", ""
        )
    )
    shown: list[RenderableType] = [title]
    shown += [Text(f"Not in this plan: {note}", style="bold yellow") for note in diff.notes]
    if diff.base.note:
        shown.append(Text(diff.base.note, style="yellow"))
    if diff.head.note:
        shown.append(Text(diff.head.note, style="yellow"))
    if not diff.head.valid:
        shown.append(Text(f"The head {diff.head.ref} is invalid; nothing was planned.", "red"))
        shown += [Text(str(p)) for p in diff.head.problems]
        return shown
    later = [Text(f"Later passes: {sentence}", style="cyan") for sentence in diff.head.follow_ups]
    if not diff.differs:
        return [*shown, Text("No changes to placements or rendered manifests.", "green"), *later]
    counts = Table(show_header=False, box=None)
    for name, value in diff.counts().items():
        counts.add_row(name, str(value), style="bold" if value else "dim")
    shown += [counts, Text(planreport.cost_line(diff)), *later]
    if diff.workloads:
        shown.append(_placements(diff.workloads, console))
    levels = [c for c in diff.levels if c.before != c.after]
    if levels:
        resources = planreport.shown_resources(levels)
        table = Table(title="Water levels")
        _name_column(table, "cluster", [level.cluster for level in levels])
        for resource in resources:
            table.add_column(resource)
        foreseen = any(level.forecast for level in levels)
        if foreseen:
            table.add_column("forecast")
        for level in levels:
            cells = [planreport.level_cell(level, r).replace("`", "") for r in resources]
            cells += [planreport.forecast_cell(level, resources)] if foreseen else []
            table.add_row(level.cluster, *cells)
        shown.append(table)
    for cluster in diff.manifests:
        shown.append(Rule(cluster.cluster, align="left"))
        for file in cluster.files:
            shown.append(Syntax(file.diff, "diff", theme="ansi_dark", background_color="default"))
    return shown


def _placements(changes: Sequence[comparison.WorkloadChange], console: Console) -> RenderableType:
    """The placements as a table whose columns wrap, or, on a terminal too narrow for it
    even wrapped, one block per workload (`tables.blocks`), as no name may be cut."""
    grid = tables.Grid(
        title="Placements",
        headers=("workload", "before", "after", "moved", "cost/h", "why"),
        rows=tuple(
            (
                change.workload,
                _spread(change.before, change.divided_before),
                _spread(change.after, change.divided_after),
                str(change.moved),
                planreport.cost_change(change.cost_before, change.cost_after),
                "\n".join(change.triggers),
            )
            for change in changes
        ),
    )
    table = Table(title=grid.title)
    _name_column(table, "workload", [row[0] for row in grid.rows])
    for header in grid.headers[1:]:
        table.add_column(header)
    for row in grid.rows:
        table.add_row(*row)
    if _fits(table, console.width):
        return table
    return Text(f"Placements\n{tables.blocks(grid)}")


def _fits(table: Table, width: int) -> bool:
    """Whether `table`, wrapped as rich wraps it at `width`, stays within it (rich's own
    measure can promise a minimum its layout then exceeds, and the terminal would crop it)."""
    printed = io.StringIO()
    trial = Console(file=printed, width=width, color_system=None, legacy_windows=False)
    trial.print(table, crop=False)
    return all(cell_len(line) <= width for line in printed.getvalue().splitlines())


def _name_column(table: Table, header: str, names: Sequence[str]) -> None:
    """A column of identifying names that the table never cuts: as wide as its longest name,
    the other columns wrap first; a terminal narrower than a name folds it, never `…`."""
    widest = max((len(name) for name in names), default=len(header))
    table.add_column(header, min_width=max(widest, len(header)), overflow="fold")


def _spread(placed: Mapping[str, int | None], divided: Mapping[str, int]) -> str:
    return (
        ", ".join(
            f"{c} {'✓' if n is None else n}"
            + (f" (override; divided {divided[c]})" if c in divided else "")
            for c, n in sorted(placed.items())
        )
        or "—"
    )
