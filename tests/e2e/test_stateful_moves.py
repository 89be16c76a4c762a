"""A StatefulSet moved off a drained real cluster, walked through every phase of its move.

The real StatefulSet controller creates the pods and their claims, the real PersistentVolume
controller binds the claims to the volumes a test adds, the real scheduler places the pods
and kwok runs them; the data-sync hook is a real Job whose pod kwok completes. Each phase is
held at its gate first, then let through:

- Provisioning: the target has no volume, so the new copy's claims stay Pending and its pods
  Unschedulable; once volumes are added, its rollout completes.
- Syncing: the hook Job's pod selects Nodes by a label none has; once they have it, the Job
  completes.
- CutOver: the old copy is scaled to zero (its claims kept); Done once its controller reports
  it at zero, and the next pass prunes it and its config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.pipeline import PassResult
from tests.e2e.controlplane import Fleet
from tests.e2e.movefleet import (
    CLUSTERS,
    LABEL,
    NAMESPACE,
    MoveFleet,
    cluster_file,
    divided,
    move_fleet,
)
from tests.e2e.waiting import eventually

DB = f"""apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: {NAMESPACE}, labels: {{app: db}}}}
spec:
  replicas: 2
  serviceName: db
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers:
        - name: db
          image: "db:1"
          envFrom: [{{configMapRef: {{name: db-config}}}}]
          resources: {{requests: {{cpu: 500m}}}}
  volumeClaimTemplates:
    - metadata: {{name: data}}
      spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: db-config, namespace: {NAMESPACE}}}
data: {{MODE: primary}}
"""
HOOK = f"""apiVersion: batch/v1
kind: Job
metadata:
  name: db-sync
  namespace: {NAMESPACE}
  annotations: {{multicluster.io/data-sync-for: StatefulSet/db}}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {{{LABEL}: sync}}
      containers: [{{name: sync, image: "db-sync:1"}}]
"""
FILES = {
    "workloads/db.yaml": DB,
    "workloads/db-sync.yaml": HOOK,
    "policies/databases.yaml": divided("databases", "StatefulSet"),
}
DECISION = f"decisions/{NAMESPACE}/statefulset-db.yaml"
JOB_PODS = "batch.kubernetes.io/job-name=db-sync"


def phase(moves: MoveFleet) -> str | None:
    """The committed phase of the move, or None when no move is recorded."""
    retiring = moves.committed(DECISION)["status"].get("retiring") or []
    return str(retiring[0]["phase"]) if retiring else None


def moved(result: PassResult) -> str:
    """The one cluster the database's decision places it on."""
    (decision,) = [d for d in result.planned.decisions if d.key.name == "db"]
    (placed,) = decision.clusters
    return placed.cluster


def env_of(job: dict[str, Any]) -> dict[str, str]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container.get("env") or ()}


def complete(moves: MoveFleet, cluster: str) -> bool | None:
    """Whether the hook Job on a cluster is Complete (None while it is not)."""
    job = moves.live(cluster, "Job", "db-sync")
    conditions = (job or {}).get("status", {}).get("conditions") or ()
    done = any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)
    return True if done else None


def claims(moves: MoveFleet, cluster: str) -> list[str]:
    """The names of the claims in the test namespace of a cluster, sorted."""
    return sorted(c["metadata"]["name"] for c in moves.listed(cluster, "PersistentVolumeClaim"))


def settle(moves: MoveFleet) -> tuple[str, str]:
    """Place the database, give its claims volumes, observe its rollout: (old, new) cluster."""
    first = moves.reconcile()
    assert first.applied is not None
    assert first.applied.ok, first.applied
    (old,) = [c for c, n in moves.replicas("StatefulSet", "db").items() if n]
    (new,) = set(CLUSTERS) - {old}
    moves.add_volumes(old, 2)
    moves.wait_healthy(old, "StatefulSet", "db")
    assert claims(moves, old) == ["data-db-0", "data-db-1"]
    moves.reconcile()
    assert phase(moves) is None
    assert all(moves.live(c, "Job", "db-sync") is None for c in CLUSTERS)  # no move, no hook
    return old, new


