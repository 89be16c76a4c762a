"""Re-balancing: hot clusters and drains, under the threshold, the budget and the cooldown."""

from __future__ import annotations

from dataclasses import replace

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler import render, schedule
from reconciler.branch import paths, summary
from reconciler.cli import report
from reconciler.domain import (
    ClusterAffinity,
    Decision,
    MoveBudget,
    Placement,
    Rebalance,
    ReplicaScheduling,
    ResourceKey,
    SchedulerConfig,
    Source,
    Spec,
    Workload,
    durations,
)
from tests.builders.schedule import (
    DYNAMIC,
    cluster,
    counts,
    deployment,
    labelled,
    policy,
    spec_of,
    with_rebalance,
)

HOUR = 3600.0


def retiring(decision: Decision) -> dict[str, int | None]:
    return {p.cluster: p.replicas for p in decision.retiring}


def two_clusters(
    *, used_a: float, used_b: float = 10, replicas: int = 8, placement: Placement | None = None
) -> tuple[Spec, Decision]:
    """A workload on a and b (divided evenly, or duplicated); then a's usage is `used_a`."""
    chosen = placement or Placement(replicas=DYNAMIC)
    calm = spec_of([cluster("a"), cluster("b")], [deployment("w", replicas)], chosen)
    (first,) = schedule.place(calm)
    if chosen.replicas.type == "Divided":
        assert counts(first) == {"a": replicas // 2, "b": replicas - replicas // 2}
    hot = replace(calm, clusters=(cluster("a", used=used_a), cluster("b", used=used_b)))
    return hot, first


def test_replicas_leave_a_cluster_above_its_limit() -> None:
    hot, first = two_clusters(used_a=90)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=100))
    (after,) = schedule.place(spec, {first.key: first}, now=HOUR)
    assert counts(after) == {"b": 8}, "a is 5 cpu over 0.85; all 4 replicas there move"
    assert retiring(after) == {"a": 4}, "the old copies keep running until the next pass"
    (move,) = after.moves
    assert (move.source, move.target, move.replicas) == ("a", "b", 4)
    assert move.reason.text == "water level 0.90 > 0.85 (cpu)"
    assert move.at == "1970-01-01T01:00:00Z"
    assert after.diagnosis.trigger.text.startswith("re-balanced: water level")


def test_only_enough_replicas_move_to_clear_the_excess() -> None:
    hot, first = two_clusters(used_a=87)
    (after,) = schedule.place(
        with_rebalance(hot, max_moves=MoveBudget(count=100)), {first.key: first}
    )
    assert counts(after) == {"a": 2, "b": 6}, "2 cpu over the limit: 2 one-cpu replicas move"


def test_the_budget_caps_the_replicas_moved_per_pass() -> None:
    hot, first = two_clusters(used_a=90)
    for budget in (1, 2, 3):
        spec = with_rebalance(hot, max_moves=MoveBudget(count=budget))
        (after,) = schedule.place(spec, {first.key: first})
        assert sum(m.replicas for m in after.moves) == budget


def test_a_policy_lowers_the_budget_for_its_workloads() -> None:
    placement = Placement(replicas=DYNAMIC, max_moves=MoveBudget(count=1))
    hot, first = two_clusters(used_a=90, placement=placement)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=100))
    (after,) = schedule.place(spec, {first.key: first})
    assert sum(m.replicas for m in after.moves) == 1


def test_nothing_moves_unless_the_gain_beats_the_threshold() -> None:
    # b would reach 0.85 after one more replica: 0.90 - 0.85 is below the 0.1 threshold.
    hot, first = two_clusters(used_a=90, used_b=84)
    (after,) = schedule.place(
        with_rebalance(hot, max_moves=MoveBudget(count=100)), {first.key: first}
    )
    assert counts(after) == counts(first)
    assert after.moves == ()
    lower = with_rebalance(hot, max_moves=MoveBudget(count=100), threshold=0.01)
    (moved,) = schedule.place(lower, {first.key: first})
    assert sum(m.replicas for m in moved.moves) == 1, "b stays within its own limit"


def test_passes_converge_and_retiring_copies_are_dropped() -> None:
    hot, first = two_clusters(used_a=90)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=2))
    decisions = {first.key: first}
    history = []
    for step in range(5):
        (decision,) = schedule.place(spec, decisions, now=step * 60.0)
        history.append(decision)
        decisions = {decision.key: decision}
    moved = [
        sum(m.replicas for m in d.moves if m.at == durations.rfc3339(step * 60.0))
        for step, d in enumerate(history)
    ]
    assert moved == [2, 2, 0, 0, 0], "two replicas per pass until a is clear, then none"
    assert counts(history[1]) == {"b": 8}
    assert [retiring(d) for d in history[2:]] == [{}, {}, {}], "dropped on the next pass"
    assert history[3] == history[4], "an unchanged input gives the same decision"


