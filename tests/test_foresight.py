"""The scheduler with forecasts: pre-allocation before a known peak, passing bursts left
alone, destinations ranked by forecast, new replicas kept off a cluster forecast to pass its
limit, convergence, and exactly today's decisions without forecasts."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule, yamlio
from reconciler.branch import statefiles, status
from reconciler.domain import (
    Decision,
    MoveBudget,
    Placed,
    Placement,
    ResourceKey,
    Spec,
    durations,
)
from reconciler.domain.forecast import ClusterForecast
from reconciler.domain.reasons import MoveCode
from reconciler.review import plandiff, planreport
from tests.builders.schedule import DYNAMIC, cluster, counts, deployment, spec_of, with_rebalance

HOUR = 3600.0
PEAK = HOUR + 5400.0


def expect(name: str, level: float, next_step: float | None = None) -> ClusterForecast:
    """A forecast of `name`'s cpu background (dro's replicas come on top)."""
    return ClusterForecast(
        cluster=name,
        model="holt-winters",
        level={"cpu": level},
        next_step={"cpu": level if next_step is None else next_step},
        peak_at=PEAK,
        error={"cpu": 0.05},
        samples=432,
    )


def placed(names: tuple[str, ...] = ("a", "b"), replicas: int = 8) -> tuple[Spec, Decision]:
    """A workload divided over `names` at usage 10 each; budget 100, limit 0.85."""
    spec = spec_of(
        [cluster(n) for n in names], [deployment("w", replicas)], Placement(replicas=DYNAMIC)
    )
    (first,) = schedule.place(spec)
    return with_rebalance(spec, max_moves=MoveBudget(count=100)), first


def with_usage(spec: Spec, **used: float) -> Spec:
    return replace(
        spec, clusters=tuple(cluster(c.name, used=used.get(c.name, 10)) for c in spec.clusters)
    )


def test_without_forecasts_the_decisions_are_todays() -> None:
    spec, first = placed(("a", "b", "c"))
    hot = with_usage(spec, a=90, b=40)
    today = schedule.place_and_project(hot, {first.key: first}, now=HOUR)
    for forecasts in (None, {}):
        again = schedule.place_and_project(hot, {first.key: first}, now=HOUR, forecasts=forecasts)
        assert again == today


def test_replicas_leave_a_cluster_before_its_forecast_peak() -> None:
    spec, first = placed()
    assert counts(first) == {"a": 4, "b": 4}
    calm = with_usage(spec, a=40, b=40)
    (today,) = schedule.place(calm, {first.key: first}, now=HOUR)
    assert today.moves == (), "both clusters are under 0.85 now"
    # a's background is forecast to reach 85 cores: with dro's 4 on top, 0.89 > 0.85.
    forecasts = {"a": expect("a", 85.0, next_step=37.0), "b": expect("b", 36.0)}
    (ahead,) = schedule.place(calm, {first.key: first}, now=HOUR, forecasts=forecasts)
    assert counts(ahead) == {"b": 8}, "4 cores over the limit: the 4 replicas on a move"
    (move,) = ahead.moves
    assert (move.source, move.target, move.replicas) == ("a", "b", 4)
    assert move.reason.code is MoveCode.FORECAST
    assert (
        move.reason.text == f"forecast water level 0.89 > 0.85 (cpu) by {durations.rfc3339(PEAK)}"
    )


def test_the_budget_bounds_pre_allocation() -> None:
    spec, first = placed()
    calm = with_usage(spec, a=40, b=40)
    forecasts = {"a": expect("a", 85.0), "b": expect("b", 36.0)}
    capped = with_rebalance(calm, max_moves=MoveBudget(count=1))
    (ahead,) = schedule.place(capped, {first.key: first}, now=HOUR, forecasts=forecasts)
    assert sum(m.replicas for m in ahead.moves) == 1


def test_a_passing_burst_moves_nothing() -> None:
    spec, first = placed()
    burst = with_usage(spec, a=90, b=40)
    (reactive,) = schedule.place(burst, {first.key: first}, now=HOUR)
    assert counts(reactive) == {"b": 8}, "without a forecast the burst moves replicas"
    # a is at 0.90 now; its background (86 of the 90) falls back to 30 next step and peaks at 40.
    forecasts = {"a": expect("a", 40.0, next_step=30.0), "b": expect("b", 36.0)}
    (foreseen,) = schedule.place(burst, {first.key: first}, now=HOUR, forecasts=forecasts)
    assert counts(foreseen) == counts(first)
    assert foreseen.moves == ()


def test_a_burst_before_a_forecast_peak_is_not_passing() -> None:
    spec, first = placed()
    burst = with_usage(spec, a=90, b=40)
    forecasts = {"a": expect("a", 88.0, next_step=30.0), "b": expect("b", 36.0)}
    (foreseen,) = schedule.place(burst, {first.key: first}, now=HOUR, forecasts=forecasts)
    assert counts(foreseen) == {"b": 8}


def test_destinations_are_ranked_by_their_forecast() -> None:
    spec, first = placed(("a", "b", "c"), replicas=9)
    assert counts(first) == {"a": 3, "b": 3, "c": 3}
    hot = with_usage(spec, a=90, b=20, c=20)
    (reactive,) = schedule.place(hot, {first.key: first}, now=HOUR)
    assert {m.target for m in reactive.moves} == {"b"}, "b and c tie now: b comes first"
    forecasts = {"b": expect("b", 70.0), "c": expect("c", 25.0)}
    (foreseen,) = schedule.place(hot, {first.key: first}, now=HOUR, forecasts=forecasts)
    assert {m.target for m in foreseen.moves} == {"c"}, "b is forecast to 0.73: c is cooler"


def test_a_cluster_forecast_above_its_limit_takes_no_new_replicas() -> None:
    spec = spec_of([cluster("a"), cluster("b")], [deployment("w", 6)], Placement(replicas=DYNAMIC))
    (today,) = schedule.place(spec)
    assert counts(today) == {"a": 3, "b": 3}
    (foreseen,) = schedule.place(spec, forecasts={"a": expect("a", 90.0)})
    assert counts(foreseen) == {"b": 6}


def test_water_levels_reported_stay_the_usage_now() -> None:
    spec, first = placed()
    calm = with_usage(spec, a=40, b=40)
    forecasts = {"a": expect("a", 60.0), "b": expect("b", 36.0)}
    shown = schedule.place_and_project(calm, {first.key: first}, now=HOUR, forecasts=forecasts)
    assert shown.decisions[0].moves == ()
    assert shown.water_levels["a"]["cpu"] == 0.4


@settings(max_examples=30, deadline=None)
@given(
    used=st.lists(st.integers(5, 95), min_size=3, max_size=3),
    levels=st.lists(st.integers(0, 95), min_size=3, max_size=3),
    bursts=st.lists(st.integers(0, 95), min_size=3, max_size=3),
    budget=st.integers(1, 6),
)
def test_passes_over_an_unchanged_input_converge_with_prediction_on(
    used: list[int], levels: list[int], bursts: list[int], budget: int
) -> None:
    spec, first = placed(("a", "b", "c"), replicas=12)
    names = ("a", "b", "c")
    fleet = with_rebalance(
        with_usage(spec, **dict(zip(names, map(float, used), strict=True))),
        max_moves=MoveBudget(count=budget),
    )
    forecasts = {
        n: expect(n, float(level), next_step=float(nxt))
        for n, level, nxt in zip(names, levels, bursts, strict=True)
    }
    decisions = {first.key: first}
    moved = []
    for step in range(16):
        (decision,) = schedule.place(fleet, decisions, now=step * HOUR, forecasts=forecasts)
        moved.append(
            sum(m.replicas for m in decision.moves if m.at == durations.rfc3339(step * HOUR))
        )
        decisions = {decision.key: decision}
    assert sum(counts(decision).values()) == 12
    assert moved[-4:] == [0, 0, 0, 0], moved


def test_plan_shows_the_forecast_column_from_the_head_status_files() -> None:
    document = {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ClusterObservation",
        "metadata": {"name": "a"},
        "status": {
            "source": "declared",
            "capacity": {"cpu": "100"},
            "allocated": {"cpu": "40"},
            "placed": {"cpu": "4"},
            "forecast": {"model": "holt", "level": {"cpu": "85"}, "nextStep": {"cpu": "50"}},
        },
    }
    tree = {"status/clusters/a.yaml": statefiles.seal(yamlio.dump(document).encode())}
    assert status.forecast_levels(tree) == {"a": {"cpu": 0.89}}
    web = ResourceKey("apps", "Deployment", "shop", "web")

    def on_a(replicas: int) -> tuple[Decision]:
        return (
            Decision(
                key=web, api_version="apps/v1", policy=None, clusters=(Placed("a", replicas),)
            ),
        )

    base = plandiff.Side(
        ref="main", clusters=("a",), decisions=on_a(3), water_levels={"a": {"cpu": 0.3}}
    )
    head = plandiff.Side(
        ref="head",
        clusters=("a",),
        decisions=on_a(4),
        water_levels={"a": {"cpu": 0.4}},
        forecasts=status.forecast_levels(tree),
    )
    diff = plandiff.compare(base, head)
    (change,) = diff.levels
    assert change.forecast == {"cpu": 0.89}
    markdown = planreport.markdown(diff)
    assert "| cluster | cpu | forecast |" in markdown
    assert "| cpu 89.0% |" in markdown
    assert planreport.document(diff)["waterLevels"][0]["forecast"] == {"cpu": 0.89}
    without = plandiff.compare(base, replace(head, forecasts={}))
    assert "forecast" not in planreport.markdown(without)
