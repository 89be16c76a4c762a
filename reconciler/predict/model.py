"""The forecasting models, vectorised over series: additive Holt-Winters, Holt, last value.

Every function takes a block of series of one length, `y` of shape (series, time), and works
on all of them at once; the only Python loop is over time. The recursions are written in
error-correction form, which is the textbook (and statsmodels') additive Holt-Winters:

    ŷ_t   = l_{t-1} + b_{t-1} + s_{t-m}          e_t = y_t − ŷ_t
    l_t   = l_{t-1} + b_{t-1} + α·e_t            (= α(y_t − s_{t-m}) + (1−α)(l_{t-1} + b_{t-1}))
    b_t   = b_{t-1} + α·β·e_t                    (= β(l_t − l_{t-1}) + (1−β)·b_{t-1})
    s_t   = s_{t-m} + γ·e_t                      (= γ(y_t − l_{t-1} − b_{t-1}) + (1−γ)·s_{t-m})

Holt's linear trend is the same without the season. Holt-Winters starts from statsmodels'
"simple" level and season (l₀ the mean of the first season, s the first season minus l₀) but
a flat trend, b₀ = 0: the simple b₀, the difference of two single days over m, is mostly the
day-to-day noise of a daily series, and with small β it tilts every later forecast (on the
7-day bench trace it cost 0.8 points of error at 2 hours). β still learns a real trend. Holt
starts from the least-squares line through its first points.

The smoothing parameters are fitted per series by the squared error of the forecasts they are
used for: `ahead` steps ahead, the horizon's (one step is the textbook fit). The two differ on
load with short-lived noise: an hour-correlated wobble rewards a fast level one step ahead and
is gone two hours later, so a one-step fit chases it and loses to "the same time yesterday" at
the horizon. The search is a coordinate search over fixed candidate values (α, then β, then
γ), each stage one run over the series × its candidates; Holt, whose series are short,
searches α × β jointly. Fixed candidates and a fixed order make the fit deterministic.
Holt-Winters searches on the last `FIT_DAYS` days: the days before only carry the states
forward, with the starting parameters.

Called by `predict`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

ALPHAS = (0.01, 0.05, 0.2, 0.5, 0.8)
"""Level smoothing candidates."""
BETAS = (0.0, 0.01, 0.05, 0.15)
"""Trend smoothing candidates (as a share of α, statsmodels' β)."""
GAMMAS = (0.02, 0.1, 0.3, 0.6)
"""Season smoothing candidates."""
HOLT_START = 12
"""How many first points Holt's initial level and trend are drawn through."""
FIT_DAYS = 3
"""Holt-Winters fits its parameters (and reports its errors) on the last this many days."""
START = (0.3, 0.01, 0.1)
"""α, β, γ held while another parameter is searched."""


@dataclass(frozen=True, slots=True)
class Fit:
    """A block of series fitted: final states, parameters and the errors at its lead."""

    level: FloatArray
    """(series,) the level after the last observation."""
    trend: FloatArray
    """(series,) the trend after the last observation (0 for last value)."""
    season: FloatArray
    """(m, series) the season, indexed by time mod m (shape (0, series) without a season)."""
    errors: FloatArray
    """(series, time) the errors y_t − ŷ_t of the forecasts made `ahead` steps before (the
    lead the fit used) with the fitted parameters, over the span they were fitted on (the last
    `FIT_DAYS` days for Holt-Winters), ending at the last observation."""
    params: FloatArray
    """(series, 3) α, β, γ."""

    def forecast(self, steps: int) -> FloatArray:
        """(series, steps): the forecast 1..steps ahead of the last observation."""
        h = np.arange(1, steps + 1, dtype=np.float64)
        out = self.level[:, None] + self.trend[:, None] * h[None, :]
        m = self.season.shape[0]
        if m:
            t = self.errors.shape[1]
            slots = (t + np.arange(steps)) % m
            out = out + self.season[slots, :].T
        return out


def initial_states(
    y: FloatArray, m: int, *, seasonal: bool
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """statsmodels' simple initialisation, with a flat trend for Holt-Winters (see the module):
    (level, trend, season (m, series))."""
    if seasonal:
        first = y[:, :m]
        level = first.mean(axis=1)
        trend = np.zeros_like(level)
        season = (first - level[:, None]).T.copy()
        return level, trend, season
    # Holt: the least-squares line through the first points (up to HOLT_START), which the
    # noise of two single points would otherwise throw off.
    n = min(y.shape[1], HOLT_START)
    t = np.arange(n, dtype=np.float64) - (n - 1) / 2.0
    head = y[:, :n]
    trend = (head * t).sum(axis=1) / max(float((t * t).sum()), 1.0)
    level = head.mean(axis=1) - trend * (n - 1) / 2.0
    return level, trend, np.zeros((0, y.shape[0]))


def run(
    y: FloatArray,
    alpha: FloatArray,
    beta: FloatArray,
    gamma: FloatArray,
    states: tuple[FloatArray, FloatArray, FloatArray],
    *,
    keep_errors: bool = False,
    ahead: int = 1,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Filter series `y` (S, T) with parameters of shape (S, C) (C candidates per series).

    Returns (sse (S, C), level, trend, season (m, S, C), errors (T, S, C) or empty): the sum of
    squared `ahead`-step errors and the final states per series and candidate. The forecast
    of y_t made `ahead` steps before is l_{t-ahead} + ahead·b_{t-ahead} + s_{t-m} (the season
    slot is not updated in between while ahead ≤ m); the first `ahead` points are forecast
    from the initial states, as made just before the first point.
    """
    s_count, t_count = y.shape
    c_count = alpha.shape[1]
    level0, trend0, season0 = states
    level = np.repeat(level0[:, None], c_count, axis=1)
    trend = np.repeat(trend0[:, None], c_count, axis=1)
    m = season0.shape[0]
    season = np.repeat(season0[:, :, None], c_count, axis=2) if m else season0
    k_level = np.ascontiguousarray(alpha)
    k_trend = alpha * beta
    k_season = np.ascontiguousarray(gamma)
    sse = np.zeros((s_count, c_count))
    errors = np.zeros((t_count, s_count, c_count) if keep_errors else (0, 0, 0))
    yt = np.ascontiguousarray(y.T)
    base = np.empty_like(level)
    err = np.empty_like(level)
    tmp = np.empty_like(level)
    far = ahead > 1
    # With ahead > 1, lead[t % ahead] is l + ahead·b as it stood `ahead` steps before t.
    lead = np.stack([level + (k + 1) * trend for k in range(ahead)]) if far else base
    miss = np.empty_like(level)
    for t in range(t_count):
        np.add(level, trend, out=base)
        np.subtract(yt[t][:, None], base, out=err)
        if far:
            np.subtract(yt[t][:, None], lead[t % ahead], out=miss)
        if m:
            slot = season[t % m]
            np.subtract(err, slot, out=err)
            if far:
                np.subtract(miss, slot, out=miss)
            np.multiply(k_season, err, out=tmp)
            np.add(slot, tmp, out=slot)
        scored = miss if far else err
        np.multiply(scored, scored, out=tmp)
        np.add(sse, tmp, out=sse)
        np.multiply(k_level, err, out=tmp)
        np.add(base, tmp, out=level)
        np.multiply(k_trend, err, out=tmp)
        np.add(trend, tmp, out=trend)
        if far:
            np.multiply(trend, float(ahead), out=tmp)
            np.add(level, tmp, out=lead[t % ahead])
        if keep_errors:
            errors[t] = scored
    return sse, level, trend, season, errors


def fit(y: FloatArray, m: int, *, seasonal: bool, ahead: int = 1) -> Fit:
    """Fit Holt-Winters (seasonal, needs 2·m points) or Holt (needs 3 points) to each series,
    by the squared error of its forecasts `ahead` steps ahead (at most m with a season)."""
    s_count = y.shape[0]
    ahead = max(1, min(ahead, m) if seasonal else ahead)
    states = initial_states(y, m, seasonal=seasonal)
    if not seasonal:
        states = (states[0], states[1], np.zeros((0, s_count)))
    best = np.tile(np.asarray(START, dtype=np.float64), (s_count, 1))
    rows = np.arange(s_count)
    warm = max(0, (y.shape[1] - FIT_DAYS * m) // m * m) if seasonal else 0
    if warm:
        # Days before the last FIT_DAYS only carry the states forward (with START); whole
        # days, so the season slots stay where they were.
        _, level, trend, season, _ = run(
            y[:, :warm], best[:, :1], best[:, 1:2], best[:, 2:3], states
        )
        states = (level[:, 0], trend[:, 0], season[:, :, 0])
        y = np.ascontiguousarray(y[:, warm:])
    # Holt (short series): α and β jointly; Holt-Winters: α, β, then γ, one at a time.
    stages: list[tuple[list[int], list[tuple[float, ...]]]]
    if seasonal:
        stages = [([0], [(a,) for a in ALPHAS]), ([1], [(b,) for b in BETAS])]
        stages.append(([2], [(g,) for g in GAMMAS]))
    else:
        stages = [([0, 1], [(a, b) for a in ALPHAS for b in BETAS])]
    for columns, values in stages:
        candidates = np.repeat(best[:, None, :], len(values), axis=1)
        candidates[:, :, columns] = np.asarray(values)
        sse = run(
            y, candidates[:, :, 0], candidates[:, :, 1], candidates[:, :, 2], states, ahead=ahead
        )[0]
        # Ties (a flat series) go to the first candidate: argmin is deterministic.
        best = candidates[rows, np.argmin(sse, axis=1)]
    _, level, trend, season, errors = run(
        y, best[:, :1], best[:, 1:2], best[:, 2:3], states, keep_errors=True, ahead=ahead
    )
    return Fit(
        level=level[:, 0],
        trend=trend[:, 0],
        season=season[:, :, 0] if season.shape[0] else np.zeros((0, s_count)),
        errors=errors[:, :, 0].T.copy(),
        params=best if seasonal else np.column_stack([best[:, :2], np.zeros(s_count)]),
    )


def last_value(y: FloatArray, ahead: int = 1) -> Fit:
    """The last value as the forecast; errors are the differences `ahead` steps apart."""
    s_count, t_count = y.shape
    errors = np.zeros((s_count, t_count))
    lead = max(1, ahead)
    if t_count > lead:
        errors[:, lead:] = y[:, lead:] - y[:, :-lead]
    return Fit(
        level=y[:, -1].copy(),
        trend=np.zeros(s_count),
        season=np.zeros((0, s_count)),
        errors=errors,
        params=np.zeros((s_count, 3)),
    )
