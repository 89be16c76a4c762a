"""Water-level charts as inline SVG, made on the server: no script, no request, no style sheet.

A chart plots one resource of one cluster: its water level (used / capacity) at each pass of
the history as a line, the limit as a dashed line, and the forecast, where prediction is on, as
a dotted segment from the last point to the right edge. The vertical scale runs from 0 to 100 %
(further when a level passed 100 %). Colours are presentation attributes, so a strict Content
Security Policy (no inline styles) lets them through; the chart's `<title>` and `aria-label`
say in words what it draws. The same input gives the same bytes.

Called by `web.pages` and `web.views`.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

LINE = "#1f5fa8"
LIMIT = "#b3261e"
FORECAST = "#7a4fb0"
GRID = "#c8c8c8"


def percent(level: float | None) -> str:
    """A water level as a percentage with one decimal ("—" when unknown)."""
    return "—" if level is None else f"{level * 100:.1f} %"


def chart(
    resource: str,
    points: Sequence[tuple[float, float]],
    *,
    limit: float | None,
    forecast: float | None,
    width: int = 160,
    height: int = 40,
) -> Markup:
    """The SVG of one resource's water level over time (see the module)."""
    now = points[-1][1] if points else None
    said = (
        f"{resource} water level {percent(now)}"
        + (f", limit {percent(limit)}" if limit is not None else "")
        + (f", forecast {percent(forecast)}" if forecast is not None else "")
        + (f", {len(points)} pass{'' if len(points) == 1 else 'es'}" if points else ", no history")
    )
    top = max([1.0, *(v for _, v in points), limit or 0.0, forecast or 0.0])
    pad = 2.0
    plot_w = width - 2 * pad - (12 if forecast is not None else 0)

    def y(level: float) -> float:
        return round(height - pad - (height - 2 * pad) * (level / top), 1)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(said)}" class="chart">',
        f"<title>{escape(said)}</title>",
        f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" fill="none" '
        f'stroke="{GRID}"/>',
    ]
    last_x = pad
    if points:
        first, final = points[0][0], points[-1][0]
        span = final - first
        xy = []
        for at, level in points:
            x = pad + (plot_w * (at - first) / span if span > 0 else plot_w)
            xy.append(f"{round(x, 1)},{y(level)}")
        last_x = round(pad + plot_w, 1)
        if len(xy) == 1:
            parts.append(f'<circle cx="{last_x}" cy="{y(points[0][1])}" r="2" fill="{LINE}"/>')
        else:
            parts.append(
                f'<polyline points="{" ".join(xy)}" fill="none" stroke="{LINE}" '
                'stroke-width="1.5"/>'
            )
    if limit is not None:
        parts.append(
            f'<line x1="{pad}" y1="{y(limit)}" x2="{width - pad}" y2="{y(limit)}" '
            f'stroke="{LIMIT}" stroke-width="1" stroke-dasharray="4 2"/>'
        )
    if forecast is not None and now is not None:
        parts.append(
            f'<line x1="{last_x}" y1="{y(now)}" x2="{width - pad}" y2="{y(forecast)}" '
            f'stroke="{FORECAST}" stroke-width="1.5" stroke-dasharray="1 2"/>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
