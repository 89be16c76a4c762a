"""`dro simulate`: the replay through dro's scheduler, the baselines and the figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import predict, schedule, simulate
from reconciler.domain import ClusterForecast, History, Strategy
from reconciler.simulate import leastloaded, metrics, policies, replay
from reconciler.simulate import trace as traces
from reconciler.simulate.timeline import StepInput, Timeline
from tests.builders.simulate import SMALL, cluster_yaml, write_trace


def test_each_step_is_what_schedule_place_decides(tmp_path: Path) -> None:
    """Step 0 of dro-reactive is `schedule.place` on the source; its water levels are the
    background plus the requests of what runs, over capacity."""
    path = write_trace(
        tmp_path,
        {"a": (10, 2), "b": (20, 10)},
        {"web": 6, "api": 3},
        """\
        step: 1h
        steps: 3
        events:
          - {step: 1, replicas: {shop/Deployment/web: 9}}
        """,
    )
    trace = traces.read(path)
    timeline = Timeline(trace)
    steps = list(timeline.steps())
    policy = replay.Scheduled("dro-reactive", timeline)
    recorder = replay.play(policy, timeline, steps)
    direct = {
        d.key.name: {p.cluster: p.replicas for p in d.clusters}
        for d in schedule.place(trace.spec, diagnose=False)
    }
    assert policy.previous is not None
    after = {
        k.name: {p.cluster: p.replicas for p in d.clusters} for k, d in policy.previous.items()
    }
    assert sum(after["web"].values()) == 9  # the event's count, carried to the last step
    first = replay.Scheduled("dro-reactive", timeline)
    target, _ = first.step(steps[0], np.zeros_like(recorder.placed))
    rows = {w.key.name: i for i, w in enumerate(timeline.workloads)}
    for name, counts in direct.items():
        for cluster, n in counts.items():
            assert target[rows[name], timeline.column[cluster]] == n
    cpu = timeline.resources.index("cpu")
    running = dict.fromkeys(timeline.names, 0.0)
    for counts in after.values():
        for cluster, n in counts.items():
            running[cluster] += (n or 0) * 1.0  # every replica requests one cpu
    for cluster, background, capacity in (("a", 2, 10), ("b", 10, 20)):
        expected = (background + running[cluster]) / capacity
        assert recorder.levels[-1, timeline.column[cluster], cpu] == pytest.approx(expected)


def test_a_drained_cluster_is_emptied_and_that_counts_as_moved(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        {"a": (40, 4), "b": (40, 4), "c": (40, 4)},
        {"web": 12},
        """\
        step: 1h
        steps: 4
        events:
          - step: 1
            clusters: {b: {drain: true}}
        """,
    )
    trace = traces.read(path)
    timeline = Timeline(trace)
    steps = list(timeline.steps())
    recorder = replay.play(replay.Scheduled("dro-reactive", timeline), timeline, steps)
    b = timeline.column["b"]
    cpu = timeline.resources.index("cpu")
    assert recorder.levels[0, b, cpu] > 4 / 40, "b holds replicas before the drain"
    assert recorder.levels[-1, b, cpu] == pytest.approx(4 / 40), "only its background is left"
    assert recorder.moved.sum() > 0
    assert recorder.pending.sum() == 0


def test_an_added_cluster_joins_and_is_filled(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        {"a": (20, 4), "b": (20, 4)},
        {"web": 24},
        """\
        step: 1h
        steps: 4
        events:
          - {step: 1, add: [extra/c.yaml]}
        """,
        {"extra/c.yaml": cluster_yaml("c", 40, 0)},
    )
    trace = traces.read(path)
    assert trace.joins == {"a": 0, "b": 0, "c": 1}
    timeline = Timeline(trace)
    steps = list(timeline.steps())
    assert [len(s.clusters) for s in steps] == [2, 3, 3, 3]
    assert steps[1].joined == {"c"}
    recorder = replay.play(replay.Scheduled("dro-reactive", timeline), timeline, steps)
    c = timeline.column["c"]
    cpu = timeline.resources.index("cpu")
    assert np.isnan(recorder.levels[0, c, cpu])
    assert recorder.levels[-1, c, cpu] > 0, "replicas moved into the added cluster"


def test_least_loaded_shrinks_the_hottest_and_grows_the_coolest(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        {"a": (10, 1), "b": (10, 5)},
        {"web": 4},
        """\
        step: 1h
        steps: 4
        events:
          - {step: 1, replicas: {shop/Deployment/web: 2}}
          - {step: 2, replicas: {shop/Deployment/web: 20}}
        """,
    )
    timeline = Timeline(traces.read(path))
    steps = list(timeline.steps())
    policy = leastloaded.LeastLoaded(timeline)
    a, b = timeline.column["a"], timeline.column["b"]
    first, _ = policy.step(steps[0], np.zeros(0))
    # a (0.1) takes replicas until it is as loaded as b (0.5): 4 go to a, then ties go to a
    assert first[0, a] + first[0, b] == 4
    assert first[0, a] >= first[0, b]
    second, _ = policy.step(steps[1], np.zeros(0))
    levels = [(1 + first[0, a]) / 10, (5 + first[0, b]) / 10]
    hottest = a if levels[0] > levels[1] or (levels[0] == levels[1]) else b
    assert second[0].sum() == 2
    assert second[0, hottest] < first[0, hottest]
    third, _ = policy.step(steps[2], np.zeros(0))
    assert third[0, a] + third[0, b] == 14, "9 + 5 cpu free: the other 6 stay pending"
    recorder = replay.play(leastloaded.LeastLoaded(timeline), timeline, steps)
    assert recorder.pending[2] == 6
    assert recorder.moved.sum() == 0, "replicas stay where they are"


def test_the_karmada_rewrites(tmp_path: Path) -> None:
    path = write_trace(tmp_path, {"a": (10, 1), "b": (30, 5)}, {"web": 4}, "step: 1h\nsteps: 2\n")
    spec = traces.read(path).spec
    dynamic = policies.Karmada(spec, static=False).claims_for(spec.clusters)
    static = policies.Karmada(spec, static=True).claims_for(spec.clusters)
    for claims in (dynamic, static):
        (policy,) = {id(p): p for p in claims.values() if p is not None}.values()
        assert not policy.dro_extensions
        assert policy.api_version == policies.KARMADA_API
    (web,) = dynamic.values()
    assert web is not None
    assert web.placement.replicas.division is Strategy.DYNAMIC_WEIGHT
    (web,) = static.values()
    assert web is not None
    weights = {term.names: w for term, w in web.placement.replicas.static_weights}
    assert weights == {("a",): 10, ("b",): 30}


def test_the_figures_from_known_matrices(tmp_path: Path) -> None:
    """Overload events, moves and pending from hand-made placements."""
    path = write_trace(tmp_path, {"a": (10, 8), "b": (10, 1)}, {"web": 3}, "step: 1h\nsteps: 3\n")
    timeline = Timeline(traces.read(path))
    steps = list(timeline.steps())
    recorder = replay.Recorder("hand", timeline)
    a, b = timeline.column["a"], timeline.column["b"]
    placements = [{a: 2, b: 1}, {a: 0, b: 3}, {a: 0, b: 2}]  # 2 moved, then one pending
    for inp, counts in zip(steps, placements, strict=True):
        target = np.zeros((1, 2), dtype=np.int64)
        for col, n in counts.items():
            target[0, col] = n
        recorder.record(inp, target, target, 0.0)
    row = metrics.summary(recorder, timeline, steps)
    # a: (8 + 2) / 10 = 1.0 at step 0 is the only level above 0.90
    assert row["overloadEvents"] == 1
    assert row["peakWaterLevel"] == 1.0
    assert row["movedReplicas"] == 2
    assert row["pendingReplicaSteps"] == 1
    assert row["movedPercent"] == pytest.approx(100 * 2 / 9, abs=1e-3)
    assert row["cost"] == pytest.approx(0.5 * (3 + 3 + 2))


def test_seasonal_naive_error_counts_from_day_three(tmp_path: Path) -> None:
    path = write_trace(tmp_path, {"a": (10, 2)}, {"web": 1}, "step: 12h\nsteps: 10\n")
    timeline = Timeline(traces.read(path))
    steps = list(timeline.steps())
    found = metrics.forecast_error({}, timeline, steps, horizon=12 * 3600.0)
    # targets from step 4 (day 3) to 9; the background never changes: a perfect naive forecast
    assert found["clusterSteps"] == 6 * 2
    assert found["seasonalNaiveMape"] == 0.0
    assert found["mape"] is None


def test_every_policy_runs_on_the_readme_trace() -> None:
    result = simulate.run(SMALL, policies.ALL)
    rows = {r["policy"]: r for r in result.rows}
    assert set(rows) == set(policies.ALL)
    assert rows["dro-reactive"]["overloadEvents"] < rows["karmada-dynamic"]["overloadEvents"]


def test_dro_feeds_prediction_the_history_of_earlier_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forecaster gets each present cluster's samples so far, oldest first, whose
    background (used − placed) is the trace's background, and is asked at each step's time."""
    path = write_trace(tmp_path, {"a": (40, 4), "b": (40, 10)}, {"web": 6}, "step: 1h\nsteps: 4\n")
    calls: list[tuple[float, dict[str, list[float]]]] = []

    def forecast(  # type: ignore[no-untyped-def]
        history: History, *, now: float, horizon: float, step: float, window: float, band: float
    ):
        assert (horizon, step, window, band) == (7200.0, 3600.0, 7 * 86400.0, 0.0)
        calls.append(
            (now, {c: [s.background["cpu"] for s in samples] for c, samples in history.items()})
        )
        return {}

    monkeypatch.setattr(predict, "forecast", forecast)
    result = simulate.run(path, ["dro", "dro-reactive"])
    trace = traces.read(path)
    assert [now for now, _ in calls] == [trace.time(t) for t in range(4)]
    assert calls[-1][1] == {"a": [4.0] * 4, "b": [10.0] * 4}
    assert [len(h["a"]) for _, h in calls] == [1, 2, 3, 4]
    rows = {r["policy"]: r for r in result.rows}
    assert rows["dro"]["forecastMape"] is None  # no forecast came back


