"""`dro simulate TRACE`: replay a trace through dro's own scheduler for several policies.

`run` reads and checks the trace (`trace`), walks its steps once (`timeline`), replays them
through each policy (`replay`, `leastloaded`, the rewrites of `policies`), and sums up each
policy's measurements (`metrics`). `document` is the result as `-o json` prints it (`cli.simulate`
prints it as a table); `plot` draws the water levels. The same trace always gives the same
document: timings are kept apart (`Result.timings`).

Called by `cli.simulate` and `simulate.chart`.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.domain import durations
from reconciler.errors import UsageError
from reconciler.simulate import chart, leastloaded, metrics, policies, replay, seams
from reconciler.simulate import trace as traces
from reconciler.simulate.timeline import Timeline
from reconciler.simulate.trace import FloatArray

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """A simulation's figures per policy, and what the chart draws."""

    trace: traces.Trace
    timeline: Timeline
    rows: tuple[dict[str, Any], ...]
    levels: tuple[tuple[str, FloatArray], ...]
    """Per policy: (steps, clusters, resources) water levels, NaN where a cluster is absent."""
    forecast: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def uses_data(self) -> bool:
        """Whether any workload reads or writes a data set (cross-domain bytes can be > 0)."""
        spec = self.trace.spec
        return bool(spec.data_access) or any(p.placement.data for p in spec.placement_policies)


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


def run(
    path: Path, names: Sequence[str], progress: Progress = lambda _: None, *, jobs: int = 1
) -> Result:
    """Replay the trace at `path` for each policy of `names` (see the module docstring)."""
    return replay_trace(traces.read(path), names, progress, jobs=jobs)


def replay_trace(
    trace: traces.Trace,
    names: Sequence[str],
    progress: Progress = lambda _: None,
    *,
    jobs: int = 1,
) -> Result:
    """Replay a checked trace for each policy of `names`, `jobs` policies at a time (forked
    processes; each policy's replay is independent, so the result is the same)."""
    timeline = Timeline(trace)
    steps = list(timeline.steps())
    progress(
        f"{trace.name}: {trace.steps} steps of {durations.short(trace.step)}, "
        f"{len(timeline.names)} clusters, {len(timeline.workloads)} objects"
    )
    todo = list(names)
    _SHARED[:] = [timeline, steps]
    try:
        if jobs > 1 and len(todo) > 1:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=context) as pool:
                futures = {name: pool.submit(_replay, name) for name in todo}
                for name in todo:
                    _said(progress, futures[name].result())
                outcomes = {name: futures[name].result() for name in todo}
        else:
            outcomes = {name: _said(progress, _replay(name)) for name in todo}
    finally:
        _SHARED.clear()
    forecast = next(
        (o.forecast for o in outcomes.values() if o.forecast),
        metrics.forecast_error(
            {}, timeline, steps, seams.prediction_settings(trace.spec, trace.step).horizon
        ),
    )
    return Result(
        trace=trace,
        timeline=timeline,
        rows=tuple(outcomes[n].row for n in names),
        levels=tuple((n, outcomes[n].levels) for n in names),
        forecast=forecast,
        timings={n: outcomes[n].timing for n in names},
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One policy's replay, summed up (what a worker process sends back)."""

    name: str
    row: dict[str, Any]
    levels: FloatArray
    timing: dict[str, float]
    forecast: dict[str, Any]
    took: float


_SHARED: list[Any] = []
"""[timeline, steps] of the replay under way, inherited by forked workers."""


def _replay(name: str) -> Outcome:
    """Replay one policy over `_SHARED`'s steps."""
    timeline, steps = _SHARED
    started = time.perf_counter()
    policy: replay.Policy
    if name == "least-loaded":
        policy = leastloaded.LeastLoaded(timeline)
    else:
        policy = replay.Scheduled(name, timeline, predict=name in ("dro", "dro-nocost"))
    recorder = replay.play(policy, timeline, steps)
    row = metrics.summary(recorder, timeline, steps)
    forecast: dict[str, Any] = {}
    if name == "dro" and isinstance(policy, replay.Scheduled):
        trace = timeline.trace
        horizon = seams.prediction_settings(trace.spec, trace.step).horizon
        forecast = metrics.forecast_error(policy.forecasts, timeline, steps, horizon)
        row["forecastMape"] = forecast["mape"]
    return Outcome(
        name=name,
        row=row,
        levels=recorder.levels,
        timing=metrics.timing(recorder),
        forecast=forecast,
        took=time.perf_counter() - started,
    )


def _said(progress: Progress, outcome: Outcome) -> Outcome:
    per, cpu = outcome.timing["secondsPerStep"], outcome.timing["cpuSecondsPerStep"]
    progress(
        f"{outcome.name}: {outcome.took:.1f} s ({per:.3f} s per step, {cpu:.3f} s of processor "
        "time)"
    )
    return outcome


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
