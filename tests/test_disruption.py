"""The placement disruption budget: voluntary moves take no more of a workload's clusters out
of service at once than `maxUnavailableClusters` allows; failover is not limited."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import schedule
from reconciler.branch import statefiles, summary
from reconciler.cli import report
from reconciler.domain import (
    DRO_API_VERSION,
    Cluster,
    Decision,
    DisruptionBudget,
    MoveBudget,
    Observation,
    Placement,
    PlacementPolicy,
    PolicyRef,
    Rebalance,
    ResourceSelector,
    SchedulerConfig,
    Source,
    Spec,
    Workload,
    durations,
)
from reconciler.kube import health
from reconciler.schedule import disruption
from tests.builders.schedule import DYNAMIC, ORIGIN, cluster, counts, deployment, spec_of

BACKGROUND = 50.0
"""Each cluster's cpu used by others; a replica of `W` asks for 10 of its 100 cpu."""
W = deployment("w", 8, cpu="10")
ONE = DisruptionBudget(count=1)
NOW = 100_000.0


def fleet(names: str = "abcd", *, drain: str = "", used: float = BACKGROUND) -> list[Cluster]:
    """Clusters with room under the 0.85 limit for one more replica of `W` beside two (with
    the default background)."""
    return [replace(cluster(n, used=used), drain=n in drain, kubeconfig_context=n) for n in names]


def spec_for(
    budget: DisruptionBudget | None,
    *,
    drain: str = "",
    default: DisruptionBudget | None = None,
    used: float = BACKGROUND,
) -> Spec:
    clusters = fleet(drain=drain, used=used)
    spec = spec_of(clusters, [W], Placement(replicas=DYNAMIC, disruption=budget))
    config = SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100)))
    return replace(spec, config=replace(config, disruption=default))


def observed(
    spec: Spec, decision: Decision, healths: Mapping[str, str] | None = None
) -> dict[str, Observation]:
    """Every cluster observed with what the decision renders there charged to its usage, and
    the workload's health where it runs (Healthy unless `healths` says otherwise)."""
    rendered = {p.cluster: p.replicas or 0 for p in decision.rendered()}
    found = {}
    for c in spec.clusters:
        used = {**c.allocated, "cpu": c.allocated["cpu"] + 10 * rendered.get(c.name, 0)}
        state = (healths or {}).get(c.name, health.HEALTHY)
        seen = {W.key: (state, "")} if c.name in rendered else {}
        found[c.name] = Observation(cluster=c.name, capacity=c.capacity, used=used, health=seen)
    return found


def moved_at(decision: Decision, now: float) -> list[tuple[str, str, int]]:
    at = durations.rfc3339(now)
    return [(m.source, m.target, m.replicas) for m in decision.moves if m.at == at]


def first_placement(budget: DisruptionBudget | None) -> Decision:
    (first,) = schedule.place(spec_for(budget))
    assert counts(first) == {"a": 2, "b": 2, "c": 2, "d": 2}
    return first


