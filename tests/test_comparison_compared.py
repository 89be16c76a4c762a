"""The commit message's comparison kept between passes (`comparison.Compared`) gives what a
fresh comparison gives, and compares again only pairs of decisions it has not seen."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.branch import comparison
from reconciler.domain import Decision, Placed, ResourceKey


def decision(name: str, counts: dict[str, int]) -> Decision:
    return Decision(
        key=ResourceKey("apps", "Deployment", "shop", name),
        api_version="apps/v1",
        policy=None,
        clusters=tuple(Placed(c, n) for c, n in sorted(counts.items())),
    )


SIDES = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d", "e"]),
    st.dictionaries(st.sampled_from(["eu", "us", "ap"]), st.integers(0, 3), max_size=3),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.tuples(SIDES, SIDES, st.sampled_from([frozenset(), {"us"}]), st.booleans()),
        max_size=6,
    )
)
def test_kept_comparisons_equal_fresh_ones(
    steps: list[tuple[dict[str, dict[str, int]], dict[str, dict[str, int]], frozenset[str], bool]],
) -> None:
    compared = comparison.Compared()
    objects: dict[tuple[str, str], Decision] = {}

    def side(label: str, counts: dict[str, dict[str, int]]) -> list[Decision]:
        made = []
        for name, placed in counts.items():  # an equal decision stays one object, as read back
            found = objects.get((label, name))
            if found is None or found != decision(name, placed):
                found = objects[(label, name)] = decision(name, placed)
            made.append(found)
        return made

    for base, head, gone, twice in steps:
        before, after = side("base", base), side("head", head)
        if twice and after:  # a side that names a workload twice: the last one counts
            after.append(decision(after[0].key.name, {"ap": 9}))
        if twice and before:  # or names the very same decision twice
            before.append(before[0])
        kept = comparison.workload_changes(before, after, gone=gone, compared=compared)
        assert kept == comparison.workload_changes(before, after, gone=gone)


def test_a_pair_seen_before_is_not_compared_again(monkeypatch: pytest.MonkeyPatch) -> None:
    base = [decision(f"w{i}", {"eu": i}) for i in range(5)]
    head = [replace(d) for d in base]  # equal, other objects: as a pass's own decisions
    head[2] = decision("w2", {"us": 7})
    compared = comparison.Compared()
    first = comparison.workload_changes(base, head, compared=compared)
    assert [c.workload for c in first] == [str(head[2].key)]
    calls: list[Decision | None] = []
    real = comparison._workload
    monkeypatch.setattr(comparison, "_workload", lambda b, a, g: calls.append(a) or real(b, a, g))
    assert comparison.workload_changes(base, head, compared=compared) == first
    assert calls == []
    head[3] = decision("w3", {"ap": 1})
    again = comparison.workload_changes(base, head, compared=compared)
    assert calls == [head[3]]
    assert [c.workload for c in again] == [str(head[2].key), str(head[3].key)]


def test_a_pair_is_compared_again_when_other_clusters_are_gone() -> None:
    before, after = [decision("w", {"us": 2})], [decision("w", {"eu": 2})]
    compared = comparison.Compared()
    (kept,) = comparison.workload_changes(before, after, compared=compared)
    assert "cluster us is gone" not in kept.triggers
    (gone,) = comparison.workload_changes(before, after, gone={"us"}, compared=compared)
    assert "cluster us is gone" in gone.triggers
