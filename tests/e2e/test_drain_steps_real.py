"""Two real clusters drained at once under `maxUnavailableClusters: 1`, for a Duplicated
workload (re-balancing does not move it): dro leaves one cluster per step, and the next only
once the real API server no longer has the workload on the first (the removal observed done).
Every commit of the output branch takes it off one cluster at most; the cluster kept meanwhile
is listed as waiting, with the budget's reason.

The emulator versions are tests/test_disruption_steps_live.py and tests/test_disruption_steps.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes.client import ApiClient

from tests.conftest import git
from tests.e2e.controlplane import Fleet
from tests.e2e.reconcilefleet import DRO, DroFleet, cluster_file, dro_on_fleet
from tests.e2e.waiting import eventually

DRAINED = ("e2e-a", "e2e-b")
DECISION = "decisions/shop/deployment-web.yaml"


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def commits(dro: DroFleet) -> list[tuple[set[str], dict[str, object]]]:
    """Each commit of the output branch, oldest first: the clusters that render shop/web, and
    its decision's status."""
    bare = dro.repo.bare
    found = []
    for commit in git(bare, "rev-list", "--reverse", dro.settings.output_branch).split():
        files = git(bare, "ls-tree", "-r", "--name-only", commit).split()
        on = {
            f.split("/")[1]
            for f in files
            if f.startswith("clusters/") and f.endswith("/shop/deployment-web.yaml")
        }
        decision = yaml.safe_load(git(bare, "show", f"{commit}:{DECISION}"))
        found.append((on, dict(decision["status"])))
    return found


def test_a_duplicated_workload_leaves_two_drained_clusters_one_at_a_time(dro: DroFleet) -> None:
    budget = DRO.replace("  rebalance:", "  disruption: {maxUnavailableClusters: 1}\n  rebalance:")
    dro.repo.write({"dro.yaml": budget})
    dro.repo.commit("a disruption budget of one cluster")
    first = dro.reconcile()
    assert first.applied is not None
    assert first.applied.ok
    everywhere = set(dro.clients)
    assert {c for c in everywhere if dro.deployment(c, "web")} == everywhere
    drained = {
        f"clusters/{name}.yaml": cluster_file(name).replace("spec:\n", "spec:\n  drain: true\n")
        for name in DRAINED
    }
    dro.repo.write(drained)
    dro.repo.commit("drain e2e-a and e2e-b")

    def drained_off() -> bool | None:
        dro.reconcile()
        on = {c for c in everywhere if dro.deployment(c, "web") is not None}
        return True if on == everywhere - set(DRAINED) else None

    eventually("web off both drained clusters", drained_off, timeout=120)
    history = commits(dro)
    assert history[-1][0] == everywhere - set(DRAINED)
    removed = [len(old - new) for (old, _), (new, _) in itertools.pairwise(history)]
    assert max(removed) == 1, "one cluster per commit"
    waiting = [
        w
        for _, status in history
        for w in (status.get("disruption") or {}).get("waiting", [])  # type: ignore[attr-defined]
    ]
    assert {w["cluster"] for w in waiting} == {DRAINED[1]}
    assert waiting[0]["reason"] == (
        f"disruption budget: 1 cluster in flight of 1 allowed (leaving {DRAINED[0]})"
    )