def test_without_a_budget_a_drain_enters_two_clusters_at_once() -> None:
    first = first_placement(None)
    spec = spec_for(None, drain="a")
    (after,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert moved_at(after, 0.0) == [("a", "b", 1), ("a", "c", 1)]
    assert after.disruption is None, "no budget, no status"


def test_a_drain_under_budget_one_moves_one_cluster_at_a_time_across_passes() -> None:
    first = first_placement(ONE)
    spec = spec_for(ONE, drain="a")
    # pass 1: a → b only; the replica that would have gone to c waits, saying why
    (one,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert moved_at(one, 0.0) == [("a", "b", 1)]
    assert counts(one) == {"a": 1, "b": 3, "c": 2, "d": 2}
    assert one.disruption is not None
    assert (one.disruption.leaving, one.disruption.entering) == (("a",), ("b",))
    (waiting,) = one.disruption.waiting
    assert (waiting.cluster, waiting.replicas) == ("a", 1)
    assert waiting.reason == (
        "disruption budget: 1 cluster in flight of 1 allowed (leaving a; entering b)"
    )
    # pass 2: b is still rolling out its new copy: nothing more starts
    progressing = observed(spec, one, {"b": health.PROGRESSING})
    (two,) = schedule.place(spec, {one.key: one}, progressing, now=60.0)
    assert moved_at(two, 60.0) == []
    assert {p.cluster for p in two.retiring} == {"a"}
    # pass 3: b is Healthy: a's old copy retires and the next move starts, onto c alone
    (three,) = schedule.place(spec, {two.key: two}, observed(spec, two), now=120.0)
    assert moved_at(three, 120.0) == [("a", "c", 1)]
    assert three.disruption is not None
    assert (three.disruption.leaving, three.disruption.entering) == (("a",), ("c",))
    # pass 4: c is Healthy: a is empty, nothing is in flight
    (four,) = schedule.place(spec, {three.key: three}, observed(spec, three), now=180.0)
    assert counts(four) == {"b": 3, "c": 3, "d": 2}
    assert four.retiring == ()
    assert four.disruption is not None
    assert four.disruption.out_of_service == 0


def test_a_cluster_already_out_of_service_holds_voluntary_moves_back() -> None:
    first = first_placement(ONE)
    spec = spec_for(ONE, drain="a")
    sick = observed(spec, first, {"d": health.DEGRADED})
    (after,) = schedule.place(spec, {first.key: first}, sick, now=0.0)
    assert moved_at(after, 0.0) == [], "d is Degraded: the budget of 1 is spent"
    assert after.disruption is not None
    assert after.disruption.entering == ("d",)
    assert [w.cluster for w in after.disruption.waiting] == ["a"]
    two = DisruptionBudget(count=2)
    (looser,) = schedule.place(spec_for(two, drain="a"), {first.key: first}, sick, now=0.0)
    assert moved_at(looser, 0.0) == [("a", "b", 1)], "a budget of 2 leaves room for one move"


def test_a_percentage_rounds_down_but_allows_one_and_dro_yaml_gives_the_default() -> None:
    assert DisruptionBudget.parse("25%").of(4) == 1
    assert DisruptionBudget.parse("25%").of(3) == 1, "0.75 rounds down to 0, but at least 1"
    assert DisruptionBudget.parse("50%").of(7) == 3
    assert DisruptionBudget.parse(2).of(1) == 2
    first = first_placement(None)
    spec = spec_for(None, drain="a", default=DisruptionBudget.parse("25%"))
    (after,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    assert moved_at(after, 0.0) == [("a", "b", 1)], "dro.yaml's spec.disruption applies"
    assert after.disruption is not None
    assert after.disruption.allowed == 1
    own = spec_for(DisruptionBudget(count=2), drain="a", default=ONE)
    (wider,) = schedule.place(own, {first.key: first}, observed(own, first), now=0.0)
    assert len(moved_at(wider, 0.0)) == 2, "the placement's own budget wins over dro.yaml's"


def unreachable(seen: dict[str, Observation], names: str, since: float) -> None:
    for name in names:
        when = durations.rfc3339(since)
        seen[name] = replace(seen[name], stale=True, unreachable_since=when)


def test_failover_is_not_limited() -> None:
    (first,) = schedule.place(spec_for(ONE, used=10))
    assert counts(first) == {"a": 2, "b": 2, "c": 2, "d": 2}
    spec = spec_for(ONE, used=10)
    seen = observed(spec, first)
    unreachable(seen, "ab", NOW - 3600)
    (after,) = schedule.place(spec, {first.key: first}, seen, now=NOW)
    assert counts(after) == {"c": 4, "d": 4}, "both failed clusters are left at once"
    assert after.disruption is not None
    assert after.disruption.entering == ("a", "b", "c", "d"), "failed, and copies starting"
    assert after.disruption.out_of_service == 4, "over the budget of 1: not voluntary"


def test_a_short_outage_spends_the_budget_of_voluntary_moves() -> None:
    first = first_placement(ONE)
    spec = spec_for(ONE, drain="c")
    seen = observed(spec, first)
    unreachable(seen, "a", NOW - 60)
    (after,) = schedule.place(spec, {first.key: first}, seen, now=NOW)
    assert moved_at(after, NOW) == [], "a cannot be reached: the drain of c waits"
    assert after.disruption is not None
    assert after.disruption.entering == ("a",)
    assert [w.cluster for w in after.disruption.waiting] == ["c"]
    (later,) = schedule.place(spec, {after.key: after}, observed(spec, after), now=NOW + 60)
    (move,) = moved_at(later, NOW + 60)
    assert move[0] == "c", "a is back: the drain goes on, one cluster at a time"


def test_room_sizes_a_rollout_wave() -> None:
    assert disruption.room(None, 10, 3) == 7
    assert disruption.room(ONE, 10, 0) == 1
    assert disruption.room(ONE, 10, 1) == 0
    assert disruption.room(DisruptionBudget.parse("30%"), 10, 1) == 2
    assert disruption.room(DisruptionBudget(count=5), 3, 0) == 3, "never more than it has"
    assert disruption.room(ONE, 0, 0) == 0


def test_the_status_round_trips_and_explain_shows_what_waits() -> None:
    first = first_placement(ONE)
    spec = spec_for(ONE, drain="a")
    (one,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    document = summary.decision_document(one)
    assert document["status"]["disruption"] == {
        "maxUnavailableClusters": 1,
        "allowed": 1,
        "leaving": ["a"],
        "entering": ["b"],
        "waiting": [
            {
                "cluster": "a",
                "replicas": 1,
                "reason": "disruption budget: 1 cluster in flight of 1 allowed "
                "(leaving a; entering b)",
            }
        ],
    }
    text = yaml.safe_dump(document)
    back = statefiles.checked_decision(yaml.safe_load(text))
    assert back.disruption == one.disruption
    lines = [line for line in report.explanation(one) if isinstance(line, str)]
    assert (
        "disruption budget: maxUnavailableClusters 1 (1 cluster at once); out of service now: "
        "1 (leaving a; entering b)"
    ) in lines
    assert any(
        line.startswith("[yellow]waiting:[/yellow] 1 replica(s) on a, for a later pass: ")
        for line in lines
    )


def test_a_hand_edited_budget_status_is_distrusted() -> None:
    first = first_placement(ONE)
    document = summary.decision_document(first)
    document["status"]["disruption"]["allowed"] = "lots"
    with pytest.raises(statefiles.StateError, match="/status/disruption/allowed"):
        statefiles.checked_decision(document)


HEALTHS = st.sampled_from([health.HEALTHY] * 6 + [health.PROGRESSING, health.DEGRADED])


@settings(max_examples=150, deadline=None)
@given(
    background=st.lists(st.integers(0, 95), min_size=3, max_size=6),
    drained=st.lists(st.booleans(), min_size=6, max_size=6),
    workloads=st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from([None, 1, 2, "50%"])),
        min_size=1,
        max_size=3,
    ),
    healths=st.lists(st.lists(HEALTHS, min_size=6, max_size=6), min_size=1, max_size=3),
)
def test_a_budget_is_never_exceeded(
    background: list[int],
    drained: list[bool],
    workloads: list[tuple[int, int | str | None]],
    healths: list[list[str]],
) -> None:
    """Random fleets, drains and hot clusters, passes with random health observed between
    them: a pass that starts moves leaves each workload within its budget, and its
    `status.disruption` says what is in flight as computed here from its moves."""
    names = [f"c{i}" for i in range(len(background))]
    budgets = [
        (deployment(f"w{i}", n, cpu="5"), None if b is None else DisruptionBudget.parse(b))
        for i, (n, b) in enumerate(workloads)
    ]
    calm = [replace(cluster(n, used=20), kubeconfig_context=n) for n in names]
    base = Spec(
        source=Source(files=()),
        config=SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=1000))),
        clusters=tuple(calm),
        workloads=tuple(w for w, _ in budgets),
        placement_policies=tuple(_own_policy(w, b) for w, b in budgets),
    )
    before = {d.key: d for d in schedule.place(base)}
    loaded = tuple(
        replace(cluster(n, used=u), kubeconfig_context=n, drain=drained[i])
        for i, (n, u) in enumerate(zip(names, background, strict=True))
    )
    workload_of = {w.key: (w, b) for w, b in budgets}
    for step, states in enumerate(healths, start=1):
        by_name = dict(zip(names, states, strict=False))
        seen = {
            c.name: Observation(
                cluster=c.name,
                capacity=c.capacity,
                used=c.allocated,
                health=dict.fromkeys(before, (by_name[c.name], "")),
            )
            for c in loaded
        }
        at = step * 600.0
        after_pass = schedule.place(replace(base, clusters=loaded), before, seen, now=at)
        for after in after_pass:
            workload, budget = workload_of[after.key]
            assert sum(p.replicas or 0 for p in after.clusters) <= (workload.replicas or 0)
            now = [m for m in after.moves if m.at == durations.rfc3339(at)]
            if budget is None:
                assert after.disruption is None
                continue
            held = [p.cluster for p in before[after.key].clusters if p.replicas]
            sick = {n for n in held if by_name[n] != health.HEALTHY}
            leaving = {p.cluster for p in after.retiring} | {m.source for m in now}
            entering = sick | {m.target for m in now}
            assert after.disruption is not None
            assert (after.disruption.leaving, after.disruption.entering) == (
                tuple(sorted(leaving)),
                tuple(sorted(entering)),
            )
            if now:
                allowed = budget.of(len(held))
                assert max(len(leaving), len(entering)) <= allowed, (
                    f"{after.key}: {sorted(leaving)} → {sorted(entering)} over {allowed}"
                )
                assert not sick & {m.target for m in now}, "no move enters a sick cluster"
        before = {d.key: d for d in after_pass}


