"""Cost: the prices of `Cluster.spec.cost`, the `Cost` scorer, the automatic weights that favour
cost on a cool fleet and balance on a hot one, the cost steering of dro's divisions, and the
cost per hour that decisions record (and explain, plan and the output README show)."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import cli, schedule
from reconciler.branch import summary
from reconciler.domain import (
    Cluster,
    Decision,
    MoveBudget,
    Placed,
    Placement,
    Rebalance,
    SchedulerConfig,
    Scoring,
    SpreadConstraint,
    Workload,
)
from reconciler.domain.data import DataAccess, DataSet
from reconciler.schedule import economy, facts, pricing
from reconciler.schedule.fleet import Fleet
from reconciler.schedule.plugins import cost as cost_plugin
from tests.builders.plan import plan
from tests.builders.schedule import DYNAMIC, counts, deployment, spec_of, subject
from tests.builders.schedule import cluster as plain_cluster
from tests.conftest import EXAMPLE, SourceRepo

GIB = float(2**30)


def priced(name: str, cpu_price: float | None, *, region: str = "r1", used: float = 10) -> Cluster:
    """A 100-core cluster priced at `cpu_price` per core-hour (None: no price at all)."""
    made = plain_cluster(name, region=region, used=used)
    if cpu_price is None:
        return made
    return dataclasses.replace(made, cost=MappingProxyType({"cpu": cpu_price}))


def with_memory(workload: Workload, memory: str) -> Workload:
    manifest = json.loads(json.dumps(workload.manifest))
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = (
        memory
    )
    return dataclasses.replace(workload, manifest=manifest)


def cost_of(decisions: tuple[Decision, ...], prices: dict[str, float], cpu: float) -> float:
    """The placement's cost per hour, computed here from the replicas and the prices."""
    return sum((p.replicas or 0) * cpu * prices[p.cluster] for d in decisions for p in d.clusters)


def dynamic(**changes: object) -> Placement:
    return dataclasses.replace(Placement(replicas=DYNAMIC), **changes)  # type: ignore[arg-type]


# --- prices and units -------------------------------------------------------------------------


def test_cpu_is_priced_per_core_hour_and_memory_per_gib_hour() -> None:
    made = dataclasses.replace(
        plain_cluster("a"), cost=MappingProxyType({"cpu": 0.04, "memory": 0.005})
    )
    fleet = Fleet(clusters=(made,))
    demand = np.array([{"cpu": 0.5, "memory": 2 * GIB, "pods": 1.0}[r] for r in fleet.resources])
    (each,) = pricing.per_replica_hour(fleet, demand).tolist()
    assert each == pytest.approx(0.5 * 0.04 + 2 * 0.005)
    cost = pricing.cost_per_hour(fleet, demand, np.array([4]))
    assert cost.per_hour == pytest.approx(4 * (0.5 * 0.04 + 2 * 0.005))
    assert cost.unpriced == 0


def test_an_unpriced_cluster_costs_an_unknown_amount_never_zero() -> None:
    fleet = Fleet(clusters=(priced("a", 0.02), priced("b", None)))
    demand = np.array([{"cpu": 1.0, "pods": 1.0}.get(r, 0.0) for r in fleet.resources])
    each = pricing.per_replica_hour(fleet, demand)
    assert each[0] == pytest.approx(0.02)
    assert np.isnan(each[1])
    cost = pricing.cost_per_hour(fleet, demand, np.array([2, 3]))
    assert cost.per_hour == pytest.approx(0.04)
    assert cost.unpriced == 3


# --- the Cost scorer ----------------------------------------------------------------------------


def test_the_cheaper_cluster_scores_higher() -> None:
    fleet = Fleet(clusters=(priced("a", 0.02), priced("b", 0.03), priced("c", 0.04)))
    scores = cost_plugin.cost(fleet, subject(fleet=fleet), np.ones(3, dtype=bool))
    # 100 × (costliest − cost) / (costliest − cheapest)
    assert scores.tolist() == pytest.approx([100.0, 50.0, 0.0])


