"""Prediction: dro's vectorised Holt-Winters / Holt / last-value cascade, checked against
statsmodels' ExponentialSmoothing (a test dependency only), the model chosen by history
length, the grid, and determinism.

Tolerances, stated once: with the same smoothing parameters and initial states the recursions
agree with statsmodels to 1e-9 (they are the same equations); with each side fitting its own
parameters (dro a fixed candidate grid, statsmodels its optimiser) the 2-hour forecasts agree
within 2 % of the series' mean on average and 5 % at worst (Holt-Winters, against
statsmodels' fit from the same "simple" initial states), and Holt's within 4 % at worst
(against statsmodels' default, which also fits the initial states).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import predict
from reconciler.domain.forecast import ClusterSample
from reconciler.predict import grid, model

statsmodels = pytest.importorskip("statsmodels.tsa.holtwinters")

STEP = 600.0
M = 144  # one day of 10-minute steps
NOW = 1_800_000_000.0


def seasonal(seed: int, days: int = 3, *, trend: float = 0.002, noise: float = 0.5) -> np.ndarray:
    """A seeded daily-seasonal series with a trend, a second harmonic burst and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * M)
    phase = rng.uniform(0, 2 * np.pi)
    wave = 6 * np.sin(2 * np.pi * t / M + phase) + 3 * (np.sin(4 * np.pi * t / M) > 0.8)
    return 20 + trend * t + wave + rng.normal(0, noise, t.size)


def history_of(
    series: dict[str, np.ndarray], *, capacity: float = 100.0
) -> dict[str, tuple[ClusterSample, ...]]:
    """Samples every STEP ending at NOW; the series is the cpu background (placed 2 of used)."""
    out = {}
    for name, y in series.items():
        start = NOW - STEP * (len(y) - 1)
        out[name] = tuple(
            ClusterSample(
                at=start + STEP * i,
                capacity={"cpu": capacity},
                used={"cpu": float(v) + 2.0},
                placed={"cpu": 2.0},
            )
            for i, v in enumerate(y)
        )
    return out


@pytest.mark.parametrize("seed", range(4))
def test_holt_winters_recursion_is_statsmodels_with_the_same_parameters(seed: int) -> None:
    y = seasonal(seed)
    states = model.initial_states(y[None, :], M, seasonal=True)
    a, b, g = 0.3, 0.05, 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = statsmodels.ExponentialSmoothing(
            y,
            trend="add",
            seasonal="add",
            seasonal_periods=M,
            initialization_method="known",
            initial_level=states[0][0],
            initial_trend=states[1][0],
            initial_seasonal=states[2][:, 0],
        ).fit(smoothing_level=a, smoothing_trend=b, smoothing_seasonal=g, optimized=False)
    _, level, trend, season, errors = model.run(
        y[None, :], np.array([[a]]), np.array([[b]]), np.array([[g]]), states, keep_errors=True
    )
    ours = model.Fit(level[:, 0], trend[:, 0], season[:, :, 0], errors[:, :, 0].T, np.zeros((1, 3)))
    np.testing.assert_allclose(ours.errors[0], theirs.resid, atol=1e-9)
    np.testing.assert_allclose(ours.forecast(12)[0], theirs.forecast(12), atol=1e-9)


@pytest.mark.parametrize(("seed", "days"), [(s, 3) for s in range(6)] + [(6, 5), (7, 7)])
def test_fitted_holt_winters_agrees_with_statsmodels(seed: int, days: int) -> None:
    """Three days: both fit on all of it; five and seven: dro on the last three (model.FIT_DAYS)."""
    y = seasonal(seed, days)
    ours = model.fit(y[None, :], M, seasonal=True).forecast(12)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = (
            statsmodels.ExponentialSmoothing(
                y,
                trend="add",
                seasonal="add",
                seasonal_periods=M,
                initialization_method="legacy-heuristic",
            )
            .fit()
            .forecast(12)
        )
    scale = y[-M:].mean()
    gap = np.abs(ours - theirs) / scale
    assert gap.mean() <= 0.02, gap
    assert gap.max() <= 0.05, gap


@pytest.mark.parametrize("seed", range(4))
def test_fitted_holt_agrees_with_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = 10 + 0.05 * np.arange(60) + rng.normal(0, 0.3, 60)
    ours = model.fit(y[None, :], M, seasonal=False).forecast(12)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = statsmodels.ExponentialSmoothing(y, trend="add").fit().forecast(12)
    gap = np.abs(ours - theirs) / y.mean()
    assert gap.max() <= 0.04, gap


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        (1, "last-value"),
        (2, "last-value"),
        (3, "holt"),
        (2 * M - 1, "holt"),
        (2 * M, "holt-winters"),
    ],
)
def test_model_is_chosen_by_history_length(points: int, expected: str) -> None:
    y = seasonal(1, days=3)[-points:]
    result = predict.forecast(
        history_of({"a": y}), now=NOW, horizon=7200, step=STEP, window=7 * 86400
    )
    assert result["a"].model == expected
    assert result["a"].samples == points


