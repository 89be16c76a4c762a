"""Two clusters drained at once under `maxUnavailableClusters: 1`, through `reconcile --once`
against four API emulators with git commits between passes, for workloads that re-balancing
does not move (Duplicated and StaticWeight under dro's placement, and Duplicated under a Karmada
PropagationPolicy): no
commit of the output branch takes the workload off more than one cluster, and the cluster
kept says why; without a budget one commit takes it off both."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from reconciler import yamlio
from tests.conftest import git
from tests.rolloutfleet import NAMES, RolloutFleet, cluster_file, rollout_fleet, web

BUDGET = "  disruption: {maxUnavailableClusters: 1}\n"
DRO = """apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec:
  defaultPlacement:
    targetClusters: [{selectorType: label, values: ["env=prod"]}]
    replicaScheduling: {type: Duplicated}
"""
KARMADA = f"""apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: web, namespace: shop}}
spec:
  resourceSelectors:
    - {{apiVersion: apps/v1, kind: Deployment, name: web}}
  placement:
    clusterAffinity:
      clusterNames: [{", ".join(NAMES)}]
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
"""
DECISION = "decisions/shop/deployment-web.yaml"


def history(fleet: RolloutFleet) -> list[tuple[set[str], dict[str, Any]]]:
    """Each commit of dro/rendered, oldest first: the clusters that render shop/web, and the
    decision's status."""
    found = []
    for commit in git(fleet.repo.bare, "rev-list", "--reverse", "dro/rendered").split():
        files = git(fleet.repo.bare, "ls-tree", "-r", "--name-only", commit).split()
        on = {
            f.split("/")[1]
            for f in files
            if f.startswith("clusters/") and f.endswith("/shop/deployment-web.yaml")
        }
        text = git(fleet.repo.bare, "show", f"{commit}:{DECISION}")
        (doc,) = yamlio.parse_documents(DECISION, text.encode())
        found.append((on, dict(doc.body["status"])))
    return found


@pytest.mark.parametrize(
    ("kind", "budget"), [("dro", True), ("dro", False), ("static", True), ("karmada", True)]
)
def test_two_drained_clusters_leave_one_commit_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, budget: bool
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 4}") as fleet:
        files = {"dro.yaml": DRO + (BUDGET if budget else "")}
        if kind == "karmada":
            files["policies/web.yaml"] = KARMADA
        if kind == "static":  # eight replicas divided evenly: two per cluster
            files["dro.yaml"] = files["dro.yaml"].replace(
                "{type: Duplicated}", "{type: Divided, division: StaticWeight}"
            )
            files["workloads/web.yaml"] = web("web:1", replicas=8)
        fleet.change(files, "the budget")
        fleet.reconcile(0)
        drained = {
            f"clusters/{name}.yaml": cluster_file(name).replace("spec:\n", "spec:\n  drain: true\n")
            for name in NAMES[:2]
        }
        fleet.change(drained, "drain eu-west-1 and eu-west-2")
        step = 0
        while any(fleet.live_images()[name] for name in NAMES[:2]):
            step += 1
            assert step < 10, "the drain never finishes"
            fleet.reconcile(10.0 * step)
        commits = history(fleet)
        assert commits[0][0] == set(NAMES)
        assert commits[-1][0] == set(NAMES[2:])
        removed = [len(old - new) for (old, _), (new, _) in itertools.pairwise(commits)]
        if not budget:
            assert max(removed) == 2, "without a budget both clusters go in one commit"
            return
        assert max(removed) == 1, "one cluster per commit"
        kept = [w for _, status in commits for w in status.get("disruption", {}).get("waiting", [])]
        assert kept, "the kept cluster is recorded as waiting"
        assert {w["cluster"] for w in kept} == {NAMES[1]}
        assert kept[0]["reason"].startswith("disruption budget: ")
        assert f"in flight of 1 allowed (leaving {NAMES[0]}" in kept[0]["reason"]
        live = fleet.live_images()
        assert [name for name in NAMES if live[name]] == list(NAMES[2:])