def test_only_feasible_clusters_set_the_scale() -> None:
    fleet = Fleet(clusters=(priced("a", 0.02), priced("b", 0.03), priced("c", 0.04)))
    feasible = np.array([False, True, True])
    scores = cost_plugin.cost(fleet, subject(fleet=fleet), feasible)
    assert scores[1:].tolist() == pytest.approx([100.0, 0.0])


def test_an_unpriced_cluster_scores_as_the_costliest() -> None:
    fleet = Fleet(clusters=(priced("a", 0.02), priced("b", None), priced("c", 0.04)))
    scores = cost_plugin.cost(fleet, subject(fleet=fleet), np.ones(3, dtype=bool))
    assert scores.tolist() == pytest.approx([100.0, 0.0, 0.0])
    alone = cost_plugin.cost(fleet, subject(fleet=fleet), np.array([False, True, False]))
    assert alone.tolist() == [0.0, 0.0, 0.0], "no price among the feasible: Cost decides nothing"


def test_equal_prices_score_alike() -> None:
    fleet = Fleet(clusters=(priced("a", 0.03), priced("b", 0.03)))
    scores = cost_plugin.cost(fleet, subject(fleet=fleet), np.ones(2, dtype=bool))
    assert scores[0] == scores[1] == 100.0


def test_egress_counts_in_the_cost() -> None:
    # same compute price; the data lives on a, so a replica on b pays egress for its reads
    clusters = [priced("a", 0.02, region="eu"), priced("b", 0.02, region="us")]
    logs = DataSet(name="logs", origin=clusters[0].origin, primary="a")
    placement = dynamic(data=(DataAccess(dataset="logs", access="read", rate=500 * GIB),))
    spec = dataclasses.replace(
        spec_of(clusters, [deployment("w", 2)], placement), data_sets={"logs": logs}
    )
    (decision,) = schedule.place(spec)
    verdicts = {v.cluster: v for v in decision.diagnosis.verdicts.every()}
    assert verdicts["a"].scores["Cost"] > verdicts["b"].scores["Cost"]
    # 500 GiB a day across regions at the crossRegion tier's 0.02 per GiB, over 24 h and 2 replicas
    egress = 500 * 0.02 / 24 / 2
    assert verdicts["a"].cost_per_replica_hour == pytest.approx(0.02)
    assert verdicts["b"].cost_per_replica_hour == pytest.approx(0.02 + egress, abs=1e-6)


# --- the automatic weights ----------------------------------------------------------------------


def test_cost_weighs_most_on_a_cool_fleet_and_nothing_on_a_hot_one() -> None:
    config = SchedulerConfig()
    cool, middle, hot = (facts.effective_weights(config, load) for load in (0.1, 0.55, 0.95))
    assert cool["Cost"] == 2.0
    assert middle["Cost"] == 1.0
    assert hot["Cost"] == 0.0
    assert cool["Balance"] < middle["Balance"] < hot["Balance"]
    assert economy.pull(cool) == 1.0
    assert economy.pull(hot) == 0.0


@settings(max_examples=50, deadline=None)
@given(
    low=st.floats(0.0, 1.0),
    high=st.floats(0.0, 1.0),
    a=st.floats(0.0, 1.0),
    b=st.floats(0.0, 1.0),
    base=st.floats(0.0, 5.0),
)
def test_weights_move_with_load(low: float, high: float, a: float, b: float, base: float) -> None:
    config = SchedulerConfig(
        plugin_weights=MappingProxyType({"Cost": base}),
        scoring=Scoring(low_water_level=low, high_water_level=high),
    )
    cooler, hotter = sorted((a, b))
    at_cool = facts.effective_weights(config, cooler)
    at_hot = facts.effective_weights(config, hotter)
    assert at_cool["Cost"] >= at_hot["Cost"] >= 0.0
    assert at_cool["Availability"] >= at_hot["Availability"]
    assert at_cool["Balance"] <= at_hot["Balance"]
    assert at_cool["Cost"] <= 2 * base + 1e-4  # weights are rounded to 4 places


