"""Consistent hashing with bounded loads (`service.shards`): every cluster has one owner, no
member owns more than the bound, the same members give the same assignment whatever their
order, and a member joining or leaving moves about 1/N of the clusters (hypothesis)."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.service import shards

NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
CLUSTERS = st.lists(NAMES, min_size=1, max_size=300, unique=True)
MEMBERS = st.lists(NAMES.map(lambda name: f"dro-{name}"), min_size=1, max_size=8, unique=True)


def moved(before: dict[str, str], after: dict[str, str]) -> int:
    return sum(1 for cluster, owner in before.items() if after[cluster] != owner)


@given(CLUSTERS, MEMBERS)
def test_each_cluster_has_one_owner_and_no_member_is_over_the_bound(
    clusters: list[str], members: list[str]
) -> None:
    owners = shards.assign(clusters, members)
    assert sorted(owners) == sorted(clusters)
    assert set(owners.values()) <= set(members)
    limit = math.ceil(1.25 * len(clusters) / len(members))
    assert max(Counter(owners.values()).values()) <= limit


@given(CLUSTERS, MEMBERS, st.randoms(use_true_random=False))
def test_the_same_members_give_the_same_assignment_in_any_order(
    clusters: list[str], members: list[str], rng: object
) -> None:
    shuffled_members, shuffled_clusters = list(members), list(clusters)
    rng.shuffle(shuffled_members)  # type: ignore[attr-defined]
    rng.shuffle(shuffled_clusters)  # type: ignore[attr-defined]
    assert shards.assign(shuffled_clusters, shuffled_members) == shards.assign(clusters, members)


@settings(max_examples=60)
@given(st.integers(100, 400), MEMBERS, NAMES)
def test_a_member_joining_moves_about_one_nth_of_the_clusters(
    count: int, members: list[str], newcomer: str
) -> None:
    clusters = [f"cluster-{i}" for i in range(count)]
    joined = [*members, f"new-{newcomer}"]
    before = shards.assign(clusters, members)
    after = shards.assign(clusters, joined)
    fair_share = count / len(joined)
    # the newcomer's share, plus what the bound pushes on to a neighbour now and then
    assert moved(before, after) <= 1.5 * fair_share + 10
    assert Counter(after.values())[f"new-{newcomer}"] >= 1


@settings(max_examples=60)
@given(st.integers(100, 400), MEMBERS.filter(lambda m: len(m) >= 2), st.data())
def test_a_member_leaving_moves_about_its_own_clusters_only(
    count: int, members: list[str], data: st.DataObject
) -> None:
    clusters = [f"cluster-{i}" for i in range(count)]
    gone = data.draw(st.sampled_from(members))
    before = shards.assign(clusters, members)
    after = shards.assign(clusters, [m for m in members if m != gone])
    own = Counter(before.values())[gone]
    assert gone not in after.values()
    assert moved(before, after) <= own + 0.5 * count / len(members) + 10


def test_the_ring_spreads_load_close_to_the_average() -> None:
    clusters = [f"cluster-{i:04d}" for i in range(1000)]
    owners = shards.assign(clusters, ["dro-a", "dro-b", "dro-c"])
    loads = Counter(owners.values())
    assert max(loads.values()) <= 417  # ceil(1.25 × 1000 / 3)
    assert min(loads.values()) >= 250, loads


def test_no_members_own_nothing() -> None:
    assert shards.assign(["a", "b"], []) == {}
    assert shards.owned_by(shards.assign(["a", "b"], ["m"]), "m") == {"a", "b"}
