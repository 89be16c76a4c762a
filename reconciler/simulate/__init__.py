"""`dro simulate TRACE`: replay a trace through dro's own scheduler for several policies.

`run` reads and checks the trace (`trace`), walks its steps once (`timeline`), replays them
through each policy (`replay`, `leastloaded`, the rewrites of `policies`), and sums up each
policy's measurements (`metrics`). `document` is the result as `-o json` prints it (`cli.simulate`
prints it as a table); `plot` draws the water levels. The same trace always gives the same
document: timings are kept apart (`Result.timings`).

Called by `cli.simulate` and `simulate.chart`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.domain import durations
from reconciler.errors import UsageError
from reconciler.simulate import chart, leastloaded, metrics, policies, replay, seams
from reconciler.simulate import trace as traces
from reconciler.simulate.replay import Recorder
from reconciler.simulate.timeline import Timeline

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """A simulation's figures per policy, and what the chart draws."""

    trace: traces.Trace
    timeline: Timeline
    rows: tuple[dict[str, Any], ...]
    recorders: tuple[Recorder, ...]
    forecast: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)


def choose(given: str | None) -> tuple[str, ...]:
    """`--policies a,b`: the named policies in the table's order; all five by default."""
    if not given:
        return policies.POLICIES
    names = [n.strip() for n in given.split(",") if n.strip()]
    unknown = [n for n in names if n not in policies.ALL]
    if unknown or not names:
        raise UsageError(
            f"--policies: unknown policy {', '.join(unknown) or repr(given)}; "
            f"choose from {', '.join(policies.ALL)}"
        )
    return tuple(n for n in policies.ALL if n in names)


def run(path: Path, names: Sequence[str], progress: Progress = lambda _: None) -> Result:
    """Replay the trace at `path` for each policy of `names` (see the module docstring)."""
    return replay_trace(traces.read(path), names, progress)


def replay_trace(
    trace: traces.Trace, names: Sequence[str], progress: Progress = lambda _: None
) -> Result:
    """Replay a checked trace for each policy of `names`."""
    timeline = Timeline(trace)
    steps = list(timeline.steps())
    progress(
        f"{trace.name}: {trace.steps} steps of {durations.short(trace.step)}, "
        f"{len(timeline.names)} clusters, {len(timeline.workloads)} objects"
    )
    rows, recorders, timings = [], [], {}
    forecast: dict[str, Any] = {}
    horizon = seams.prediction_settings(trace.spec, trace.step)[0]
    for name in names:
        started = time.perf_counter()
        policy: replay.Policy
        if name == "least-loaded":
            policy = leastloaded.LeastLoaded(timeline)
        else:
            policy = replay.Scheduled(name, timeline, predict=name in ("dro", "dro-nocost"))
        recorder = replay.play(policy, timeline, steps)
        row = metrics.summary(recorder, timeline, steps)
        if name == "dro":
            made = policy.forecasts if isinstance(policy, replay.Scheduled) else {}
            forecast = metrics.forecast_error(made, timeline, steps, horizon)
            row["forecastMape"] = forecast["mape"]
        rows.append(row)
        recorders.append(recorder)
        timings[name] = metrics.timing(recorder)
        took = time.perf_counter() - started
        progress(
            f"{name}: {took:.1f} s ({timings[name]['secondsPerStep']:.3f} s per step in the "
            "scheduler)"
        )
    if not forecast:
        forecast = metrics.forecast_error({}, timeline, steps, horizon)
    return Result(
        trace=trace,
        timeline=timeline,
        rows=tuple(rows),
        recorders=tuple(recorders),
        forecast=forecast,
        timings=timings,
    )


def document(result: Result, *, timings: bool = False) -> dict[str, Any]:
    """The result as `-o json` prints it: stable keys, rounded figures."""
    trace, timeline = result.trace, result.timeline
    policies_out = []
    for row in result.rows:
        entry = dict(row)
        if timings:
            entry.update(result.timings[row["policy"]])
        policies_out.append(entry)
    return {
        "trace": {
            "name": trace.name,
            "steps": trace.steps,
            "step": durations.short(trace.step),
            "start": durations.rfc3339(trace.start),
            "clusters": len(timeline.names),
            "workloads": int(timeline.divides.sum()),
        },
        "overloadLevel": metrics.OVERLOAD,
        "policies": policies_out,
        "forecast": result.forecast,
    }


def plot(result: Result, path: Path) -> None:
    """Draw the water levels over time per policy to `path` (`simulate.chart`)."""
    chart.write(result, path)
