"""The clusters held by the last pass's decisions, kept across calls by identity
(`validate.removed.Holders`), are those a fresh walk of the same decisions finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.domain import Decision, Placed, ResourceKey
from reconciler.validate.removed import Holders

CLUSTERS = ["eu", "us", "ap", "sa"]
PLACED = st.lists(st.sampled_from(CLUSTERS), max_size=3, unique=True)


def decision(name: str, clusters: list[str], retiring: list[str]) -> Decision:
    return Decision(
        key=ResourceKey("apps", "Deployment", "shop", name),
        api_version="apps/v1",
        policy=None,
        clusters=tuple(Placed(c, 1) for c in sorted(clusters)),
        retiring=tuple(Placed(c, 1) for c in sorted(retiring)),
    )


def fresh(decisions: list[Decision]) -> set[str]:
    return {p.cluster for d in decisions for p in (*d.clusters, *d.retiring)}


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.lists(st.tuples(st.sampled_from("abcde"), PLACED, PLACED, st.booleans()), max_size=6),
        max_size=6,
    )
)
def test_kept_holders_equal_a_fresh_walk(
    steps: list[list[tuple[str, list[str], list[str], bool]]],
) -> None:
    holders = Holders()
    objects: dict[str, Decision] = {}
    for step in steps:
        decisions = []
        for name, clusters, retiring, keep in step:
            # the last object kept (as read back), or a new one, equal or not, twice or not
            if not (keep and name in objects):
                objects[name] = decision(name, clusters, retiring)
            decisions.append(objects[name])
        assert holders.names(decisions) == fresh(decisions)


def test_a_decision_named_twice_counts_once_and_leaves_cleanly() -> None:
    holders = Holders()
    one = decision("a", ["eu"], ["us"])
    assert holders.names([one, one]) == {"eu", "us"}
    assert holders.names([]) == set()