def test_a_moved_workload_does_not_move_back_within_the_cooldown() -> None:
    hot, first = two_clusters(used_a=90)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=100), cooldown=600.0)
    (moved,) = schedule.place(spec, {first.key: first}, now=0.0)
    assert counts(moved) == {"b": 8}
    # Now b runs hot and a is calm again.
    flipped = replace(spec, clusters=(cluster("a", used=10), cluster("b", used=95)))
    (soon,) = schedule.place(flipped, {moved.key: moved}, now=300.0)
    assert counts(soon) == {"b": 8}, "within the cooldown"
    (later,) = schedule.place(flipped, {moved.key: moved}, now=900.0)
    assert later.moves
    assert later.moves[-1].source == "b"
    assert all(m.at != "1970-01-01T00:00:00Z" for m in later.moves), "old moves expire"


def test_a_drained_cluster_empties_under_the_budget() -> None:
    calm = spec_of(
        [cluster("a"), cluster("b"), cluster("c")],
        [deployment("w", 6)],
        Placement(replicas=DYNAMIC),
    )
    (first,) = schedule.place(calm)
    drained = with_rebalance(
        replace(calm, clusters=(replace(cluster("a"), drain=True), cluster("b"), cluster("c"))),
        max_moves=MoveBudget(count=1),
    )
    on_a = counts(first)["a"]
    assert on_a == 2
    (step1,) = schedule.place(drained, {first.key: first})
    assert counts(step1)["a"] == 1
    assert step1.moves[0].reason.text == "cluster drained"
    (step2,) = schedule.place(drained, {step1.key: step1})
    assert "a" not in counts(step2)
    assert sum(counts(step2).values()) == 6  # type: ignore[arg-type]


def test_static_duplicated_stateful_and_karmada_workloads_never_move() -> None:
    static = Placement(replicas=ReplicaScheduling(type="Divided", division="StaticWeight"))
    duplicated = Placement(replicas=ReplicaScheduling(type="Duplicated"))
    for placement in (static, duplicated):
        hot, first = two_clusters(
            used_a=95, placement=placement, replicas=8 if placement is static else 4
        )
        (after,) = schedule.place(
            with_rebalance(hot, max_moves=MoveBudget(count=100)), {first.key: first}
        )
        assert after.moves == ()
        assert counts(after) == counts(first)
    hot, first = two_clusters(used_a=95)
    stateful = _stateful(hot.workloads[0])
    spec = with_rebalance(replace(hot, workloads=(stateful,)), max_moves=MoveBudget(count=100))
    (after,) = schedule.place(spec, {first.key: first})
    assert after.moves == ()
    karmada = replace(hot.placement_policies[0], dro_extensions=False)
    spec = with_rebalance(
        replace(hot, placement_policies=(karmada,)), max_moves=MoveBudget(count=100)
    )
    (after,) = schedule.place(spec, {first.key: first})
    assert after.moves == ()


def _stateful(workload: Workload) -> Workload:
    manifest = yaml.safe_load(yaml.safe_dump(dict(workload.manifest)))
    manifest["spec"]["template"]["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    ]
    return replace(workload, manifest=manifest)


def test_retiring_copies_are_rendered_beside_the_target() -> None:
    hot, first = two_clusters(used_a=87)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=100))
    (after,) = schedule.place(spec, {first.key: first})
    tree = render.tree(spec, [after])
    key = ResourceKey("apps", "Deployment", "prod", "w")
    on_a = yaml.safe_load(tree[paths.object_path("a", key)])
    on_b = yaml.safe_load(tree[paths.object_path("b", key)])
    assert (on_a["spec"]["replicas"], on_b["spec"]["replicas"]) == (4, 6), "old count kept on a"
    document = yaml.safe_load(tree[paths.decision_path(key)])
    assert document["status"]["retiring"] == [{"name": "a", "replicas": 2}]
    assert document["status"]["moves"][0]["reason"] == "water level 0.87 > 0.85 (cpu)"
    back = summary.decision_from_document(document)
    assert back.retiring == after.retiring
    assert back.moves == after.moves
    (next_pass,) = schedule.place(spec, {back.key: back})
    tree = render.tree(spec, [next_pass])
    assert yaml.safe_load(tree[paths.object_path("a", key)])["spec"]["replicas"] == 2


@settings(max_examples=60, deadline=None)
@given(
    used=st.lists(st.integers(0, 99), min_size=2, max_size=5),
    budget=st.integers(0, 6),
    replicas=st.integers(1, 12),
)
def test_budget_and_calm_fleets(used: list[int], budget: int, replicas: int) -> None:
    names = [f"c{i}" for i in range(len(used))]
    calm = spec_of(
        [cluster(n) for n in names], [deployment("w", replicas)], Placement(replicas=DYNAMIC)
    )
    (first,) = schedule.place(calm)
    loaded = replace(
        calm, clusters=tuple(cluster(n, used=u) for n, u in zip(names, used, strict=True))
    )
    spec = with_rebalance(loaded, max_moves=MoveBudget(count=budget))
    (after,) = schedule.place(spec, {first.key: first})
    moved = sum(m.replicas for m in after.moves)
    assert moved <= budget
    assert sum(counts(after).values()) == replicas  # type: ignore[arg-type]
    if all(u <= 85 for u in used):
        assert moved == 0, "nothing moves when every cluster is within its limit"
    for move in after.moves:
        assert dict(zip(names, used, strict=True))[move.source] > 85