def test_forecast_level_is_the_peak_plus_the_band_and_steps_ahead_follow_the_season() -> None:
    y = seasonal(3, noise=0.2)
    history = history_of({"a": y})
    week = 7 * 86400
    found = predict.forecast(history, now=NOW, horizon=7200, step=STEP, window=week, band=1.65)
    result = found["a"]
    fitted = model.fit(y[None, :], M, seasonal=True, ahead=12)  # fitted at the horizon's lead
    path = fitted.forecast(12)[0]
    band = 1.65 * np.sqrt((fitted.errors[0, -M:] ** 2).mean())
    assert result.level["cpu"] == pytest.approx(path.max() + band)
    bare = predict.forecast(history, now=NOW, horizon=7200, step=STEP, window=7 * 86400)["a"]
    assert bare.level["cpu"] == pytest.approx(path.max())  # no band by default
    assert result.next_step["cpu"] == pytest.approx(path[0])
    assert result.at_horizon["cpu"] == pytest.approx(path[11])  # 7200 s = 12 steps ahead
    assert result.at_horizon["cpu"] != pytest.approx(path[0])
    assert result.peak_at == NOW + STEP * (int(path.argmax()) + 1)
    # The background is used − placed: the series itself, not used.
    assert abs(result.next_step["cpu"] - y[-M + 1]) < 3.0
    assert 0 < result.error["cpu"] < 0.1


def test_a_seasonal_forecast_beats_the_last_value_before_a_daily_peak() -> None:
    y = seasonal(5, noise=0.1, trend=0.0)
    # Cut the history one hour before the day's maximum comes round again.
    peak = int(np.argmax(y[-M:])) + 2 * M
    cut = y[: peak - 6]
    result = predict.forecast(
        history_of({"a": cut}), now=NOW, horizon=7200, step=STEP, window=7 * 86400
    )["a"]
    assert result.model == "holt-winters"
    assert result.level["cpu"] > cut[-1] + 0.5 * (y[-M:].max() - cut[-1])


def test_resample_carries_the_last_value_over_gaps_and_starts_at_the_first_sample() -> None:
    samples = {
        "a": (
            ClusterSample(at=NOW - 1000, used={"cpu": 1.0, "memory": 5.0}),
            ClusterSample(at=NOW - 590, used={"cpu": 3.0}),
            ClusterSample(at=NOW - 10, used={"cpu": 4.0, "memory": 7.0}),
        ),
        "b": (ClusterSample(at=NOW - 3000, used={"cpu": 9.0}),),
    }
    g = grid.resample(samples, now=NOW, step=300.0, window=1500.0)
    assert g.clusters == ("a", "b")
    assert g.resources == ("cpu", "memory")
    assert list(g.times) == [NOW - 1200, NOW - 900, NOW - 600, NOW - 300, NOW]
    assert g.length.tolist() == [4, 5]
    a_cpu = g.values[0, 0].tolist()
    assert np.isnan(a_cpu[0])
    assert a_cpu[1:] == [1.0, 1.0, 3.0, 4.0]
    assert g.values[0, 1, 1:].tolist() == [5.0, 5.0, 5.0, 7.0]  # carried over the gap
    assert g.values[1, 0].tolist() == [9.0] * 5
    assert np.isnan(g.values[1, 1]).all()  # b never reported memory


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 5000), st.floats(0, 64), st.floats(0, 8)),
        min_size=1,
        max_size=40,
    )
)
def test_forecast_is_deterministic_and_never_negative(
    raw: list[tuple[float, float, float]],
) -> None:
    samples = tuple(
        ClusterSample(at=NOW - at, used={"cpu": used}, placed={"cpu": placed})
        for at, used, placed in sorted(raw, key=lambda r: -r[0])
    )
    first = predict.forecast({"a": samples}, now=NOW, horizon=1800, step=300, window=6000)
    second = predict.forecast({"a": samples}, now=NOW, horizon=1800, step=300, window=6000)
    assert first == second
    for value in (*first["a"].level.values(), *first["a"].next_step.values()):
        assert np.isfinite(value)
        assert value >= 0.0