def test_the_forecast_error_against_known_forecasts(tmp_path: Path) -> None:
    path = write_trace(tmp_path, {"a": (10, 2)}, {"web": 1}, "step: 12h\nsteps: 10\n")
    timeline = Timeline(traces.read(path))
    steps = list(timeline.steps())
    made = {
        t: {
            "a": ClusterForecast(
                cluster="a",
                model="holt",
                next_step={"cpu": 9.0, "memory": 1.0},
                at_horizon={"cpu": 2.2, "memory": 8 * 2**30},
            )
        }
        for t in range(10)
    }
    found = metrics.forecast_error(made, timeline, steps, horizon=7200.0)
    # the 2h horizon is one 12h step: targets 4..9 from forecasts made at 3..8; cpu off by 10 %,
    # memory exact (`next_step` is not what is measured)
    assert found["aheadSeconds"] == 12 * 3600.0
    assert found["clusterSteps"] == 12
    assert found["mape"] == pytest.approx(0.05)
    assert found["seasonalNaiveMape"] == 0.0


def test_dro_measures_the_forecast_at_the_horizon_of_dro_yaml(tmp_path: Path) -> None:
    """With `spec.prediction.horizon: 4h` on a 2h trace, the error is measured two steps
    ahead, from `predict.forecast`'s own `at_horizon`. On a background that rises steadily,
    the fitted trend forecast is far closer than the same time yesterday."""
    steps = 4 * 12
    rows = "".join(f"{t},a,cpu,{2 + 0.25 * t}\n" for t in range(steps))
    path = write_trace(
        tmp_path,
        {"a": (400, 2), "b": (400, 2)},
        {"web": 4},
        f"step: 2h\nsteps: {steps}\nusage: {{csv: usage.csv}}\n",
        {"usage.csv": "step,cluster,resource,value\n" + rows},
    )
    dro_yaml = tmp_path / "repo" / "dro.yaml"
    dro_yaml.write_text(dro_yaml.read_text() + "  prediction: {enabled: true, horizon: 4h}\n")
    result = simulate.run(path, ["dro"])
    found = result.forecast
    assert found["aheadSeconds"] == 4 * 3600.0
    # targets from day 3 (step 24) to the last step, two clusters, cpu and memory
    assert found["clusterSteps"] == (steps - 24) * 2 * 2
    # the same time yesterday is 12 steps × 0.25 = 3 cores low on a's cpu
    assert found["seasonalNaiveMape"] > 0.05
    assert found["mape"] < found["seasonalNaiveMape"] / 2
    assert result.rows[0]["forecastMape"] == found["mape"]