def test_fixed_weights_when_adaptive_scoring_is_off() -> None:
    config = SchedulerConfig(scoring=Scoring(adaptive=False))
    assert facts.effective_weights(config, 0.1)["Cost"] == 1.0
    assert facts.effective_weights(config, 0.95)["Cost"] == 1.0


# --- steering: Cost on lowers what the placement costs ----------------------------------------

PRICES = {"a": 0.020, "b": 0.023, "c": 0.026, "d": 0.029, "e": 0.032, "f": 0.035}


def fleet_and_workloads(used: float) -> tuple[list[Cluster], list[Workload]]:
    clusters = [priced(name, price, used=used) for name, price in PRICES.items()]
    workloads = [deployment(f"w{i}", 3 + i % 4, cpu="2") for i in range(12)]
    return clusters, workloads


def placed(
    clusters: list[Cluster],
    workloads: list[Workload],
    weights: dict[str, float],
    **placement: object,
) -> tuple[Decision, ...]:
    spec = spec_of(clusters, workloads, dynamic(**placement))
    config = dataclasses.replace(spec.config, plugin_weights=MappingProxyType(weights))
    return schedule.place(dataclasses.replace(spec, config=config))


def test_turning_cost_on_lowers_the_cost_per_hour_of_a_cool_fleet() -> None:
    clusters, workloads = fleet_and_workloads(used=15)
    on = placed(clusters, workloads, {})
    off = placed(clusters, workloads, {"Cost": 0})
    for decisions in (on, off):
        assert all(d.unschedulable is None for d in decisions)
        assert all(
            sum((p.replicas or 0) for p in d.clusters) == w.replicas
            for d, w in zip(decisions, sorted(workloads, key=lambda w: w.key.sort_key), strict=True)
        )
    cost_on, cost_off = cost_of(on, PRICES, 2.0), cost_of(off, PRICES, 2.0)
    assert cost_on < 0.9 * cost_off, (cost_on, cost_off)
    # what the decisions record is the same figure
    assert sum(d.cost_per_hour or 0.0 for d in on) == pytest.approx(cost_on, abs=1e-3)
    # and cheap clusters stay within the limit: at most the fleet's level + SPILL
    level = dict.fromkeys(PRICES, 15.0)
    for decision in on:
        for p in decision.clusters:
            level[p.cluster] += 2.0 * (p.replicas or 0)
    assert max(level.values()) / 100 <= 0.85


def test_a_hot_fleet_divides_as_without_cost() -> None:
    clusters, workloads = fleet_and_workloads(used=80)
    on = placed(clusters, workloads, {})
    off = placed(clusters, workloads, {"Cost": 0})
    assert [counts(d) for d in on] == [counts(d) for d in off]


def test_cost_steering_keeps_the_spread_constraints() -> None:
    clusters = [
        priced("a", 0.02, region="eu"),
        priced("b", 0.021, region="eu"),
        priced("c", 0.05, region="us"),
        priced("d", 0.06, region="us"),
    ]
    spread = (SpreadConstraint(by="region", min_groups=2),)
    (decision,) = placed(clusters, [deployment("w", 4)], {}, spread=spread)
    regions = {c.name: c.region for c in clusters}
    assert {regions[p.cluster] for p in decision.clusters if p.replicas} == {"eu", "us"}
    assert "kept to the cheapest" in decision.diagnosis.trigger.text
    assert "c" in counts(decision), "the cheaper us cluster"
    assert "d" not in counts(decision)


def test_a_scale_up_keeps_every_running_replica() -> None:
    clusters, _ = fleet_and_workloads(used=15)
    first = placed(clusters, [deployment("w", 4, cpu="2")], {"Cost": 0})
    before = counts(first[0])
    assert len(before) > 1
    spec = spec_of(clusters, [deployment("w", 10, cpu="2")], dynamic())
    (scaled,) = schedule.place(spec, {first[0].key: first[0]})
    after = counts(scaled)
    assert all((after.get(c) or 0) >= (n or 0) for c, n in before.items())
    gained = {c: (after[c] or 0) - (before.get(c) or 0) for c in after}
    cheapest = min(PRICES, key=PRICES.__getitem__)
    assert gained.get(cheapest, 0) == max(gained.values()), gained


