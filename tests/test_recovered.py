"""Recovered clusters fill like added ones: a cluster that is un-drained, un-cordoned,
un-suspended, reachable again or whose file comes back is `Filling` and receives replicas from
the hot clusters under the budget; one that stays out of service is never `Filling`.

Each test runs `pipeline.plan` over three passes of the example repo, each pass reading the
last one's `decisions/` and `status/` back from its output tree, as a reconcile pass reads
them from the output branch.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLE

from reconciler import laststate, live, load, pipeline
from reconciler.branch import paths, phases, statefiles
from reconciler.domain import Observation, Spec, durations

X = "us-east-2"
"""The cluster that goes out of service and comes back: kept cool, so filling it pays."""
HOUR = 3600.0
COOL = 'allocated: {cpu: "6", memory: 20Gi, pods: "40"}'


def cluster_file(spec_lines: str = "") -> str:
    """X's file: cool, with extra `spec:` lines (`drain: true`, …)."""
    text = (EXAMPLE / "clusters" / f"{X}.yaml").read_text()
    text = text.replace('allocated: {cpu: "60", memory: 250Gi, pods: "520"}', COOL)
    assert COOL in text
    return text.replace("spec:\n", f"spec:\n{spec_lines}", 1)


Observer = Callable[[Spec], live.Observed] | None


def observer(unreachable: bool) -> Callable[[Spec], live.Observed]:
    """Every cluster observed at its declared figures; X unreachable when asked (with its
    last observation, stale)."""

    def observe(spec: Spec) -> live.Observed:
        observations = {
            c.name: Observation(
                cluster=c.name,
                capacity=dict(c.capacity),
                used=dict(c.allocated),
                largest_node_free=dict(c.largest_node_free),
                observed_at="1970-01-01T00:00:00Z",
                stale=unreachable and c.name == X,
                unreachable_since="1970-01-01T00:30:00Z" if unreachable and c.name == X else None,
            )
            for c in spec.clusters
        }
        return live.Observed(observations=observations)

    return observe


def passes(tmp: Path, steps: list[tuple[str | None, Observer]]) -> list[pipeline.Planned]:
    """Plan one pass per step, hours apart, each with X's file as given (None: removed) and
    the observer; each pass reads the last one's state back from its output tree."""
    repo = tmp / "repo"
    shutil.copytree(EXAMPLE, repo)
    before = laststate.FIRST_PASS
    planned_passes = []
    for hour, (text, observe) in enumerate(steps, start=1):
        target = repo / "clusters" / f"{X}.yaml"
        if text is None:
            target.unlink(missing_ok=True)
        else:
            target.write_text(text)
        planned, _ = pipeline.plan(
            load.from_directory(repo), before=before, now=hour * HOUR, observer=observe
        )
        state = {
            path: data
            for path, data in planned.tree.items()
            if path.startswith(paths.STATE_FOLDERS)
        }
        before = laststate.of(state)
        planned_passes.append(planned)
    return planned_passes


def phase_of(planned: pipeline.Planned) -> str | None:
    """X's `status.phase` in the pass's output tree (None: in service, or no file)."""
    data = planned.tree.get(paths.cluster_status_path(X))
    if data is None:
        return None
    phase: str | None = yaml.safe_load(statefiles.unseal(data))["status"].get("phase")
    return phase


def moved_into(planned: pipeline.Planned, hour: int) -> list[tuple[str, int, str]]:
    """(source, replicas, reason) of this pass's moves into X."""
    at = durations.rfc3339(hour * HOUR)
    return [
        (m.source, m.replicas, m.reason.text)
        for d in planned.decisions
        for m in d.moves
        if m.target == X and m.at == at
    ]


def assert_filled(planned: pipeline.Planned, hour: int) -> None:
    """X is Filling, and replicas moved into it from hotter clusters, within the budget."""
    assert phase_of(planned) == phases.FILLING
    assert planned.still_filling == {X}
    moved = moved_into(planned, hour)
    assert moved, "the recovered cluster received nothing"
    assert all(reason.startswith(f"filling {X}: water level ") for _, _, reason in moved)
    assert X not in {source for source, _, _ in moved}
    every = sum(p.replicas or 0 for d in planned.decisions for p in d.clusters)
    budget = planned.spec.config.rebalance.max_moves.of(every)  # movable ones are fewer
    this_pass = sum(m.replicas for d in planned.decisions for m in d.moves if m.at == at(hour))
    assert sum(n for _, n, _ in moved) <= this_pass <= budget


def at(hour: int) -> str:
    return durations.rfc3339(hour * HOUR)


SPEC_FLAGS = {"drain": phases.DRAINING, "cordon": phases.CORDONED, "suspend": phases.SUSPENDED}


@pytest.mark.parametrize("flag", sorted(SPEC_FLAGS))
def test_a_cluster_back_in_service_is_filling(tmp_path: Path, flag: str) -> None:
    out = cluster_file(f"  {flag}: true\n")
    first, still, back = passes(tmp_path, [(out, None), (out, None), (cluster_file(), None)])
    for planned, hour in ((first, 1), (still, 2)):
        assert phase_of(planned) == SPEC_FLAGS[flag], f"{flag}: true is written as its phase"
        assert not moved_into(planned, hour), "out of service: never filled"
        assert X not in planned.still_filling
    assert_filled(back, 3)


def test_a_cluster_that_stays_out_of_service_is_never_filling(tmp_path: Path) -> None:
    """Drained, then cordoned and drained, then only cordoned: never in service, never
    Filling, even though its phase changes."""
    steps: list[tuple[str | None, Observer]] = [
        (cluster_file("  drain: true\n"), None),
        (cluster_file("  drain: true\n  cordon: true\n"), None),
        (cluster_file("  cordon: true\n"), None),
    ]
    planned = passes(tmp_path, steps)
    assert [phase_of(p) for p in planned] == [phases.DRAINING, phases.DRAINING, phases.CORDONED]
    assert not any(moved_into(p, hour) for hour, p in enumerate(planned, start=1))


def test_a_cluster_reachable_again_is_filling(tmp_path: Path) -> None:
    text = cluster_file()
    first, down, back = passes(
        tmp_path, [(text, observer(False)), (text, observer(True)), (text, observer(False))]
    )
    assert phase_of(first) is None
    assert phase_of(down) == phases.UNREACHABLE
    assert not moved_into(down, 2), "unreachable: the fill step skips it"
    assert_filled(back, 3)


def test_a_cluster_whose_file_comes_back_is_filling(tmp_path: Path) -> None:
    text = cluster_file()
    first, gone, back = passes(tmp_path, [(text, None), (None, None), (text, None)])
    assert phase_of(first) is None
    assert paths.cluster_status_path(X) not in gone.tree
    assert_filled(back, 3)


def test_a_phase_the_status_file_cannot_hold_is_distrusted() -> None:
    document = {"apiVersion": "x", "kind": "ClusterObservation", "status": {"phase": "Resting"}}
    data = statefiles.seal(yaml.safe_dump(document).encode())
    with pytest.raises(statefiles.StateError, match="not a cluster phase"):
        statefiles.status_of(paths.cluster_status_path(X), data)