def test_cost_is_priced_as_the_product_prices_it(tmp_path: Path) -> None:
    """cpu per core-hour, memory per GiB-hour, and nothing counted on an unpriced cluster
    (`schedule.pricing.table`, as `dro plan` prices a decision)."""
    path = write_trace(tmp_path, {"a": (10, 1), "b": (10, 1)}, {"web": 3}, "step: 30m\nsteps: 1\n")
    clusters = tmp_path / "repo" / "clusters"
    clusters.joinpath("a.yaml").write_text(
        cluster_yaml("a", 10, 1).replace("cost: {cpu: 0.5}", "cost: {cpu: 0.5, memory: 0.004}")
    )
    clusters.joinpath("b.yaml").write_text(cluster_yaml("b", 10, 1).replace("  cost:", "  #"))
    timeline = Timeline(traces.read(path))
    (inp,) = list(timeline.steps())
    recorder = replay.Recorder("hand", timeline)
    target = np.zeros((1, 2), dtype=np.int64)
    target[0, timeline.column["a"]] = 2
    target[0, timeline.column["b"]] = 1
    recorder.record(inp, target, target, 0.0)
    # two replicas of 1 cpu and 256Mi on a, for half an hour; b's replica is unpriced
    assert recorder.cost[0] == pytest.approx(2 * (1 * 0.5 + 0.25 * 0.004) * 0.5)