def _own_policy(workload: Workload, budget: DisruptionBudget | None) -> PlacementPolicy:
    """A DynamicWeight policy with this budget that selects this workload alone."""
    return PlacementPolicy(
        ref=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name=workload.key.name),
        origin=ORIGIN,
        api_version=DRO_API_VERSION,
        namespaced=False,
        selectors=(
            ResourceSelector(
                api_version="apps/v1",
                kind="Deployment",
                namespace=workload.key.namespace,
                name=workload.key.name,
            ),
        ),
        placement=Placement(replicas=DYNAMIC, disruption=budget),
    )


def test_a_fresh_request_moves_one_pair_of_clusters_at_a_time() -> None:
    request = "2026-11-23T10:00:00Z"

    def spec(names: str, budget: DisruptionBudget | None, asked: str | None = None) -> Spec:
        placement = Placement(replicas=DYNAMIC, disruption=budget, rebalance_requested_at=asked)
        clusters = [cluster(n) for n in names]
        config = SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100)))
        return replace(spec_of(clusters, [deployment("w", 12)], placement), config=config)

    for budget, expected in ((None, [("a", "c"), ("b", "d")]), (ONE, [("a", "c")])):
        (first,) = schedule.place(spec("ab", budget))
        assert counts(first) == {"a": 6, "b": 6}
        (step,) = schedule.place(spec("abcd", budget, request), {first.key: first}, now=0.0)
        assert [(s, t) for s, t, _ in moved_at(step, 0.0)] == expected
    (later,) = schedule.place(spec("abcd", ONE, request), {step.key: step}, now=60.0)
    assert [(s, t) for s, t, _ in moved_at(later, 60.0)] == [("b", "d")], "then the next pair"
    assert counts(later) == {"a": 3, "b": 3, "c": 3, "d": 3}
    assert later.rebalance_served == request


