"""Prediction benchmark: 1,000 clusters × 3 resources × 7 days of 10-minute samples, forecast
2 hours ahead, against the same model written as a plain per-series Python loop.

The history is seeded: each cluster's background follows a daily wave in its own time zone,
with a slow trend, noise and occasional bursts. dro's `predict.forecast_grid` fits Holt-Winters
(α, β, γ by the squared error of its forecasts 2 hours, 12 steps, ahead) to all 3,000 series
at once and is timed on the grid
(`grid.resample` is timed apart, from `ClusterSample` objects). The baseline runs the same
candidate search and recursion in plain Python on a subset of series, scaled to 3,000. Both
must give the same parameters on the subset, or the run fails. It also reports the 2-hour-ahead
error on the last two hours held out, beside a seasonal-naive forecast (same time yesterday).

Run: `.venv/bin/python bench/predict.py [--clusters N] [--baseline-series N] [--repeat N]`.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from reconciler import predict
from reconciler.domain.forecast import ClusterSample
from reconciler.predict import grid, model

NOW = 1_736_121_600.0 + 7 * 86_400
STEP = 600.0
WINDOW = 7 * 86_400.0
HORIZON = 7_200.0
RESOURCES = ("cpu", "memory", "pods")


def history(clusters: int, seed: int) -> dict[str, tuple[ClusterSample, ...]]:
    """Seeded 7-day background series per cluster (see the module)."""
    rng = np.random.default_rng(seed)
    steps = int(WINDOW // STEP)
    t = np.arange(steps) * STEP + NOW - (steps - 1) * STEP
    out = {}
    for c in range(clusters):
        offset = rng.choice((-5.0, 0.0, 5.5, 9.0)) * 3600
        day = np.sin(2 * np.pi * ((t + offset) % 86_400) / 86_400)
        capacity = {"cpu": 128.0, "memory": 512.0 * 2**30, "pods": 1100.0}
        used = {}
        for i, r in enumerate(RESOURCES):
            base = rng.uniform(0.3, 0.6) * capacity[r]
            swing = rng.uniform(0.1, 0.25) * capacity[r]
            burst = (rng.random(steps) < 0.01) * rng.uniform(0.05, 0.15) * capacity[r]
            noise = rng.normal(0, 0.02 * capacity[r], steps)
            used[r] = base + swing * day + burst + noise + 0.0001 * i * np.arange(steps)
        out[f"cluster-{c:04d}"] = tuple(
            ClusterSample(
                at=float(t[k]),
                capacity=capacity,
                used={r: float(used[r][k]) for r in RESOURCES},
                placed={"cpu": 4.0},
            )
            for k in range(steps)
        )
    return out


def python_fit(y: list[float], m: int, ahead: int) -> tuple[float, float, float]:
    """The same coordinate search as `model.fit(ahead=ahead)`, one series, plain Python."""
    first = y[:m]
    level0 = sum(first) / m
    season0 = [v - level0 for v in first]

    def filtered(
        a: float, b: float, g: float, span: list[float], state: tuple[float, float, list[float]]
    ) -> tuple[float, tuple[float, float, list[float]]]:
        level, trend, season = state[0], state[1], list(state[2])
        made = [level + (k + 1) * trend for k in range(ahead)]  # forecasts `ahead` before
        total = 0.0
        for t, v in enumerate(span):
            base = level + trend
            e = v - base - season[t % m]
            miss = v - made[t % ahead] - season[t % m]
            season[t % m] += g * e
            total += miss * miss
            level = base + a * e
            trend += a * b * e
            made[t % ahead] = level + ahead * trend
        return total, (level, trend, season)

    warm = max(0, (len(y) - model.FIT_DAYS * m) // m * m)
    state = filtered(*model.START, y[:warm], (level0, 0.0, season0))[1]
    recent = y[warm:]

    def sse(a: float, b: float, g: float) -> float:
        return filtered(a, b, g, recent, state)[0]

    best = list(model.START)
    for index, values in ((0, model.ALPHAS), (1, model.BETAS), (2, model.GAMMAS)):
        scores = []
        for v in values:
            trial = list(best)
            trial[index] = v
            scores.append(sse(*trial))
        best[index] = values[scores.index(min(scores))]
    return best[0], best[1], best[2]


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--baseline-series", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()

    samples = history(args.clusters, args.seed)
    started = time.perf_counter()
    g = grid.resample(samples, now=NOW, step=STEP, window=WINDOW)
    resample_s = time.perf_counter() - started
    series = g.values.shape[0] * g.values.shape[1]
    timings = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        result = predict.forecast_grid(g, now=NOW, horizon=HORIZON, step=STEP)
        timings.append(time.perf_counter() - started)
    dro_s = min(timings)
    models = sorted({f.model for f in result.values()})
    mape = float(np.mean([e for f in result.values() for e in f.error.values()]))

    m = predict.season_length(STEP)
    ahead = int(HORIZON // STEP)
    subset = g.values.reshape(series, -1)[: args.baseline_series]
    started = time.perf_counter()
    loop_params = [python_fit([float(v) for v in row], m, ahead) for row in subset]
    loop_s = (time.perf_counter() - started) / len(subset) * series
    ours = model.fit(subset, m, seasonal=True, ahead=ahead).params
    if not np.allclose(np.asarray(loop_params), ours):
        print("the Python loop and numpy chose different parameters", file=sys.stderr)
        return 1

    held = g.values.reshape(series, -1)
    future = held[:, -ahead:]
    path = model.fit(held[:, :-ahead], m, seasonal=True, ahead=ahead).forecast(ahead)
    naive = held[:, -ahead - m : -m]
    counted = future > 0
    dro_mape = float(np.mean(np.abs(path - future)[counted] / future[counted]))
    naive_mape = float(np.mean(np.abs(naive - future)[counted] / future[counted]))

    print(
        f"history: {args.clusters} clusters × {len(g.resources)} resources × {g.times.size} steps"
    )
    print(f"  models: {', '.join(models)}; mean MAPE at the horizon over the last day {mape:.1%}")
    print(f"  grid.resample from ClusterSample objects: {resample_s * 1000:.0f} ms")
    print(f"  dro forecast (fit + 2 h forecast), best of {args.repeat}: {dro_s * 1000:.0f} ms")
    print(
        f"  baseline, the same model as a Python loop per series ({len(subset)} series, scaled "
        f"to {series}): {loop_s:.1f} s"
    )
    print(
        f"  2 h ahead on the held-out last 2 hours: MAPE {dro_mape:.1%}; seasonal naive "
        f"(same time yesterday) {naive_mape:.1%}"
    )
    verdict = "met" if dro_s < 0.3 else "NOT met"
    print(f"  ratio: {loop_s / dro_s:.0f}× faster; target < 300 ms: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
