"""Chart of a review's water levels: each cluster's used/capacity per resource, before → after.

`dro plan --chart PATH` calls `write` with the `PlanDiff` it reports; the picture is an SVG or
a PNG, chosen by the suffix of PATH. Each resource's panel marks 100 % and the water-level
limit of `dro.yaml` (where re-balancing starts moving replicas off), and each cluster whose
level changed carries its delta in percentage points beside its bar. Matplotlib is imported
only when a chart is drawn, on the non-interactive Agg canvas and without pyplot, and the
output is byte-for-byte reproducible.

Called by `cli.plan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.errors import UsageError
from reconciler.review import plandiff

if TYPE_CHECKING:
    from matplotlib.axes import Axes

SUFFIXES = (".svg", ".png")
"""The picture formats `write` accepts, by file suffix (case-insensitive)."""
ALWAYS_SHOWN = ("cpu", "memory")
"""Resources that get a panel even when every level is 0."""
BEFORE_COLOUR = "#b0b0b0"
AFTER_COLOUR = "#1f77b4"
LIMIT_COLOUR = "#d62728"
BAR_HEIGHT = 0.38
SHOWN_DELTA = 0.0005
"""A level change smaller than this (0.05 percentage points) is not labelled."""


def write(diff: plandiff.PlanDiff, path: Path) -> None:
    """Draw the water levels of `diff` per cluster and resource, base beside head, to `path`
    (`.svg` or `.png`), creating its parent directory; the same diff gives the same bytes."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UsageError(
            f"{path}: cannot tell the chart format; use a path ending in {' or '.join(SUFFIXES)}"
        )
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    levels = sorted(diff.levels, key=lambda level: level.cluster)
    resources = _resources(levels)
    height = min(40.0, max(3.0, 1.5 + 0.3 * len(levels)))
    with matplotlib.rc_context({"svg.hashsalt": "dro", "svg.fonttype": "none"}):
        figure = Figure(figsize=(1.5 + 3.5 * max(1, len(resources)), height), layout="constrained")
        FigureCanvasAgg(figure)
        figure.suptitle(f"Water levels: {diff.base.ref} → {diff.head.ref}")
        if not levels:
            figure.text(0.5, 0.5, "no water levels to show", ha="center", va="center")
        else:
            axes = figure.subplots(1, len(resources), sharey=True, squeeze=False)[0]
            limits = {**diff.base.water_level_limits, **diff.head.water_level_limits}
            for ax, resource in zip(axes, resources, strict=True):
                _panel(ax, resource, levels, limits.get(resource))
            axes[0].set_yticks(range(len(levels)), [level.cluster for level in levels])
            axes[0].invert_yaxis()
            figure.legend(
                handles=[
                    Patch(color=BEFORE_COLOUR, label=f"before ({diff.base.ref})"),
                    Patch(color=AFTER_COLOUR, label=f"after ({diff.head.ref})"),
                    Line2D([], [], color=LIMIT_COLOUR, linestyle=":", label="water-level limit"),
                ],
                loc="outside lower center",
                ncols=3,
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".svg":
            figure.savefig(path, format="svg", metadata={"Date": None})
        else:
            figure.savefig(path, format="png", metadata={"Software": None})


def _resources(levels: list[plandiff.LevelChange]) -> list[str]:
    """`ALWAYS_SHOWN`, then every other resource with a non-zero level somewhere, by name."""
    others = {
        resource
        for level in levels
        for side in (level.before, level.after)
        if side
        for resource, value in side.items()
        if value and resource not in ALWAYS_SHOWN
    }
    return [*ALWAYS_SHOWN, *sorted(others)]


def _panel(
    ax: Axes, resource: str, levels: list[plandiff.LevelChange], limit: float | None
) -> None:
    """One resource: a grey bar for the base and a coloured one for the head, per cluster,
    the head's bar labelled with its change; a dashed line at 100 % and a red one at `limit`."""
    from matplotlib.ticker import PercentFormatter

    for row, level in enumerate(levels):
        for side, offset, colour, missing in (
            (level.before, -BAR_HEIGHT / 2, BEFORE_COLOUR, "added"),
            (level.after, BAR_HEIGHT / 2, AFTER_COLOUR, "removed"),
        ):
            if side is None:
                ax.text(0.01, row + offset, missing, va="center", fontsize="small", style="italic")
                continue
            ax.barh(row + offset, _value(side, resource), height=BAR_HEIGHT, color=colour)
        change = delta(level, resource)
        if change is not None:
            after = _value(level.after or {}, resource)
            ax.text(after, row + BAR_HEIGHT / 2, f" {change}", va="center", fontsize="small")
    largest = max(
        (_value(side, resource) for lv in levels for side in (lv.before, lv.after) if side),
        default=0.0,
    )
    ax.set_xlim(0.0, max(1.0, largest) * 1.2)
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    ax.axvline(1.0, color="black", linestyle="--", linewidth=0.8)
    if limit is not None and limit < 1.0:
        ax.axvline(limit, color=LIMIT_COLOUR, linestyle=":", linewidth=1.2)
        ax.text(
            limit,
            1.0,
            f"limit {limit:.0%}",
            transform=ax.get_xaxis_transform(),
            color=LIMIT_COLOUR,
            ha="right",
            va="bottom",
            fontsize="small",
        )
    ax.set_title(resource, pad=14)


def delta(level: plandiff.LevelChange, resource: str) -> str | None:
    """A cluster's change of `resource` in percentage points, e.g. `+2.4 pp` or `−1.0 pp`;
    None when it is on one side only or changed by less than `SHOWN_DELTA`."""
    if level.before is None or level.after is None:
        return None
    change = _value(level.after, resource) - _value(level.before, resource)
    if abs(change) < SHOWN_DELTA:
        return None
    return f"{'+' if change > 0 else '−'}{abs(change) * 100:.1f} pp"


def _value(side: Mapping[str, float], resource: str) -> float:
    """The level of `resource` on one side; 0 when the side does not report it."""
    return float(side.get(resource, 0.0))