def test_clusters_with_different_history_lengths_are_forecast_separately() -> None:
    long, short = seasonal(1), seasonal(2)[-5:]
    both = predict.forecast(
        history_of({"old": long, "new": short}), now=NOW, horizon=7200, step=STEP, window=7 * 86400
    )
    alone = predict.forecast(
        history_of({"old": long}), now=NOW, horizon=7200, step=STEP, window=7 * 86400
    )
    assert (both["old"].model, both["new"].model) == ("holt-winters", "holt")
    assert both["old"] == alone["old"]


def test_the_horizon_rounds_up_to_whole_steps() -> None:
    """A horizon between two grid points forecasts to the later one (as `level` covers it)."""
    y = seasonal(5, noise=0.2)
    fitted = model.fit(y[None, :], M, seasonal=True, ahead=4)
    path = fitted.forecast(4)[0]
    result = predict.forecast(
        history_of({"a": y}), now=NOW, horizon=3.5 * STEP, step=STEP, window=7 * 86400
    )["a"]
    assert result.at_horizon["cpu"] == pytest.approx(max(0.0, path[3]))


@pytest.mark.parametrize("ahead", [1, 2, 5])
def test_errors_at_a_lead_are_those_of_forecasts_made_that_many_steps_before(ahead: int) -> None:
    """`run(ahead=h)` scores y_t against the forecast the states h steps earlier made for it
    (from the initial states for the first h points): checked by filtering up to t − h and
    forecasting h steps from there."""
    y = seasonal(2, days=2)[None, : M + 40]
    states = model.initial_states(seasonal(2, days=2)[None, :], M, seasonal=True)
    a, b, g = np.array([[0.4]]), np.array([[0.1]]), np.array([[0.3]])
    errors = model.run(y, a, b, g, states, keep_errors=True, ahead=ahead)[4][:, 0, 0]
    for t in (0, ahead - 1, ahead, M - 1, M + 39):
        if t < ahead:
            level, trend, season = states[0][0], states[1][0], states[2][:, 0]
            lead = t + 1
        else:
            _, lv, tr, se, _ = model.run(y[:, : t - ahead + 1], a, b, g, states)
            level, trend, season = lv[0, 0], tr[0, 0], se[:, 0, 0]
            lead = ahead
        expected = y[0, t] - (level + lead * trend + season[t % M])
        assert errors[t] == pytest.approx(expected, abs=1e-9), t


def diurnal(seed: int, series: int = 30, days: int = 6) -> np.ndarray:
    """Hourly background shares like the bench trace's: a working-day shape whose height
    changes from day to day, and noise correlated over about an hour (AR(1), φ = e⁻¹)."""
    rng = np.random.default_rng(seed)
    hours = np.arange(days * 24)
    day = np.interp(hours % 24, [0, 6, 10, 18, 22, 24], [0, 0, 1, 1, 0, 0])
    daily = rng.normal(1.0, 0.05, (series, days))[:, hours // 24]
    height = rng.uniform(0.7, 1.0, (series, 1))
    phi = np.exp(-1.0)
    noise = np.zeros((series, hours.size))
    noise[:, 0] = rng.normal(0, 0.02, series)
    shocks = rng.normal(0, 0.02 * np.sqrt(1 - phi**2), noise.shape)
    for t in range(1, hours.size):
        noise[:, t] = phi * noise[:, t - 1] + shocks[:, t]
    return 0.25 + 0.5 * height * daily * day + noise


def test_fitting_at_the_horizon_beats_the_same_time_yesterday_two_hours_ahead() -> None:
    """Rolling over the last day of six seeded fleets: Holt-Winters fitted at the 2-hour lead
    has a lower error than the seasonal-naive forecast on every fleet, and than the one-step
    fit over all of them (the hour-long noise is what a one-step fit chases)."""
    mape: dict[object, list[float]] = {1: [], 2: [], "naive": []}
    for seed in range(6):
        y = diurnal(seed)
        errors: dict[object, list[np.ndarray]] = {1: [], 2: [], "naive": []}
        for origin in range(y.shape[1] - 26, y.shape[1] - 2):
            truth = y[:, origin + 2]
            for lead in (1, 2):
                fitted = model.fit(y[:, : origin + 1], 24, seasonal=True, ahead=lead)
                errors[lead].append(np.abs(fitted.forecast(2)[:, -1] - truth) / truth)
            errors["naive"].append(np.abs(y[:, origin + 2 - 24] - truth) / truth)
        for key, found in errors.items():
            mape[key].append(float(np.mean(found)))
        assert mape[2][-1] < mape["naive"][-1], (seed, mape)
    assert np.mean(mape[2]) < np.mean(mape[1]), mape