def test_cross_domain_bytes_follow_the_data(tmp_path: Path) -> None:
    """The example repo's warehouse-db writes 40Gi/d to the warehouse data set, whose primary
    is us-east-1: nothing crosses a domain there, all of it from eu-west-1."""
    path = tmp_path / "trace.yaml"
    path.write_text(
        "apiVersion: multicluster.io/v1alpha1\nkind: Trace\nmetadata: {name: x}\n"
        f"spec: {{source: {ROOT / 'example-repo'}, step: 1h, steps: 1}}\n"
    )
    timeline = Timeline(traces.read(path))
    (inp,) = timeline.steps()
    row = next(
        i
        for i, w in enumerate(timeline.workloads)
        if (w.key.kind, w.key.name) == ("StatefulSet", "warehouse-db")
    )
    measured = {}
    for cluster in ("us-east-1", "eu-west-1"):
        recorder = replay.Recorder("hand", timeline)
        target = np.zeros((len(timeline.workloads), len(timeline.names)), dtype=np.int64)
        target[row, timeline.column[cluster]] = 1
        recorder.record(inp, target, target, 0.0)
        measured[cluster] = recorder.cross_domain[0]
    assert measured["us-east-1"] == 0.0
    assert measured["eu-west-1"] == pytest.approx(40 * 2**30 / 24)


class Captured:
    """A policy whose every step's target is kept, to check properties of each step."""

    def __init__(self, policy: replay.Policy) -> None:
        self.policy = policy
        self.name = policy.name
        self.targets: list[np.ndarray] = []
        self.kept: list[np.ndarray] = []
        """Per step: the workloads dro found unschedulable, which keep their previous
        placement (all-or-nothing), even above a lower desired count."""

    def step(self, inp: StepInput, placed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        target, running = self.policy.step(inp, placed)
        kept = np.zeros(len(target), dtype=bool)
        if isinstance(self.policy, replay.Scheduled) and self.policy.previous is not None:
            for key, decision in self.policy.previous.items():
                kept[self.policy.timeline.row[key]] = decision.unschedulable is not None
        self.targets.append(target)
        self.kept.append(kept)
        return target, running


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    clusters=st.lists(st.tuples(st.integers(4, 40), st.integers(0, 100)), min_size=2, max_size=4),
    replicas=st.lists(st.lists(st.integers(0, 30), min_size=4, max_size=4), min_size=1, max_size=3),
    drained=st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(1, 3))),
)
def test_no_policy_places_more_than_desired_and_replays_agree(
    tmp_path_factory: pytest.TempPathFactory,
    clusters: list[tuple[int, int]],
    replicas: list[list[int]],
    drained: tuple[int, int] | None,
) -> None:
    """For every policy and step: no workload is given more replicas than it desires (but one
    dro finds unschedulable, which keeps its previous placement), the
    least-loaded baseline never fills a cluster past its capacity, and a second replay of
    the same trace measures the same figures."""
    root = tmp_path_factory.mktemp("property")
    names = [f"c{i}" for i in range(len(clusters))]
    fleet = {n: (cpu, cpu * share // 100) for n, (cpu, share) in zip(names, clusters, strict=True)}
    workloads = {f"w{i}": counts[0] for i, counts in enumerate(replicas)}
    events = []
    for t in range(1, 4):
        counts = ", ".join(f"shop/Deployment/w{i}: {c[t]}" for i, c in enumerate(replicas))
        events.append(f"  - {{step: {t}, replicas: {{{counts}}}}}")
    if drained is not None and drained[0] < len(names):
        events.append(
            f"  - {{step: {drained[1]}, clusters: {{{names[drained[0]]}: {{drain: true}}}}}}"
        )
    path = write_trace(
        root, fleet, workloads, "step: 1h\nsteps: 4\nevents:\n" + "\n".join(events) + "\n"
    )
    timeline = Timeline(traces.read(path))
    steps = list(timeline.steps())
    rows = []
    for name in policies.POLICIES:
        made: replay.Policy = (
            leastloaded.LeastLoaded(timeline)
            if name == "least-loaded"
            else replay.Scheduled(name, timeline, predict=name == "dro")
        )
        captured = Captured(made)
        recorder = replay.play(captured, timeline, steps)
        for inp, target, kept in zip(steps, captured.targets, captured.kept, strict=True):
            placed = target.sum(axis=1)
            assert (placed[~kept] <= np.maximum(inp.desired, 0)[~kept]).all(), name
        if name == "least-loaded":
            cpu = timeline.resources.index("cpu")
            assert (np.nan_to_num(recorder.levels[:, :, cpu]) <= 1.0 + 1e-9).all()
        rows.append(metrics.summary(recorder, timeline, steps))
    again = simulate.replay_trace(timeline.trace, policies.POLICIES)
    assert list(again.rows) == [
        r if r["policy"] != "dro" else {**r, "forecastMape": None} for r in rows
    ]
