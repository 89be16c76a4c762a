"""Failover: replicas leave a cluster unreachable for longer than `failover.after`."""

from __future__ import annotations

from dataclasses import replace

from reconciler import schedule, validate
from reconciler.domain import (
    Cluster,
    Decision,
    MoveBudget,
    Observation,
    Placement,
    PlacementPolicy,
    ReplicaScheduling,
    ResourceKey,
    Spec,
    durations,
)
from tests.builders.schedule import cluster, counts, deployment, spec_of, with_rebalance

DYNAMIC = ReplicaScheduling(type="Divided", division="DynamicWeight")
NOW = 100_000.0


def reachable(name: str) -> Cluster:
    return replace(cluster(name), kubeconfig_context=name)


def down_since(spec: Spec, name: str, seconds_ago: float) -> dict[str, Observation]:
    """An observation of `name` unreachable since `seconds_ago` before NOW."""
    (declared,) = [c for c in spec.clusters if c.name == name]
    return {
        name: Observation(
            cluster=name,
            capacity=declared.capacity,
            used=declared.allocated,
            stale=True,
            unreachable_since=durations.rfc3339(NOW - seconds_ago),
        )
    }


def placed_on_three(placement: Placement | None = None) -> tuple[Spec, Decision]:
    chosen = placement or Placement(replicas=DYNAMIC)
    spec = spec_of([reachable(n) for n in "abc"], [deployment("w", 9)], chosen)
    (first,) = schedule.place(spec)
    assert counts(first) == {"a": 3, "b": 3, "c": 3}
    return spec, first


def test_a_short_outage_moves_nothing_and_takes_no_new_replicas() -> None:
    spec, first = placed_on_three()
    (after,) = schedule.place(spec, {first.key: first}, down_since(spec, "a", 120), now=NOW)
    assert counts(after) == counts(first)
    assert after.moves == ()
    grown = replace(spec, workloads=(deployment("w", 12),))
    (scaled,) = schedule.place(grown, {first.key: first}, down_since(spec, "a", 120), now=NOW)
    assert counts(scaled)["a"] == 3, "the unreachable cluster gets none of the new replicas"
    assert sum(counts(scaled).values()) == 12  # type: ignore[arg-type]


def test_after_the_timeout_the_replicas_are_placed_elsewhere() -> None:
    spec, first = placed_on_three()
    (after,) = schedule.place(spec, {first.key: first}, down_since(spec, "a", 301), now=NOW)
    assert "a" not in counts(after)
    assert sum(counts(after).values()) == 9  # type: ignore[arg-type]
    assert after.retiring == (), "nothing can be retired on a cluster that cannot be reached"
    assert after.diagnosis.trigger.text == "failover after 5m"
    assert {(m.source, m.reason.text) for m in after.moves} == {("a", "failover after 5m")}
    assert sum(m.replicas for m in after.moves) == 3


def test_a_cluster_without_kubeconfig_is_never_unreachable() -> None:
    spec, first = placed_on_three()
    plain = replace(spec, clusters=(cluster("a"), *spec.clusters[1:]))
    (after,) = schedule.place(plain, {first.key: first}, down_since(plain, "a", 3600), now=NOW)
    assert counts(after) == counts(first)


def test_a_karmada_policy_fails_over_only_with_spec_failover() -> None:
    spec, first = placed_on_three(Placement(replicas=DYNAMIC, failover=False))
    (policy,) = spec.placement_policies
    karmada: PlacementPolicy = replace(policy, dro_extensions=False)
    spec = replace(spec, placement_policies=(karmada,))
    (stays,) = schedule.place(spec, {first.key: first}, down_since(spec, "a", 3600), now=NOW)
    assert counts(stays) == counts(first)
    opted = replace(karmada, placement=replace(karmada.placement, failover=True))
    spec = replace(spec, placement_policies=(opted,))
    (moved,) = schedule.place(spec, {first.key: first}, down_since(spec, "a", 3600), now=NOW)
    assert "a" not in counts(moved)


def test_failover_is_exempt_from_the_churn_budget() -> None:
    spec, first = placed_on_three()
    tight = with_rebalance(spec, max_moves=MoveBudget(count=1))
    (after,) = schedule.place(tight, {first.key: first}, down_since(spec, "a", 600), now=NOW)
    assert sum(m.replicas for m in after.moves) == 3, "all of a's replicas, whatever the budget"


def test_a_deleted_cluster_file_re_places_its_replicas_and_warns() -> None:
    spec, first = placed_on_three()
    gone = replace(spec, clusters=spec.clusters[:2])
    (after,) = schedule.place(gone, {first.key: first}, now=NOW)
    assert set(counts(after)) == {"a", "b"}
    assert sum(counts(after).values()) == 9  # type: ignore[arg-type]
    (warning,) = validate.removed_clusters(gone, [first])
    assert warning.startswith("cluster c was removed while it still holds 3× prod/Deployment")
    assert "drain" in warning
    assert validate.removed_clusters(spec, [first]) == []


def test_a_suspended_cluster_is_never_unreachable() -> None:
    spec, first = placed_on_three()
    (a, *others) = spec.clusters
    paused = replace(spec, clusters=(replace(a, suspend=True), *others))
    (after,) = schedule.place(paused, {first.key: first}, down_since(paused, "a", 3600), now=NOW)
    assert counts(after) == counts(first), "placement is unchanged while suspended"


def pending_on(
    spec: Spec, name: str, key: ResourceKey, pods: int, ago: float
) -> dict[str, Observation]:
    """An observation of `name` where `pods` of the workload have pended since `ago` seconds."""
    (declared,) = [c for c in spec.clusters if c.name == name]
    since = durations.rfc3339(NOW - ago)
    return {
        name: Observation(
            cluster=name,
            capacity=declared.capacity,
            used=declared.allocated,
            pending={key: (pods, since)},
        )
    }


def test_pods_pending_too_long_move_their_share_elsewhere() -> None:
    spec, first = placed_on_three()
    waiting = pending_on(spec, "a", first.key, 2, 120)
    (patient,) = schedule.place(spec, {first.key: first}, waiting, now=NOW)
    assert counts(patient) == counts(first), "within unschedulableAfter nothing moves"
    stuck = pending_on(spec, "a", first.key, 2, 600)
    (after,) = schedule.place(spec, {first.key: first}, stuck, now=NOW)
    assert counts(after)["a"] == 1
    assert sum(counts(after).values()) == 9  # type: ignore[arg-type]
    assert after.diagnosis.trigger.text == "pods pending over 5m"
    assert {(m.source, m.reason.text) for m in after.moves} == {("a", "pods pending over 5m")}
    assert sum(m.replicas for m in after.moves) == 2


def test_pending_pods_leave_a_static_weight_split_alone() -> None:
    """Found on a real cluster (tests/e2e/test_reconcile_real.py): a StaticWeight split's
    weights fix each share, so it was divided again to the same counts on every pass, reported
    as "pods pending over 5m" though nothing moved. As Karmada's descheduler, only the
    divisions by availability (DynamicWeight, Aggregated) move pending pods."""
    static = ReplicaScheduling(type="Divided", division="StaticWeight")
    spec, first = placed_on_three(Placement(replicas=static))
    stuck = pending_on(spec, "a", first.key, 2, 600)
    (after,) = schedule.place(spec, {first.key: first}, stuck, now=NOW)
    assert counts(after) == counts(first)
    assert after.diagnosis.trigger.text != "pods pending over 5m"
    assert after.moves == ()
