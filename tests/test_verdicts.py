"""Verdicts built only when read, the bound on what a decision file lists, and the README's.

The fleet is the benchmark's (`bench/schedule.py`), cut down: 40 clusters in 10 regions with
water-level limits, 300 Deployments under 20 policies, so that every filter rejects some
clusters and the ledger moves on after each turn.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench import schedule as bench
from reconciler import load, schedule, validate, yamlio
from reconciler.branch import overview, statefiles, summary
from reconciler.domain import LISTED_OTHERS, ClusterVerdict, Decision, Listing, Spec, Verdicts
from reconciler.domain.verdicts import listing
from reconciler.schedule import framework
from reconciler.schedule.keptverdicts import KeptVerdicts

CLUSTERS = 40
WORKLOADS = 300


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Spec:
    root = tmp_path_factory.mktemp("fleet") / "repo"
    bench.write_repo(root, CLUSTERS, WORKLOADS)
    return validate.spec(load.from_directory(root))


@pytest.fixture(scope="module")
def decisions(spec: Spec) -> tuple[Decision, ...]:
    return schedule.place(spec, diagnose=True)


def test_verdicts_read_after_the_pass_are_those_of_the_turn(
    spec: Spec, decisions: tuple[Decision, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = framework.Outcome.verdicts

    def at_the_turn(self: framework.Outcome, fleet: object, keep: object = None) -> Verdicts:
        found = original(self, fleet, keep)  # type: ignore[arg-type]
        found.every()  # built now, from the arrays as they stand at the turn
        return found

    monkeypatch.setattr(framework.Outcome, "verdicts", at_the_turn)
    eager = schedule.place(spec, diagnose=True)
    assert [d.key for d in eager] == [d.key for d in decisions]
    rejected = {v.rejected_by for d in eager for v in d.diagnosis.verdicts.every()}
    assert {"WaterLevel", "ClusterAffinity"} <= rejected, "the fleet exercises the filters"
    for late, now in zip(decisions, eager, strict=True):
        assert late.diagnosis.verdicts.every() == now.diagnosis.verdicts.every(), late.key


@pytest.mark.parametrize("others", [0, 3, LISTED_OTHERS, CLUSTERS])
def test_listing_from_the_arrays_matches_the_listing_of_every_verdict(
    spec: Spec, others: int
) -> None:
    fresh = schedule.place(spec, diagnose=True)  # nothing built yet: `listed` reads the arrays
    for decision in fresh:
        verdicts = decision.diagnosis.verdicts
        selected = {p.cluster for p in decision.clusters}
        from_arrays = verdicts.listed(selected, others)
        assert from_arrays == listing(verdicts.every(), selected, others), decision.key
        assert len(from_arrays.verdicts) <= len(selected) + others
        assert len(from_arrays.verdicts) + from_arrays.omitted == CLUSTERS


def test_a_decision_file_lists_the_selected_clusters_then_at_most_twenty_more(
    decisions: tuple[Decision, ...],
) -> None:
    for decision in decisions:
        document = summary.decision_document(decision)["status"]["diagnosis"]
        every = decision.diagnosis.verdicts.every()
        selected = sorted(p.cluster for p in decision.clusters)
        names = [entry["name"] for entry in document["clusters"]]
        assert names[: len(selected)] == selected
        rest = document["clusters"][len(selected) :]
        assert len(rest) == min(LISTED_OTHERS, len(every) - len(selected))
        feasible = [e for e in rest if e["feasible"]]
        assert rest[: len(feasible)] == feasible, "the feasible ones come first"
        scores = [e["score"] for e in feasible]
        assert scores == sorted(scores, reverse=True)
        rejected = [e["name"] for e in rest[len(feasible) :]]
        assert rejected == sorted(rejected)
        omitted = document.get("omitted", {})
        left_out = [v for v in every if v.cluster not in names]
        assert omitted.get("feasible", 0) == sum(1 for v in left_out if v.rejected_by is None)
        by_filter: dict[str, int] = {}
        for verdict in left_out:
            if verdict.rejected_by is not None:
                by_filter[verdict.rejected_by] = by_filter.get(verdict.rejected_by, 0) + 1
        assert omitted.get("rejectedBy", {}) == by_filter
        if len(every) <= len(selected) + LISTED_OTHERS:
            assert "omitted" not in document


def test_explain_lists_every_cluster(decisions: tuple[Decision, ...]) -> None:
    decision = next(d for d in decisions if d.clusters)
    document = summary.diagnosis_document(decision, every=True)
    assert [e["name"] for e in document["clusters"]] == [f"c{i:04d}" for i in range(CLUSTERS)]
    assert "omitted" not in document


def test_a_standing_decision_writes_its_recorded_diagnosis_without_building_verdicts(
    spec: Spec, decisions: tuple[Decision, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = {
        d.key: summary.decision_from_document(summary.decision_document(d)) for d in decisions
    }
    built: list[int] = []
    original = KeptVerdicts._build

    def counted(self: KeptVerdicts, rows: object) -> list[ClusterVerdict]:
        found = original(self, rows)  # type: ignore[arg-type]
        built.append(len(found))
        return found

    monkeypatch.setattr(KeptVerdicts, "_build", counted)
    steady = schedule.place(spec, previous, diagnose=True)
    standing = [d for d in steady if d.recorded is not None]
    assert len(standing) > WORKLOADS // 2
    for decision in standing:
        written = summary.decision_document(decision)["status"]["diagnosis"]
        assert written == previous[decision.key].recorded
    assert built == [], "no verdict is built for a diagnosis written again"
    summary.decision_document(replace(standing[0], recorded=None))
    assert built, "one written afresh builds its listed verdicts"
    assert sum(built) <= len(standing[0].clusters) + LISTED_OTHERS


def test_a_diagnosis_recorded_before_the_bound_is_written_afresh_once(
    decisions: tuple[Decision, ...],
) -> None:
    decision = next(d for d in decisions if d.clusters and not d.unschedulable)
    old = summary.diagnosis_document(decision, every=True)  # a verdict per cluster
    assert len(old["clusters"]) == CLUSTERS
    document = summary.decision_document(decision)
    document["status"]["diagnosis"] = old
    written = yamlio.dump(document).encode()
    path = "decisions/bench/deployment-x.yaml"
    read_back = statefiles.decision(path, statefiles.seal(written))
    assert isinstance(read_back.recorded, str), "read back as the block itself"
    upgraded = replace(decision, recorded=read_back.recorded)
    diagnosis = summary.decision_document(upgraded)["status"]["diagnosis"]
    assert diagnosis == summary.diagnosis_document(decision)
    assert len(diagnosis["clusters"]) <= len(decision.clusters) + LISTED_OTHERS
    as_mapping = replace(decision, recorded=old)
    assert summary.decision_document(as_mapping)["status"]["diagnosis"] == diagnosis
    bounded = {**summary.diagnosis_document(decision), "trigger": "as recorded"}
    kept = replace(decision, recorded=bounded)
    assert summary.decision_document(kept)["status"]["diagnosis"] == bounded
    unexplained = replace(upgraded, diagnosis=replace(decision.diagnosis, verdicts=Verdicts()))
    assert summary.decision_document(unexplained)["status"]["diagnosis"] == read_back.recorded


def test_listing_puts_selected_first_then_the_best_feasible_then_rejected_by_name() -> None:
    verdicts = (
        ClusterVerdict(cluster="a", rejected_by="TaintToleration", reason="taint"),
        ClusterVerdict(cluster="b", total_score=10.0),
        ClusterVerdict(cluster="c", total_score=90.0),
        ClusterVerdict(cluster="d", rejected_by="ClusterAffinity", reason="no match"),
        ClusterVerdict(cluster="e", total_score=50.0),
        ClusterVerdict(cluster="f", total_score=90.0),
        ClusterVerdict(cluster="g", rejected_by="ClusterAffinity", reason="no match"),
    )
    found = Verdicts(verdicts).listed({"e"}, 4)
    assert [v.cluster for v in found.verdicts] == ["e", "c", "f", "b", "a"]
    assert found == Listing(found.verdicts, 0, {"ClusterAffinity": 2})
    assert found.omitted == 2
    cut = Verdicts(verdicts).listed({"g"}, 2)
    assert [v.cluster for v in cut.verdicts] == ["g", "c", "f"]
    assert (cut.omitted_feasible, dict(cut.omitted_rejected)) == (
        2,
        {"ClusterAffinity": 1, "TaintToleration": 1},
    )


def test_readme_shows_a_bounded_table_and_says_how_much_more(
    spec: Spec, decisions: tuple[Decision, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = summary.readme(spec, decisions)
    header = next(line for line in text.splitlines() if line.startswith("| workload |"))
    shown = header.split(" | ")[1:-1]
    assert shown == [*(f"c{i:04d}" for i in range(overview.COLUMNS)), "other clusters"]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == overview.ROWS
    assert f"… and {WORKLOADS - overview.ROWS} more workloads, see `decisions/`." in text
    assert f"The first {overview.ROWS} of {WORKLOADS} workloads by key" in text
    ordered = sorted(decisions, key=lambda d: d.key.sort_key)
    for line, decision in zip(rows, ordered, strict=False):
        cells = line.strip("|").split(" | ")
        assert cells[0].strip() == f"`{decision.key}`"
        total = sum(p.replicas or 0 for p in decision.rendered())
        visible = sum(int(c) for c in cells[1 : overview.COLUMNS + 1] if c.strip().isdigit())
        other = cells[overview.COLUMNS + 1].strip()
        elsewhere = 0 if other == "—" else int(other.split(" on ")[0])
        assert visible + elsewhere == total, decision.key
    levels = [line for line in text.splitlines() if line.startswith("| c0")]
    assert {line.split(" | ")[0] for line in levels} == {f"| c{i:04d}" for i in range(CLUSTERS)}
    monkeypatch.setattr(overview, "ROWS", 10)
    cut = summary.readme(spec, decisions)
    assert f"… and {CLUSTERS - 10} more clusters, see `status/clusters/`." in cut


def test_readme_of_a_small_fleet_is_the_whole_table(spec: Spec) -> None:
    small = schedule.place(spec, diagnose=False)[:5]
    text = summary.readme(replace(spec, clusters=spec.clusters[:4]), small)
    assert "other clusters" not in text
    assert "more workloads" not in text
    assert "The first" not in text
