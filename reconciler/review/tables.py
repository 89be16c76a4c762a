"""Tables for people that never cut an identifying name, as kubectl prints them.

A table is a `Grid` of plain strings. `render` picks its layout from where it goes:
- piped or redirected: plain aligned columns two spaces apart, no box drawing (`kubectl get`'s
  output, easy to `grep`, `awk` and `sort`);
- a terminal wide enough: a rich table with its box, or without the box when only that fits;
- a terminal too narrow for it: the grid's `narrow` alternative when it has one (the placement
  matrix becomes one block per cluster listing its workloads); without one, one block per
  row, `header: value` a line, as `kubectl describe` reads.

Nothing is ever cut with `…`: a value longer than the terminal wraps whole, and the caller
chooses the layout, never the table engine. Called by `report` and the `cli` commands.

Called by `cli`, `cli.audit`, `cli.report`, `cli.simulate` and `review.planterminal`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from reconciler import settings

GAP = 2
"""Spaces between plain columns (kubectl's tabwriter padding)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Grid:
    """Rows of plain strings under headers; `right` names the right-aligned columns (counts)."""

    title: str = ""
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int] = frozenset()
    styles: tuple[str, ...] = ()
    """A rich style per row on a terminal (e.g. `red` for an unschedulable workload)."""
    narrow: Grid | None = field(default=None)
    """The same data in fewer columns, for a terminal too narrow for this one."""
    group: int | None = None
    """When no layout fits, one block per distinct value of this column (its rows under it as
    plain columns), not one block per row."""


def terminal_width(out: TextIO) -> int | None:
    """The width of `out` when it is a terminal (COLUMNS first, as rich and kubectl read it);
    None when it is a file or a pipe."""
    if not out.isatty():
        return None
    columns = settings.terminal_columns()
    if columns is not None:
        return columns
    try:
        return os.get_terminal_size(out.fileno()).columns
    except OSError:
        return 80


def render(grid: Grid, out: TextIO) -> None:
    """Write `grid` to `out` in the layout that fits it (see the module docstring)."""
    width = terminal_width(out)
    if width is None:
        out.write(plain(grid))
        return
    console = Console(file=out, width=width, soft_wrap=False, highlight=False)
    for candidate in (grid, grid.narrow):
        if candidate is None:
            continue
        if candidate.group is not None:
            console.print(blocks(candidate), markup=False, end="")
            return
        if boxed_width(candidate) <= width:
            console.print(_rich_table(candidate))
            return
        if plain_width(candidate) <= width:
            console.print(plain(candidate), markup=False, end="")
            return
    console.print(blocks(grid.narrow or grid), markup=False, end="")


def plain(grid: Grid) -> str:
    """Aligned columns without box drawing; the title, when any, is not repeated (the headers
    say what the columns are)."""
    headers = grid.headers
    widths = _widths(headers, grid.rows)
    lines = []
    for cells in (headers, *grid.rows):
        padded = []
        for index, cell in enumerate(cells):
            pad = " " * (widths[index] - cell_len(cell))
            last = index == len(cells) - 1
            if index in grid.right:
                padded.append(pad + cell)
            else:
                padded.append(cell if last else cell + pad)
        lines.append((" " * GAP).join(padded).rstrip())
    return "\n".join(lines) + "\n"


def blocks(grid: Grid) -> str:
    """One block per row, the first cell as its heading and `header: value` lines under it;
    or, for a grid with a `group` column, one block per value of it with its rows under it."""
    if grid.group is not None:
        return _grouped(grid, grid.group)
    out = []
    for cells in grid.rows:
        out.append(cells[0])
        out += [  # a value of several lines keeps them under its header
            f"  {h}: " + c.replace("\n", "\n" + " " * (len(h) + 4))
            for h, c in zip(grid.headers[1:], cells[1:], strict=True)
            if c
        ]
    return "\n".join(out) + "\n"


def _grouped(grid: Grid, column: int) -> str:
    keep = [i for i in range(len(grid.headers)) if i != column]
    right = frozenset(keep.index(i) for i in grid.right if i != column)
    out = []
    seen: dict[str, list[tuple[str, ...]]] = {}
    for cells in grid.rows:
        seen.setdefault(cells[column], []).append(tuple(cells[i] for i in keep))
    for heading, rows in seen.items():
        # no headers: the block's heading says what it lists, and they would widen the columns
        inner = Grid(headers=tuple("" for _ in keep), rows=tuple(rows), right=right)
        body = plain(inner).splitlines()[1:]  # the heading says what the block is
        out.append(f"{grid.headers[column]} {heading}")
        out += ["  " + line for line in body]
    return "\n".join(out) + "\n"


def boxed_width(grid: Grid) -> int:
    """The cells a boxed rich table of `grid` takes: every column at its widest cell, one
    space of padding each side, and a border between and around the columns."""
    widths = _widths(grid.headers, grid.rows)
    return sum(widths) + 3 * len(widths) + 1


def plain_width(grid: Grid) -> int:
    """The cells the widest line of `plain(grid)` takes."""
    widths = _widths(grid.headers, grid.rows)
    return sum(widths) + GAP * (len(widths) - 1)


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    widths = [cell_len(h) for h in headers]
    for cells in rows:
        for index, cell in enumerate(cells):
            widths[index] = max(widths[index], cell_len(cell))
    return widths


def _rich_table(grid: Grid) -> Table:
    table = Table(title=grid.title or None, box=box.SQUARE, show_lines=False)
    for index, header in enumerate(grid.headers):
        table.add_column(
            header,
            justify="right" if index in grid.right else "left",
            no_wrap=True,
            overflow="fold",
        )
    for index, cells in enumerate(grid.rows):
        style = grid.styles[index] if index < len(grid.styles) else ""
        table.add_row(*(Text(cell) for cell in cells), style=style or None)
    return table
