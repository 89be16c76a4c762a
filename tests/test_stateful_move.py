"""A StatefulSet moved off a drained cluster, walked through every phase of its move.

Each pass is a real `reconcile --once`: the source and output branch are git repositories,
the three clusters are API emulators on 127.0.0.1 reached through the official client. The
phases are read back from the decision committed on the output branch after each pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import load
from reconciler.pipeline import PassResult
from tests.livefleet import Fleet, cluster_file, running_fleet

DB = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, labels: {app: db}}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: "db:1"
          envFrom: [{configMapRef: {name: db-config}}]
          resources: {requests: {cpu: "1"}}
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: db-config, namespace: shop}
data: {MODE: primary}
"""
HOOK = """apiVersion: batch/v1
kind: Job
metadata:
  name: db-sync
  namespace: shop
  annotations: {multicluster.io/data-sync-for: StatefulSet/db}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: sync, image: "db-sync:1"}]
"""
POLICY = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: databases}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: StatefulSet, namespace: shop}
  targetClusters: [{selectorType: label, values: ["env=prod"]}]
  placement:
    replicaScheduling: {type: Divided, division: DynamicWeight}
"""
DECISION = "decisions/shop/statefulset-db.yaml"


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with running_fleet(tmp_path) as running:
        running.repo.write({"workloads/db.yaml": DB, "policies/databases.yaml": POLICY})
        running.repo.commit("a database")
        yield running


def committed_status(fleet: Fleet) -> dict[str, Any]:
    """The database's decision on the output branch's tip (its `status`)."""
    settings = fleet.settings
    state = load.previous_state(settings.repo or "", settings.output_branch, settings.state_dir)
    status = yaml.safe_load(state[DECISION])["status"]
    assert isinstance(status, dict)
    return status


def phase(fleet: Fleet) -> str | None:
    """The committed phase of the move, or None when no move is recorded."""
    retiring = committed_status(fleet).get("retiring") or []
    return retiring[0]["phase"] if retiring else None


def live(fleet: Fleet, cluster: str, plural: str, name: str) -> Any:
    group = {"statefulsets": "apps", "jobs": "batch", "configmaps": ""}[plural]
    return fleet.apis[cluster].get(group, "v1", plural, "shop", name)


def replicas(fleet: Fleet) -> dict[str, int | None]:
    """Live `spec.replicas` of the StatefulSet per cluster (None where it is absent)."""
    found = {c: live(fleet, c, "statefulsets", "db") for c in fleet.apis}
    return {c: obj["spec"]["replicas"] if obj else None for c, obj in found.items()}


def roll_out(fleet: Fleet, cluster: str) -> None:
    """Complete the StatefulSet's rollout on one cluster, at whatever size it has."""
    obj = live(fleet, cluster, "statefulsets", "db")
    count = obj["spec"]["replicas"]
    status = {
        "observedGeneration": obj["metadata"]["generation"],
        "replicas": count,
        "readyReplicas": count,
        "updatedReplicas": count,
        "currentRevision": "r1",
        "updateRevision": "r1",
    }
    fleet.apis[cluster].set_status("apps", "v1", "statefulsets", "shop", "db", status)


def drain(fleet: Fleet, cluster: str) -> None:
    fleet.repo.write({f"clusters/{cluster}.yaml": cluster_file(cluster, "  drain: true\n")})
    fleet.repo.commit(f"drain {cluster}")


def settle(fleet: Fleet) -> str:
    """Place the database, complete its rollout, and return its cluster."""
    first = fleet.reconcile()
    (home,) = [c for c, n in replicas(fleet).items() if n]
    assert first.commit is not None
    roll_out(fleet, home)
    fleet.reconcile()
    assert phase(fleet) is None
    return home


def env_of(job: dict[str, Any]) -> dict[str, str]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


def moved(result: PassResult) -> str:
    """The cluster the database's decision places it on."""
    (decision,) = [d for d in result.planned.decisions if d.key.name == "db"]
    (placed,) = decision.clusters
    return placed.cluster


