"""A drain and a rollout of the same workload under `maxUnavailableClusters: 1`, through
`reconcile --once` against four API emulators with git commits between passes: they share the
budget, so no pass starts the new template on a cluster while the drain's move is in flight,
and at most one cluster starts it per `reconcile --once` (which may run a follow-up pass)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler import yamlio
from tests.rolloutfleet import NAMES, cluster_file, rollout_fleet, web

DIVIDED = """apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec:
  defaultPlacement:
    targetClusters: [{selectorType: label, values: ["env=prod"]}]
    replicaScheduling: {type: Divided, division: DynamicWeight}
  rollout: {maxClusters: 2, soak: 0s, healthTimeout: 1h}
  disruption: {maxUnavailableClusters: 1}
"""


def _decision(show: Any) -> dict[str, Any]:
    path = "decisions/shop/deployment-web.yaml"
    (doc,) = yamlio.parse_documents(path, show(path).encode())
    return dict(doc.body)


@pytest.mark.parametrize("budget", [1, None])
def test_a_drain_and_a_rollout_share_the_disruption_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 2}") as fleet:
        config = (
            DIVIDED
            if budget
            else DIVIDED.replace("  disruption: {maxUnavailableClusters: 1}\n", "")
        )
        fleet.change(
            {"dro.yaml": config, "workloads/web.yaml": web("web:1", replicas=8)}, "divided"
        )
        fleet.reconcile(0)
        drained = cluster_file(NAMES[0]).replace("spec:\n", "spec:\n  drain: true\n")
        fleet.change(
            {f"clusters/{NAMES[0]}.yaml": drained, "workloads/web.yaml": web("web:2", replicas=8)},
            "drain eu-west-1 and ship web:2",
        )
        started_while_moving, most_started, moving, before = 0, 0, 0, set[str]()
        for step in range(1, 12):
            fleet.reconcile(10.0 * step)
            decision = _decision(fleet.show)
            status = decision["status"]
            rollout = status.get("rollout", {})
            new = {
                c["name"]
                for c in rollout.get("clusters", [])
                if c.get("revision") == rollout.get("revision")
            }
            started = new - before
            most_started = max(most_started, len(started))
            moving += 1 if status.get("retiring") else 0
            if status.get("retiring") and started:
                started_while_moving += 1
            before = new
            if rollout.get("phase") == "Complete" and not status.get("retiring"):
                break
        assert rollout.get("phase") == "Complete"
        live = fleet.live_images()
        assert all(image == "web:2" for name, image in live.items() if name != NAMES[0])
        if budget:
            assert moving > 0  # the drain's move was in flight on some pass
            assert started_while_moving == 0
            assert most_started == 1
        else:  # without a budget a wave of two starts at once (and a follow-up pass of the
            # same reconcile, once the first wave is Healthy, starts the next)
            assert most_started >= 2
