"""The online idle pass, on three emulated clusters: once a pass changed nothing, the next one
with the same source, output branch, settings and observations observes, surveys drift and
applies, and skips validate, schedule, render and commit, with 0 API writes. A change on a
cluster (its usage, a drifted object) or the end of the status interval makes the pass whole
again, and once settled again a cold pass at the same time finds nothing to change.

The passes run at chosen times (`pipeline.time` replaced), each with the same `pipeline.Warm`
as `dro run` keeps; a cold pass has a fresh one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from reconciler import pipeline
from reconciler.domain import durations
from tests.contract.helpers import wait_for
from tests.livefleet import NAMES, Fleet, running_fleet

START = 1_767_600_000.0  # 2026-01-05T08:00:00Z
SKIPPED = {"validate", "schedule", "render", "commit"}
IDLE = ["load", "observe", "apply"]
INVENTORY = "/api/v1/namespaces/dro-system/configmaps/dro-inventory"


class Passes:
    """Passes of one long-lived process over the fleet, at chosen times."""

    def __init__(self, fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fleet = fleet
        self.monkeypatch = monkeypatch
        self.warm = pipeline.Warm(state_dir=fleet.settings.state_dir)
        self.stages: list[str] = []

    def run(self, when: float, *, cold: bool = False) -> pipeline.PassResult:
        """One pass at `when` (warm, or with a fresh `Warm`); its stages in `stages`."""
        self.monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda: when))
        self.stages = []
        self.fleet.reset_counters()
        warm = pipeline.Warm(state_dir=self.fleet.settings.state_dir) if cold else self.warm
        return pipeline.reconcile_once(self.fleet.settings, warm=warm, on_stage=self.stages.append)

    def settle(self, start: float) -> float:
        """Passes a minute apart from `start` until one commits nothing; its time."""
        when = start
        for _ in range(6):
            if self.run(when).commit is None:
                return when
            when += 60
        raise AssertionError("the fleet did not settle in 6 passes")


@pytest.fixture
def passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Passes]:
    with running_fleet(tmp_path, rollouts=dict.fromkeys(NAMES, True)) as fleet:
        yield Passes(fleet, monkeypatch)


def test_a_pass_after_a_fixed_point_observes_and_applies_only_and_writes_nothing(
    passes: Passes,
) -> None:
    settled = passes.settle(START)
    tip = passes.fleet.repo.branch_sha("dro/rendered")
    result = passes.run(settled + 60)
    assert result.idle
    assert passes.stages == IDLE
    assert result.commit is None
    assert passes.fleet.repo.branch_sha("dro/rendered") == tip
    assert passes.fleet.writes() == 0
    assert result.applied is not None
    assert result.applied.ok
    assert [c.unchanged for c in result.applied.clusters] == [3, 3, 3]


def test_usage_changed_on_a_cluster_makes_the_pass_whole_and_exact(passes: Passes) -> None:
    """Usage is an input: more pods on `b` (not dro's) shift the DynamicWeight division off
    it, which an idle pass would never apply."""
    settled = passes.settle(START)
    before = passes.fleet.replicas()
    b = passes.fleet.apis["b"]
    b.add_pod("default", "hog-0", "node-0", requests={"cpu": "7"})
    b.add_pod("default", "hog-1", "node-1", requests={"cpu": "7"})
    changed = passes.run(settled + 60)
    assert not changed.idle
    assert set(passes.stages) >= SKIPPED, "the pass ran whole"
    listed = [r for r in passes.fleet.apis["a"].requests if r.path == "/api/v1/nodes"]
    assert len(listed) == changed.passes, "each pass lists the Nodes once: observed once"
    assert changed.commit is not None
    assert passes.fleet.writes() > 0
    after = passes.fleet.replicas()
    assert (after["b"] or 0) < (before["b"] or 0)
    again = passes.settle(settled + 120)
    cold = passes.run(again, cold=True)
    assert cold.commit is None, "a cold pass at the same time finds the same tree committed"
    assert passes.fleet.writes() == 0
    assert passes.run(again + 60).idle, "the new observations make a new fixed point"


def test_a_drifted_object_makes_the_pass_whole_and_is_healed(passes: Passes) -> None:
    settled = passes.settle(START)
    api = passes.fleet.apis["c"]
    live = passes.fleet.live("c", "ConfigMap", "web")
    live["data"] = {"greeting": "edited by hand"}
    api.put(live)
    result = passes.run(settled + 60)
    assert not result.idle
    assert "schedule" in passes.stages
    assert result.commit is not None, "the drift is recorded in status/drift/c.yaml"
    assert passes.fleet.live("c", "ConfigMap", "web")["data"] == {"greeting": "hello"}


def test_the_status_interval_ends_the_fixed_point(passes: Passes) -> None:
    """Status changes alone wait for `--status-interval` (600 s): the pass at which the last
    committed observation is that old refreshes it, so no idle pass stands past it."""
    settled = passes.settle(START)
    steady = passes.warm.steady
    assert steady is not None
    observed = [durations.epoch(s["observedAt"]) for s in steady.statuses.values()]
    due = max(observed) + passes.fleet.settings.status_interval
    assert steady.until == pytest.approx(due, abs=0.01)
    assert settled < due
    assert passes.run(due - 1).idle
    refreshed = passes.run(due + 1)
    assert not refreshed.idle
    assert refreshed.commit is not None, "the status files are refreshed"
    assert passes.fleet.writes() == 0


def test_an_idle_pass_reads_each_kind_once_per_cluster_and_repeats_no_discovery(
    passes: Passes,
) -> None:
    """The connections are kept from one pass to the next (`live.pool`), and observe, the
    drift survey and apply share one LIST per kind and one inventory read per cluster."""
    settled = passes.settle(START)
    assert passes.run(settled + 60).idle
    result = passes.run(settled + 120)
    assert result.idle
    assert passes.fleet.writes() == 0
    for name, api in passes.fleet.apis.items():
        paths = [r.path for r in api.requests]
        assert {r.method for r in api.requests} == {"GET"}, name
        assert not [p for p in paths if p in ("/api", "/apis", "/version")], "no discovery"
        assert len(paths) == len(set(paths)), f"{name}: a path read twice: {sorted(paths)}"
        assert paths.count("/api/v1/namespaces/dro-system/configmaps/dro-inventory") == 1
        assert paths.count("/apis/apps/v1/deployments") == 1, name


@pytest.fixture
def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Passes]:
    """`passes` of a process that keeps its clusters' lists by watches (`--watch-clusters`)."""
    with running_fleet(tmp_path, rollouts=dict.fromkeys(NAMES, True)) as fleet:
        fleet.settings = replace(fleet.settings, watch_clusters=True)
        for api in fleet.apis.values():
            api.bookmark_interval = 0.05
        yield Passes(fleet, monkeypatch)


def test_watching_an_idle_pass_reads_only_the_inventory(watched: Passes) -> None:
    """Once the watches have caught up with the settling passes' writes (a bookmark), an
    idle pass lists nothing: each cluster is asked for its inventory alone."""
    settled = watched.settle(START)

    def inventory_only() -> bool:
        result = watched.run(settled + 60)
        assert result.idle
        assert watched.fleet.writes() == 0
        return all(
            [r.path for r in api.requests if "watch" not in r.query] == [INVENTORY]
            for api in watched.fleet.apis.values()
        )

    wait_for("an idle pass that lists nothing", inventory_only)


def test_watching_a_usage_change_is_seen_once_delivered_and_gives_the_same_tree(
    watched: Passes,
) -> None:
    settled = watched.settle(START)
    before = watched.fleet.replicas()
    b = watched.fleet.apis["b"]
    b.add_pod("default", "hog-0", "node-0", requests={"cpu": "7"})
    b.add_pod("default", "hog-1", "node-1", requests={"cpu": "7"})
    changed = wait_for("the pods are seen", lambda: (r := watched.run(settled + 60)).commit and r)
    assert set(watched.stages) >= SKIPPED, "the pass ran whole"
    assert (watched.fleet.replicas()["b"] or 0) < (before["b"] or 0)
    assert changed.commit is not None
    again = watched.settle(settled + 120)
    cold = watched.run(again, cold=True)
    assert cold.commit is None, "a cold pass at the same time finds the same tree committed"