def test_a_statefulset_move_walks_every_phase_with_a_sync_hook(fleet: Fleet) -> None:
    fleet.repo.write({"workloads/db-sync.yaml": HOOK})
    fleet.repo.commit("a data-sync hook")
    old = settle(fleet)
    assert all(live(fleet, c, "jobs", "db-sync") is None for c in fleet.apis)  # no move, no hook

    drain(fleet, old)
    provisioning = fleet.reconcile()
    new = moved(provisioning)
    assert new != old
    assert provisioning.commit is not None
    assert phase(fleet) == "Provisioning"
    assert replicas(fleet) == {old: 2, new: 2, ({"a", "b", "c"} - {old, new}).pop(): None}
    assert live(fleet, new, "configmaps", "db-config") is not None  # its config went along

    recorded = committed_status(fleet)
    fleet.reconcile()  # the new copy is not ready yet
    assert committed_status(fleet) == recorded

    roll_out(fleet, new)
    syncing = fleet.reconcile()
    assert syncing.commit is not None
    assert phase(fleet) == "Syncing"
    job = live(fleet, new, "jobs", "db-sync")
    assert env_of(job) == {
        "DRO_MOVE_FROM": old,
        "DRO_MOVE_TO": new,
        "DRO_MOVE_WORKLOAD": "shop/StatefulSet.apps/db",
    }
    assert replicas(fleet)[old] == 2  # the old copy still serves while the data syncs

    fleet.reconcile()  # the hook has not completed
    assert phase(fleet) == "Syncing"

    complete = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    fleet.apis[new].set_status("batch", "v1", "jobs", "shop", "db-sync", complete)
    cut_over = fleet.reconcile()
    assert cut_over.commit is not None
    assert phase(fleet) == "CutOver"
    assert replicas(fleet)[old] == 0  # scaled down, not deleted: its volumes stay
    assert live(fleet, old, "configmaps", "db-config") is not None
    assert live(fleet, new, "jobs", "db-sync") is None  # the hook is gone once it served

    fleet.reconcile()  # the old copy has not been seen scaled down yet
    assert phase(fleet) == "CutOver"

    roll_out(fleet, old)
    done = fleet.reconcile()
    assert done.commit is not None
    assert phase(fleet) == "Done"
    assert replicas(fleet)[old] is None  # removed, with the config only it needed
    assert live(fleet, old, "configmaps", "db-config") is None
    assert replicas(fleet)[new] == 2

    fleet.reconcile()
    status = committed_status(fleet)
    assert "retiring" not in status
    assert status["clusters"] == [{"name": new, "replicas": 2}]


def test_without_a_hook_the_move_waits_for_the_data_synced_annotation(fleet: Fleet) -> None:
    old = settle(fleet)
    drain(fleet, old)
    new = moved(fleet.reconcile())
    roll_out(fleet, new)
    fleet.reconcile()
    assert phase(fleet) == "Syncing"
    fleet.reconcile()
    assert phase(fleet) == "Syncing"  # volumes to carry, and nothing says they are in sync
    obj = live(fleet, new, "statefulsets", "db")
    obj["metadata"].setdefault("annotations", {})["multicluster.io/data-synced"] = "true"
    fleet.apis[new].put(obj)
    fleet.reconcile()
    assert phase(fleet) == "CutOver"
    assert replicas(fleet)[old] == 0


def test_lifting_the_drain_mid_move_does_not_bounce_it_back(fleet: Fleet) -> None:
    old = settle(fleet)
    drain(fleet, old)
    new = moved(fleet.reconcile())
    assert phase(fleet) == "Provisioning"
    fleet.repo.write({f"clusters/{old}.yaml": cluster_file(old)})
    fleet.repo.commit(f"undrain {old}")
    back = fleet.reconcile()
    # the workload stands on the new cluster: the move goes on, it is not bounced back
    assert moved(back) == new
    assert phase(fleet) == "Provisioning"
    assert replicas(fleet)[old] == 2
