"""The chart of `dro simulate --plot F.svg|png`: water levels over time, one panel per policy.

Each panel shows, per step, the fleet's mean water level (the highest of cpu and memory per
cluster, averaged over the clusters present), the hottest cluster's, the band between the
coolest and the hottest, and the 0.90 overload line; the panels share both axes, so the
policies compare at a glance. Matplotlib is imported only when a chart is drawn, on the Agg
canvas without pyplot, and the same result gives the same bytes.

Called by `cli.simulate` and `simulate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reconciler.errors import UsageError
from reconciler.simulate.metrics import OVERLOAD

if TYPE_CHECKING:
    from reconciler.simulate import Result

SUFFIXES = (".svg", ".png")
MEAN_COLOUR = "#1f77b4"
MAX_COLOUR = "#d62728"
BAND_COLOUR = "#c6dbef"


def check(path: Path) -> None:
    """Refuse a path whose suffix names no format `write` draws (before the replay runs)."""
    if path.suffix.lower() not in SUFFIXES:
        raise UsageError(
            f"--plot {path}: cannot tell the chart format; use a path ending in "
            f"{' or '.join(SUFFIXES)}"
        )


def write(result: Result, path: Path) -> None:
    """Draw `result`'s water levels to `path`, creating its parent directory."""
    check(path)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

    trace = result.trace
    span = trace.steps * trace.step
    unit, size = ("days", 86400.0) if span > 2 * 86400.0 else ("hours", 3600.0)
    days = np.arange(trace.steps) * trace.step / size
    panels = len(result.levels)
    with matplotlib.rc_context({"svg.hashsalt": "dro", "svg.fonttype": "none"}):
        figure = Figure(figsize=(10.0, 1.2 + 1.9 * max(1, panels)), layout="constrained")
        FigureCanvasAgg(figure)
        figure.suptitle(f"Water levels over time: {trace.name} (highest of cpu and memory)")
        axes = figure.subplots(max(1, panels), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
        top = 1.0
        for ax, (name, levels) in zip(axes, result.levels, strict=False):
            overall = np.where(np.isnan(levels), -np.inf, levels).max(axis=2)
            overall = np.where(np.isfinite(overall), overall, np.nan)
            present = np.isfinite(overall).any(axis=1)
            filled = np.where(np.isfinite(overall), overall, 0.0)
            count = np.maximum(np.isfinite(overall).sum(axis=1), 1)
            mean = np.where(present, filled.sum(axis=1) / count, np.nan)
            high = np.where(
                present, np.where(np.isfinite(overall), overall, -np.inf).max(axis=1), np.nan
            )
            low = np.where(
                present, np.where(np.isfinite(overall), overall, np.inf).min(axis=1), np.nan
            )
            top = max(top, float(np.nanmax(high)) if present.any() else 0.0)
            ax.fill_between(
                days, low, high, color=BAND_COLOUR, linewidth=0, label="coolest–hottest"
            )
            ax.plot(days, mean, color=MEAN_COLOUR, linewidth=1.2, label="mean")
            ax.plot(days, high, color=MAX_COLOUR, linewidth=0.9, label="hottest cluster")
            ax.axhline(OVERLOAD, color="black", linestyle="--", linewidth=0.8, label="0.90")
            over = int((np.nan_to_num(overall, nan=0.0) > OVERLOAD).sum())
            events = "overload event" if over == 1 else "overload events"
            ax.set_title(f"{name}: {over} {events}", loc="left", fontsize="medium")
            ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
            ax.grid(axis="y", linewidth=0.4, alpha=0.5)
        axes[0].set_ylim(0.0, top * 1.05)
        axes[-1].set_xlabel(f"{unit} since the start of the trace")
        handles, labels = axes[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside lower center", ncols=len(labels))
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".svg":
            figure.savefig(path, format="svg", metadata={"Date": None})
        else:
            figure.savefig(path, format="png", metadata={"Software": None}, dpi=100)