# --- cost per hour recorded and shown ---------------------------------------------------------


def test_decisions_record_their_cost_and_read_it_back() -> None:
    clusters = [priced("a", 0.02), priced("b", None)]
    spec = spec_of(clusters, [deployment("w", 4)], Placement(replicas=DYNAMIC))
    (decision,) = schedule.place(spec)
    on_a = counts(decision).get("a") or 0
    assert decision.cost_per_hour == pytest.approx(0.02 * on_a)
    assert decision.unpriced == 4 - on_a
    back = summary.decision_from_document(summary.decision_document(decision))
    assert (back.cost_per_hour, back.unpriced) == (decision.cost_per_hour, decision.unpriced)


def test_retiring_copies_are_counted_while_they_run() -> None:
    clusters = [priced("a", 0.02), priced("b", 0.03)]
    spec = spec_of(clusters, [deployment("w", 2)], Placement(replicas=DYNAMIC))
    (decision,) = schedule.place(spec)
    moving = dataclasses.replace(
        decision,
        retiring=(decision.clusters[0]._replace(replicas=3),),
    )
    fleet = Fleet(clusters=tuple(clusters))
    demand = np.array([{"cpu": 1.0, "pods": 1.0}.get(r, 0.0) for r in fleet.resources])
    (repriced,) = pricing.priced(fleet, [decision.key], demand[np.newaxis, :], [moving])
    assert repriced.cost_per_hour == pytest.approx(
        (decision.cost_per_hour or 0.0) + 3 * (0.02 if moving.retiring[0].cluster == "a" else 0.03)
    )