def test_explain_shows_the_moves_and_the_retiring_copies() -> None:
    hot, first = two_clusters(used_a=90)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=1))
    (after,) = schedule.place(spec, {first.key: first}, now=HOUR)
    text = [line for line in report.explanation(after) if isinstance(line, str)]
    assert "moved 1 replica(s) a → b at 1970-01-01T01:00:00Z: water level 0.90 > 0.85 (cpu)" in text
    assert "retiring (old copies kept until the new ones are up): a 1" in text


def test_requested_at_redivides_fresh_under_the_budget() -> None:
    placement = Placement(replicas=DYNAMIC)
    two = spec_of([cluster("a"), cluster("b")], [deployment("w", 6)], placement)
    (first,) = schedule.place(two)
    assert counts(first) == {"a": 3, "b": 3}
    three = with_rebalance(
        replace(two, clusters=(cluster("a"), cluster("b"), cluster("c"))),
        max_moves=MoveBudget(count=1),
    )
    (added,) = schedule.place(three, {first.key: first})
    assert counts(added) == {"a": 3, "b": 3}, "an added cluster changes nothing by itself"
    request = "2026-11-23T10:00:00Z"
    policy = replace(
        three.placement_policies[0],
        placement=replace(placement, rebalance_requested_at=request),
    )
    asked = replace(three, placement_policies=(policy,))
    (step1,) = schedule.place(asked, {added.key: added})
    assert [(m.source, m.target, m.replicas, m.reason.text) for m in step1.moves] == [
        ("a", "c", 1, "rebalance requested")
    ]
    assert step1.rebalance_served is None, "not served until the Fresh division is reached"
    (step2,) = schedule.place(asked, {step1.key: step1})
    assert counts(step2) == {"a": 2, "b": 2, "c": 2}
    assert step2.rebalance_served == request
    (step3,) = schedule.place(asked, {step2.key: step2})
    assert counts(step3) == counts(step2)
    assert step3.retiring == (), "served: nothing more moves"
    assert (
        summary.decision_from_document(summary.decision_document(step3)).rebalance_served == request
    )


def test_a_partial_scale_up_keeps_the_copies_and_the_cooldown() -> None:
    hot, first = two_clusters(used_a=90)
    spec = with_rebalance(hot, max_moves=MoveBudget(count=100))
    (moved,) = schedule.place(spec, {first.key: first}, now=HOUR)
    assert retiring(moved) == {"a": 4}
    huge = replace(spec, workloads=(deployment("w", 500),))
    (stuck,) = schedule.place(huge, {moved.key: moved}, now=HOUR + 60)
    assert stuck.unschedulable
    assert counts(stuck)["b"] >= counts(moved)["b"], "capacity is short: the running copies stay"
    assert stuck.pending == 500 - sum(n or 0 for n in counts(stuck).values()) > 0
    assert stuck.retiring == (), "the move completes: its old copies go"
    assert stuck.moves == moved.moves, "the cooldown still knows the move"


def test_replicas_placed_this_pass_move_without_retiring_copies() -> None:
    """A Karmada policy's workload, placed after a dro one, fills a and b above their limit:
    the dro workload's replicas, placed this very pass, move to c and leave nothing behind."""
    dynamic = Placement(replicas=DYNAMIC)
    targets = Placement(targets=(ClusterAffinity(names=("a", "b")),), replicas=DYNAMIC)
    spec = Spec(
        source=Source(files=()),
        config=SchedulerConfig(rebalance=Rebalance(max_moves=MoveBudget(count=100))),
        clusters=(cluster("a", used=60), cluster("b", used=60), cluster("c", used=60)),
        workloads=(
            labelled(deployment("w1", 6), "0"),
            labelled(deployment("w2", 60), "1"),
        ),
        placement_policies=(policy(0, dynamic, True), policy(1, targets, False)),
    )
    first, filler = schedule.place(spec)
    assert counts(filler) == {"a": 30, "b": 30}, "Karmada's estimator fills a and b to 0.92"
    assert counts(first) == {"c": 6}
    assert {(m.source, m.replicas) for m in first.moves} == {("a", 2), ("b", 2)}
    assert retiring(first) == {}, "nothing ran on a or b yet: there is no old copy to keep"


def test_only_copies_that_ran_before_retire() -> None:
    """Scaled from 8 to 6 while a turns hot: the scale-down takes 2 replicas off a (the
    hottest holder), and the 2 old copies left there are the only ones that retire when they
    move."""
    hot, first = two_clusters(used_a=95)
    scaled = replace(hot, workloads=(deployment("w", 6),))
    spec = with_rebalance(scaled, max_moves=MoveBudget(count=100))
    (after,) = schedule.place(spec, {first.key: first}, now=HOUR)
    assert counts(after) == {"b": 6}
    assert retiring(after) == {"a": 2}, "2 of a's 4 replicas were scaled away, 2 moved"