def provision(moves: MoveFleet, old: str, new: str) -> None:
    """Drain the old cluster: the new copy waits for volumes, then rolls out."""
    moves.repo.write({f"clusters/{old}.yaml": cluster_file(old, "  drain: true\n")})
    moves.repo.commit(f"drain {old}")
    provisioning = moves.reconcile()
    assert moved(provisioning) == new
    assert phase(moves) == "Provisioning"
    assert moves.replicas("StatefulSet", "db") == {old: 2, new: 2}
    assert moves.live(new, "ConfigMap", "db-config") is not None  # its config went along
    eventually(
        f"the new copy's first pod Unschedulable on {new} (its claim has no volume)",
        lambda: moves.unschedulable(new, "app=db") or None,
    )
    moves.reconcile()
    assert phase(moves) == "Provisioning"  # the new copy is not ready
    moves.add_volumes(new, 2)
    moves.wait_healthy(new, "StatefulSet", "db")


def sync(moves: MoveFleet, old: str, new: str) -> None:
    """The hook Job runs on the new cluster; its pod waits for a Node, then completes."""
    syncing = moves.reconcile()
    assert syncing.commit is not None
    assert phase(moves) == "Syncing"
    job = moves.live(new, "Job", "db-sync")
    assert env_of(job) == {
        "DRO_MOVE_FROM": old,
        "DRO_MOVE_TO": new,
        "DRO_MOVE_WORKLOAD": f"{NAMESPACE}/StatefulSet.apps/db",
    }
    assert moves.live(old, "Job", "db-sync") is None
    assert moves.replicas("StatefulSet", "db")[old] == 2  # the old copy serves meanwhile
    eventually(
        f"the hook's pod Unschedulable on {new}",
        lambda: moves.unschedulable(new, JOB_PODS) or None,
    )
    held = moves.reconcile()
    assert held.applied is not None
    assert held.applied.ok, held.applied  # the live Job, defaulted by the server, re-applies
    assert phase(moves) == "Syncing"  # the hook has not completed
    moves.label_nodes(new, "sync")
    eventually(f"the hook Job Complete on {new}", lambda: complete(moves, new))


def terminating(moves: MoveFleet, cluster: str) -> bool | None:
    """True once the StatefulSet's controller observed its scale-down and a pod terminates."""
    sts = moves.live(cluster, "StatefulSet", "db")
    observed = sts["status"].get("observedGeneration", 0) >= sts["metadata"]["generation"]
    pods = moves.listed(cluster, "Pod", "app=db")
    return True if observed and any("deletionTimestamp" in p["metadata"] for p in pods) else None


def cut_over(moves: MoveFleet, old: str, new: str) -> None:
    """The old copy is scaled to zero and kept until its last pod has terminated."""
    moves.hold_pods(old, "app=db", hold=True)  # its pods shut down slowly
    cutting = moves.reconcile()
    assert cutting.commit is not None
    assert phase(moves) == "CutOver"
    assert moves.replicas("StatefulSet", "db") == {old: 0, new: 2}  # scaled down, kept
    assert moves.live(old, "ConfigMap", "db-config") is not None
    assert moves.live(new, "Job", "db-sync") is None  # the hook is gone once it served
    eventually(f"the old copy's pods terminating on {old}", lambda: terminating(moves, old))
    moves.reconcile()
    assert phase(moves) == "CutOver"  # a pod of the old copy still runs its shutdown
    assert moves.live(old, "StatefulSet", "db") is not None
    moves.hold_pods(old, "app=db", hold=False)
    eventually(
        "the old copy's pods gone", lambda: None if moves.listed(old, "Pod", "app=db") else True
    )
    moves.wait_healthy(old, "StatefulSet", "db")  # its controller reports it at zero


def test_a_statefulset_move_walks_every_phase_on_real_clusters(
    fleet: Fleet, tmp_path: Path
) -> None:
    with move_fleet(fleet, tmp_path, FILES) as moves:
        old, new = settle(moves)
        provision(moves, old, new)
        sync(moves, old, new)
        cut_over(moves, old, new)
        done = moves.reconcile()
        assert done.commit is not None
        assert phase(moves) == "Done"
        assert moves.replicas("StatefulSet", "db") == {old: None, new: 2}
        assert moves.live(old, "ConfigMap", "db-config") is None  # only the old copy needed it
        assert claims(moves, old) == ["data-db-0", "data-db-1"]  # the claims outlive it (Retain)
        assert not moves.listed(new, "Pod", JOB_PODS)  # the hook's pod went with its Job

        moves.reconcile()
        status = moves.committed(DECISION)["status"]
        assert "retiring" not in status
        assert status["clusters"] == [{"name": new, "replicas": 2}]
        assert moves.healthy(new, "StatefulSet", "db")