def test_explain_shows_each_candidates_cost_and_the_total(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["explain", str(EXAMPLE), "payments/Deployment/checkout"]) == 0
    text = capsys.readouterr().out
    assert "COST/REPLICA-H" in text
    assert "cost per hour:" in text
    assert cli.main(["explain", str(EXAMPLE), "payments/Deployment/checkout", "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    feasible = [c for c in document["diagnosis"]["clusters"] if c["feasible"]]
    assert feasible
    assert all(c["costPerReplicaHour"] > 0 for c in feasible)
    chosen = {c["name"]: c["replicas"] for c in document["clusters"]}
    per_replica = {c["name"]: c["costPerReplicaHour"] for c in feasible}
    total = sum(n * per_replica[name] for name, n in chosen.items())
    shown = float(text.split("cost per hour: ")[1].split()[0])
    assert shown == pytest.approx(total, abs=1e-3)
    assert document["costPerHour"] == pytest.approx(total, abs=1e-3)


def test_plan_shows_cost_before_and_after(
    reviewed: SourceRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = plan(reviewed, capsys, "--head", "replicas-changed", "-o", "json")
    assert code == 0
    document = json.loads(out)
    (frontend,) = (
        w for w in document["workloads"] if w["workload"] == "shop/Deployment.apps/frontend"
    )
    assert frontend["costAfter"] > frontend["costBefore"], "three more replicas cost more"
    totals = document["costPerHour"]
    assert totals["after"] - totals["before"] == pytest.approx(
        frontend["costAfter"] - frontend["costBefore"], abs=1e-3
    )
    _, markdown = plan(reviewed, capsys, "--head", "replicas-changed", "-o", "markdown")
    assert f"Cost per hour: {totals['before']:.4f} → {totals['after']:.4f}" in markdown
    _, text = plan(reviewed, capsys, "--head", "replicas-changed", "-o", "text")
    assert "Cost per hour:" in text


def test_the_output_readme_totals_the_cost() -> None:
    clusters = [priced("a", 0.02), priced("b", 0.03), priced("c", None)]
    # Duplicated: every cluster runs every replica, the unpriced one too
    spec = spec_of(clusters, [deployment("w", 6), deployment("v", 3)], Placement())
    decisions = schedule.place(spec)
    text = summary.readme(spec, decisions)
    assert "Cost of the placement: 0.4500 per hour" in text  # (6 + 3) × (0.02 + 0.03)
    assert "9 replicas run on clusters without a price, not counted" in text
    assert "| 0.3000 (+6 unpriced) |" in text


def test_passes_over_an_unchanged_input_converge_with_cost_on() -> None:
    clusters, workloads = fleet_and_workloads(used=15)
    spec = spec_of(clusters, workloads, dynamic())
    first = schedule.place(spec)
    second = schedule.place(spec, {d.key: d for d in first})
    assert [counts(d) for d in second] == [counts(d) for d in first]
    assert all(d.diagnosis.trigger.text.startswith("steady") for d in second)
    assert [d.cost_per_hour for d in second] == [d.cost_per_hour for d in first]


def test_karmadas_kinds_divide_as_without_prices() -> None:
    clusters, workloads = fleet_and_workloads(used=15)
    unpriced = [dataclasses.replace(c, cost=MappingProxyType({})) for c in clusters]
    spec = spec_of(clusters, workloads, dynamic())
    (policy,) = spec.placement_policies
    karmada = dataclasses.replace(policy, dro_extensions=False)
    priced_spec = dataclasses.replace(spec, placement_policies=(karmada,))
    plain_spec = dataclasses.replace(priced_spec, clusters=tuple(unpriced))
    with_prices, without = schedule.place(priced_spec), schedule.place(plain_spec)
    assert [counts(d) for d in with_prices] == [counts(d) for d in without]
    assert all("Cost" not in d.diagnosis.weights for d in with_prices)
    assert all(d.cost_per_hour for d in with_prices), "what they cost is still recorded"


def test_a_scale_down_leaves_the_dearest_cluster_first() -> None:
    clusters = [priced("a", 0.02), priced("b", 0.04)]
    spec = spec_of(clusters, [deployment("w", 6)], dynamic())
    (first,) = schedule.place(spec, {})
    held = dataclasses.replace(
        first,
        clusters=(
            first.clusters[0]._replace(cluster="a", replicas=3),
            first.clusters[0]._replace(cluster="b", replicas=3),
        ),
    )
    down = spec_of(clusters, [deployment("w", 4)], dynamic())
    (scaled,) = schedule.place(down, {held.key: held})
    assert counts(scaled) == {"a": 3, "b": 1}
    assert "dearest" in scaled.diagnosis.trigger.text
    off = dataclasses.replace(
        down, config=dataclasses.replace(down.config, plugin_weights=MappingProxyType({"Cost": 0}))
    )
    (karmada_like,) = schedule.place(off, {held.key: held})
    assert counts(karmada_like) == {"a": 2, "b": 2}, "without cost: by the previous counts"


def test_rebalancing_moves_to_the_cheapest_destination_within_the_fleet_level() -> None:
    # a is over its 0.85 limit; b is the coolest but dear, c a little warmer and cheap
    clusters = [priced("a", 0.03, used=90), priced("b", 0.04, used=20), priced("c", 0.02, used=30)]
    spec = dataclasses.replace(
        spec_of(clusters, [deployment("w", 8)], dynamic()),
        config=SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100))),
    )
    (placed_once,) = schedule.place(spec)
    on_a = dataclasses.replace(placed_once, clusters=(Placed("a", 8),))
    (after,) = schedule.place(spec, {on_a.key: on_a}, now=3600.0)
    assert {(m.source, m.target) for m in after.moves} == {("a", "c")}
    off = dataclasses.replace(
        spec,
        config=dataclasses.replace(spec.config, plugin_weights=MappingProxyType({"Cost": 0})),
    )
    (coolest,) = schedule.place(off, {on_a.key: on_a}, now=3600.0)
    assert {(m.source, m.target) for m in coolest.moves} == {("a", "b")}
