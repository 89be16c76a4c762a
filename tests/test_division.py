"""Division: Karmada's Webster vectors, its assignment vectors, and properties."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.schedule import division

WIKIPEDIA = {"PartyA": 100000, "PartyB": 80000, "PartyC": 30000, "PartyD": 20000}


@pytest.mark.parametrize(
    ("seats", "expected"),
    [
        (1, (1, 0, 0, 0)),
        (2, (1, 1, 0, 0)),
        (3, (2, 1, 0, 0)),
        (4, (2, 1, 1, 0)),
        (5, (2, 2, 1, 0)),
        (6, (2, 2, 1, 1)),
        (7, (3, 2, 1, 1)),
        (8, (3, 3, 1, 1)),
    ],
)
# Round 6 is a tie (100000/5 == 20000/1): the party with fewer seats wins it (Karmada ≥ 1.16).
def test_webster_matches_the_classic_rounds(seats: int, expected: tuple[int, ...]) -> None:
    result = division.webster(seats, WIKIPEDIA)
    assert tuple(result.values()) == expected
    assert list(result) == sorted(WIKIPEDIA)


@pytest.mark.parametrize(
    ("seats", "votes", "initial", "expected"),
    [
        (4, {"Alpha": 1200, "Beta": 900, "Gamma": 400}, None, {"Alpha": 2, "Beta": 1, "Gamma": 1}),
        (1, {}, None, {}),
        (0, {"PartyA": 100, "PartyB": 200}, None, {"PartyA": 0, "PartyB": 0}),
        (1, {"PartyA": 1, "PartyB": 2}, None, {"PartyA": 0, "PartyB": 1}),
        (1, {"PartyA": 0, "PartyB": 0}, {"PartyA": 2, "PartyB": 1}, {"PartyA": 2, "PartyB": 2}),
        (1, {"PartyA": 3, "PartyB": 1}, {"PartyA": 1, "PartyB": 0}, {"PartyA": 1, "PartyB": 1}),
        (1, {"PartyA": 1, "PartyB": 1}, None, {"PartyA": 1, "PartyB": 0}),
        (
            2,
            {"NewParty1": 1, "NewParty2": 1},
            {"OldParty": 0},
            {"NewParty1": 1, "NewParty2": 1, "OldParty": 0},
        ),
        (2, {"OldParty": 1, "NewParty": 1}, {"OldParty": 1}, {"NewParty": 2, "OldParty": 1}),
        (2, {"PartyA": 100}, {"PartyB": 3}, {"PartyA": 2, "PartyB": 3}),
    ],
)
def test_webster_karmada_vectors(
    seats: int, votes: dict[str, int], initial: dict[str, int] | None, expected: dict[str, int]
) -> None:
    assert division.webster(seats, votes, initial) == expected


def test_uid_with_odd_hash_reverses_name_order() -> None:
    odd = next(u for u in (f"uid-{i}" for i in range(100)) if division.fnv1a_32(u) % 2)
    even = next(u for u in (f"uid-{i}" for i in range(100)) if not division.fnv1a_32(u) % 2)
    assert division.webster(1, {"a": 1, "b": 1}, uid=odd) == {"a": 0, "b": 1}
    assert division.webster(1, {"a": 1, "b": 1}, uid=even) == {"a": 1, "b": 0}
    assert division.webster(1, {"a": 1, "b": 1}) == {"a": 1, "b": 0}


def test_fnv1a_32_known_values() -> None:
    assert division.fnv1a_32("") == 0x811C9DC5
    assert division.fnv1a_32("a") == 0xE40C292C
    assert division.fnv1a_32("foobar") == 0xBF9CF968


@pytest.mark.parametrize(
    ("strategy", "replicas", "kwargs", "expected"),
    [
        ("Duplicated", 3, {}, {"m1": 3, "m2": 3, "m3": 3}),
        (
            "StaticWeight",
            14,
            {"static_weights": [("m1", 3), ("m2", 2), ("m3", 1)]},
            {"m1": 7, "m2": 5, "m3": 2},
        ),
        (
            "StaticWeight",
            6,
            {"static_weights": [("m1", 1), ("m1", 3), ("m2", 1)]},
            {"m1": 4, "m2": 2},
        ),
        ("StaticWeight", 4, {"static_weights": [("m1", 0), ("m2", 1)]}, {"m2": 4}),
        ("StaticWeight", 3, {"static_weights": [("m1", 0)]}, {"m1": 1, "m2": 1, "m3": 1}),
        ("StaticWeight", 3, {}, {"m1": 1, "m2": 1, "m3": 1}),
        (
            "DynamicWeight",
            12,
            {"available": {"m1": 8, "m2": 8, "m3": 10}},
            {"m1": 4, "m2": 4, "m3": 4},
        ),
        (
            "Aggregated",
            24,
            {"available": {"m1": 4, "m2": 6, "m3": 8}, "previous": {"m1": 4, "m2": 8}},
            {"m1": 7, "m2": 12, "m3": 5},
        ),
        ("Aggregated", 12, {"available": {"m1": 10, "m2": 8, "m3": 0}}, {"m1": 7, "m2": 5}),
        (
            "DynamicWeight",
            6,
            {"available": {"m1": 9, "m2": 9}, "previous": {"m1": 8, "m2": 4}},
            {"m1": 4, "m2": 2},
        ),
        (
            "DynamicWeight",
            12,
            {"available": {"m1": 1}, "previous": {"m1": 8, "m2": 4, "m3": 0}},
            {"m1": 8, "m2": 4},
        ),
    ],
)
def test_assign_karmada_vectors(
    strategy: str, replicas: int, kwargs: dict[str, object], expected: dict[str, int]
) -> None:
    assert division.assign(strategy, replicas, ["m1", "m2", "m3"], **kwargs) == expected  # type: ignore[arg-type]


def test_aggregated_after_a_cluster_is_lost() -> None:
    result = division.assign(
        "Aggregated",
        24,
        ["m1", "m3", "m4"],
        available={"m1": 4, "m3": 8, "m4": 12},
        previous={"m1": 4, "m2": 8},
    )
    assert result == {"m1": 7, "m3": 7, "m4": 10}


def test_short_capacity_is_all_or_nothing() -> None:
    result = division.assign("DynamicWeight", 6, ["m1", "m2"], available={"m1": 2, "m2": 3})
    assert isinstance(result, division.Unschedulable)
    assert "available replicas 5 are not enough" in result.message


def test_fresh_counts_previous_replicas_as_available() -> None:
    result = division.assign(
        "DynamicWeight",
        6,
        ["m1", "m2"],
        available={"m1": 0, "m2": 3},
        previous={"m1": 3},
        fresh=True,
    )
    assert result == {"m1": 3, "m2": 3}


def test_unknown_strategy_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        division.assign("Random", 1, ["a"])


names = st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=1, max_size=8, unique=True)


@settings(max_examples=200, deadline=None)
@given(
    votes=st.dictionaries(
        st.text("abcxyz", min_size=1, max_size=3), st.integers(0, 1000), min_size=1, max_size=8
    ),
    seats=st.integers(0, 60),
    uid=st.text(max_size=8),
)
def test_webster_preserves_total_and_is_monotone(
    votes: dict[str, int], seats: int, uid: str
) -> None:
    result = division.webster(seats, votes, uid=uid)
    assert sum(result.values()) == seats
    bigger = division.webster(seats + 1, votes, uid=uid)
    assert all(bigger[name] >= count for name, count in result.items())
    assert division.webster(seats, dict(reversed(list(votes.items()))), uid=uid) == result


def one_seat_at_a_time(
    seats: int, votes: list[int], held: list[int], descending: bool
) -> list[int]:
    """Sainte-Laguë by its definition: each seat to the highest votes / (2 × seats + 1), ties to
    the party with fewer seats, then by name order (reversed when `descending`)."""
    held = list(held)
    for _ in range(seats):
        best = min(
            range(len(votes)),
            key=lambda i: (-votes[i] / (2 * held[i] + 1), held[i], -i if descending else i),
        )
        held[best] += 1
    return held


@settings(max_examples=300, deadline=None)
@given(
    votes=st.lists(st.integers(0, 9), min_size=1, max_size=40),
    data=st.data(),
    seats=st.integers(0, 30),
    descending=st.booleans(),
)
def test_webster_seats_matches_the_definition(
    votes: list[int], data: st.DataObject, seats: int, descending: bool
) -> None:
    zero = [0] * len(votes)
    held = data.draw(st.sampled_from([zero, [v % 3 for v in votes]]))
    array, initial = np.array(votes, dtype=np.int64), np.array(held, dtype=np.int64)
    result = division.webster_seats(seats, array, initial, descending=descending)
    assert result.tolist() == one_seat_at_a_time(seats, votes, held, descending)


@given(uid=st.text(max_size=40))
def test_tie_order_is_the_parity_of_the_fnv_hash(uid: str) -> None:
    assert division.names_descending(uid) == (bool(uid) and division.fnv1a_32(uid) % 2 == 1)


@settings(max_examples=200, deadline=None)
@given(clusters=names, data=st.data(), replicas=st.integers(0, 50), uid=st.text(max_size=6))
def test_static_division_is_order_independent_and_exact(
    clusters: list[str], data: st.DataObject, replicas: int, uid: str
) -> None:
    weights = [(name, data.draw(st.integers(0, 9))) for name in clusters]
    result = division.assign("StaticWeight", replicas, clusters, static_weights=weights, uid=uid)
    shuffled = data.draw(st.permutations(clusters))
    again = division.assign(
        "StaticWeight", replicas, shuffled, static_weights=list(reversed(weights)), uid=uid
    )
    assert result == again
    assert sum(result.values()) == replicas
    assert set(result) <= set(clusters)
    assert all(count > 0 for count in result.values())
    more = division.assign("StaticWeight", replicas + 1, clusters, static_weights=weights, uid=uid)
    assert all(more.get(name, 0) >= count for name, count in result.items())


@settings(max_examples=200, deadline=None)
@given(clusters=names, data=st.data(), replicas=st.integers(1, 40))
def test_dynamic_division_never_exceeds_total_or_leaves_candidates(
    clusters: list[str], data: st.DataObject, replicas: int
) -> None:
    available = {name: data.draw(st.integers(0, 20)) for name in clusters}
    strategy = data.draw(st.sampled_from(["DynamicWeight", "Aggregated"]))
    result = division.assign(strategy, replicas, clusters, available=available)
    if isinstance(result, division.Unschedulable):
        assert sum(available.values()) < replicas
        return
    assert sum(result.values()) == replicas
    assert set(result) <= {name for name, free in available.items() if free > 0}


@settings(max_examples=400, deadline=None)
@given(
    votes=st.lists(
        st.one_of(st.integers(0, 12), st.integers(0, division.MAX_REPLICAS)), min_size=1, max_size=8
    ),
    data=st.data(),
    seats=st.integers(0, 400),
    descending=st.booleans(),
)
def test_the_divisor_search_matches_one_seat_at_a_time(
    votes: list[int], data: st.DataObject, seats: int, descending: bool
) -> None:
    held = data.draw(st.lists(st.integers(0, 6), min_size=len(votes), max_size=len(votes)))
    if data.draw(st.booleans()):
        votes = [votes[0]] * len(votes)  # equal votes: every tie rule is exercised
    array, initial = np.array(votes, dtype=np.int64), np.array(held, dtype=np.int64)
    result = division.webster_by_divisor(seats, array, initial, descending=descending)
    assert result.tolist() == one_seat_at_a_time(seats, votes, held, descending)


@pytest.mark.parametrize("uid", ["", "odd-uid", "even-uid"])
def test_a_huge_static_division_takes_milliseconds_and_keeps_its_properties(uid: str) -> None:
    clusters = ["m1", "m2", "m3", "m4"]
    weights = [("m1", 3), ("m2", 2), ("m3", 1), ("m4", 1)]
    started = time.perf_counter()
    result = division.assign(
        "StaticWeight", division.MAX_REPLICAS, clusters, static_weights=weights, uid=uid
    )
    more = division.assign(
        "StaticWeight", division.MAX_REPLICAS - 1, clusters, static_weights=weights, uid=uid
    )
    assert time.perf_counter() - started < 2.0  # one seat at a time took minutes
    assert sum(result.values()) == division.MAX_REPLICAS
    assert all(result[name] >= more[name] for name in clusters)
    assert abs(result["m1"] - 3 * result["m3"]) <= 3
    assert abs(result["m3"] - result["m4"]) <= 1


def test_the_switch_to_the_divisor_search_changes_no_seat() -> None:
    votes = np.array([7, 7, 3, 100, 1], dtype=np.int64)
    zero = np.zeros(5, dtype=np.int64)
    for seats in range(division.BY_DIVISOR_ABOVE - 3, division.BY_DIVISOR_ABOVE + 4):
        expected = one_seat_at_a_time(seats, votes.tolist(), [0] * 5, descending=True)
        assert division.webster_seats(seats, votes, zero, descending=True).tolist() == expected
