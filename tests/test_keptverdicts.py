"""Verdicts bounded at the turn list what the verdicts of every cluster would list.

The fleet is the benchmark's (`bench/schedule.py`) at 150 clusters, more than a decision keeps
(`keptverdicts`), so the bound is exercised; each decision is compared with the same pass run
with whole turns kept (`explained`), as `dro explain` runs it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import schedule as bench
from reconciler import load, schedule, validate
from reconciler.branch import summary
from reconciler.domain import LISTED_OTHERS, Decision, Spec, Verdicts
from reconciler.domain.verdicts import listing
from reconciler.schedule import framework, keptverdicts
from reconciler.schedule.keptverdicts import KeptVerdicts
from reconciler.schedule.turnverdicts import TurnVerdicts

CLUSTERS = 150
WORKLOADS = 200


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Spec:
    root = tmp_path_factory.mktemp("fleet") / "repo"
    bench.write_repo(root, CLUSTERS, WORKLOADS)
    return validate.spec(load.from_directory(root))


@pytest.fixture(scope="module")
def kept(spec: Spec) -> tuple[Decision, ...]:
    return schedule.place(spec, diagnose=True)


@pytest.fixture(scope="module")
def whole(spec: Spec) -> tuple[Decision, ...]:
    return schedule.place(spec, diagnose=True, explained=lambda _key: True)


def test_a_decision_keeps_a_bounded_number_of_clusters(kept: tuple[Decision, ...]) -> None:
    for decision in kept:
        verdicts = decision.diagnosis.verdicts
        assert isinstance(verdicts, KeptVerdicts)
        most = len(decision.clusters) + keptverdicts.MARGIN
        assert len(verdicts._rows) <= most + LISTED_OTHERS + most, decision.key
        assert len(verdicts._rows) < CLUSTERS
        with pytest.raises(LookupError):
            verdicts.every()


@pytest.mark.parametrize("others", [0, 3, LISTED_OTHERS])
def test_the_listing_is_that_of_every_verdict(
    kept: tuple[Decision, ...], whole: tuple[Decision, ...], others: int
) -> None:
    assert [d.key for d in kept] == [d.key for d in whole]
    rejected = set()
    for bounded, full in zip(kept, whole, strict=True):
        assert isinstance(full.diagnosis.verdicts, TurnVerdicts)
        every = full.diagnosis.verdicts.every()
        assert len(every) == CLUSTERS
        selected = {p.cluster for p in bounded.clusters}
        found = bounded.diagnosis.verdicts.listed(selected, others)
        assert found == listing(every, selected, others), bounded.key
        rejected |= set(found.omitted_rejected)
    assert rejected, "the fleet has clusters rejected and left out"


def test_the_listing_holds_when_the_clusters_change_within_the_margin(
    kept: tuple[Decision, ...], whole: tuple[Decision, ...]
) -> None:
    for bounded, full in zip(kept, whole, strict=True):
        every = full.diagnosis.verdicts.every()
        ranked = sorted(
            (v for v in every if v.rejected_by is None), key=lambda v: (-v.total_score, v.cluster)
        )
        # re-balancing moved it onto one of the best clusters, and off its first one
        moved = {p.cluster for p in bounded.clusters[1:]} | {
            v.cluster for v in ranked[: keptverdicts.MARGIN]
        }
        found = bounded.diagnosis.verdicts.listed(moved)
        assert found == listing(every, moved), bounded.key


def test_a_cluster_not_kept_is_listed_as_placed_after_its_turn(
    kept: tuple[Decision, ...], whole: tuple[Decision, ...]
) -> None:
    bounded, full = next(
        (b, f) for b, f in zip(kept, whole, strict=True) if b.clusters and not b.unschedulable
    )
    every = full.diagnosis.verdicts.every()
    verdicts = bounded.diagnosis.verdicts
    assert isinstance(verdicts, KeptVerdicts)
    held = {verdicts._fleet.name_list[row] for row in verdicts._rows.tolist()}
    outside = next(v for v in every if v.cluster not in held)
    selected = {p.cluster for p in bounded.clusters} | {outside.cluster}
    found = verdicts.listed(selected)
    named = {v.cluster: v for v in found.verdicts}
    assert named[outside.cluster].reason == keptverdicts.UNKNOWN_REASON
    expected = listing(every, selected)
    assert [v.cluster for v in found.verdicts] == [v.cluster for v in expected.verdicts]
    assert len(found.verdicts) + found.omitted == CLUSTERS


def test_decision_files_are_those_of_whole_turns(
    kept: tuple[Decision, ...], whole: tuple[Decision, ...]
) -> None:
    for bounded, full in zip(kept, whole, strict=True):
        assert summary.decision_document(bounded) == summary.decision_document(full)


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 12.34565, 12.34564, 50.0, 99.99999, 100.0]), st.booleans()),
        max_size=400,
    ),
    st.integers(min_value=0, max_value=70),
)
def test_the_best_rows_are_those_of_a_full_sort(
    clusters: list[tuple[float, bool]], count: int
) -> None:
    feasible = np.array([f for _, f in clusters], dtype=bool)
    total = np.array([s if f else 0.0 for s, f in clusters], dtype=np.float64)
    rows = np.flatnonzero(feasible)
    expected = rows[np.lexsort((rows, -np.round(total[rows], 4)))][:count]
    assert keptverdicts._best(feasible, total, count).tolist() == expected.tolist()


def test_a_filter_gives_the_reasons_of_many_rows_as_of_each_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "full"
    bench.write_repo(root, 40, 1500)  # the fleet fills up: capacity rejects
    spec = validate.spec(load.from_directory(root))
    original = framework.Outcome.verdicts
    compared: list[str] = []

    def comparing(self: framework.Outcome, fleet: object, keep: object = None) -> Verdicts:
        for name, mask, answer in self.rejected_by:
            rows = np.flatnonzero(mask)
            if answer.reasons is not None and len(rows):
                each = [answer.label(row)[1] for row in rows.tolist()]
                assert answer.details(rows) == each, name
                compared.append(name)
        return original(self, fleet, keep)  # type: ignore[arg-type]

    monkeypatch.setattr(framework.Outcome, "verdicts", comparing)
    schedule.place(spec, diagnose=True)
    assert "Capacity" in compared