def test_filling_takes_from_one_cluster_at_a_time() -> None:
    def spec(budget: DisruptionBudget | None) -> Spec:
        placement = Placement(replicas=DYNAMIC, disruption=budget)
        config = SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100)))
        return replace(spec_of([cluster("a"), cluster("b")], [W], placement), config=config)

    for budget, sources in ((None, {"a", "b"}), (ONE, {"a"})):
        (first,) = schedule.place(spec(budget))
        hot = [cluster("a", used=80), cluster("b", used=80), cluster("c", used=0)]
        grown = replace(spec(budget), clusters=tuple(hot))
        (filled,) = schedule.place(grown, {first.key: first}, now=0.0, filling={"c"})
        moved = moved_at(filled, 0.0)
        assert {s for s, _, _ in moved} == sources
        assert {t for _, t, _ in moved} == {"c"}


def test_in_flight_tells_a_rollout_engine_what_a_decision_has_in_flight() -> None:
    first = first_placement(ONE)
    spec = spec_for(ONE, drain="a")
    (one,) = schedule.place(spec, {first.key: first}, observed(spec, first), now=0.0)
    progressing = observed(spec, one, {"b": health.PROGRESSING})
    leaving, entering = disruption.in_flight(one, progressing)
    assert (leaving, entering) == ({"a"}, {"b"})
    in_flight = max(len(leaving), len(entering | {"c"}))  # a wave that would change c too
    assert disruption.room(ONE, len(one.clusters), in_flight) == 0
    assert disruption.in_flight(first, observed(spec, first)) == (frozenset(), frozenset())
