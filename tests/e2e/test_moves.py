"""Make-before-break on real clusters: a Deployment's replicas move off a drained cluster, and
the old copies stay until the new ones' rollout is complete, as the real deployment controller
reports it (kwok runs the pods the real scheduler places).

The pods carry a nodeSelector on a label every Node has at first. Taking the label off the
target's Nodes leaves the new pods Pending as Unschedulable there: the new Deployment cannot
become available, and the old copies stay. Putting it back lets the rollout finish, and the
next pass retires them.
"""

from __future__ import annotations

from pathlib import Path

from reconciler.domain import Decision
from reconciler.pipeline import PassResult
from tests.e2e.controlplane import Fleet
from tests.e2e.movefleet import LABEL, NAMESPACE, MoveFleet, cluster_file, divided, move_fleet
from tests.e2e.waiting import eventually

SOURCE, TARGET = "e2e-b", "e2e-a"
REPLICAS = 4
WEB = f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {NAMESPACE}, labels: {{app: web}}}}
spec:
  replicas: {REPLICAS}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      nodeSelector: {{{LABEL}: pool}}
      containers:
        - {{name: web, image: "web:1", resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}
"""
FILES = {"workloads/web.yaml": WEB, "policies/web.yaml": divided("web", "Deployment")}
HEALTH = f"status/workloads/{NAMESPACE}/deployment-web.yaml"


def web(result: PassResult) -> Decision:
    """The Deployment's decision in a pass's result."""
    return next(
        d for d in result.planned.decisions if (d.key.kind, d.key.name) == ("Deployment", "web")
    )


def running(moves: MoveFleet, cluster: str) -> int:
    """The Deployment's pods that kwok runs on a cluster."""
    pods = moves.listed(cluster, "Pod", "app=web")
    return sum(1 for pod in pods if pod.get("status", {}).get("phase") == "Running")


def settle(moves: MoveFleet) -> dict[str, int | None]:
    """Place the Deployment over both clusters, wait for both rollouts, observe them Healthy."""
    for cluster in moves.clients:
        moves.label_nodes(cluster, "pool")
    first = moves.reconcile()
    assert first.applied is not None
    assert first.applied.ok, first.applied
    placed = moves.replicas("Deployment", "web")
    source, target = placed[SOURCE] or 0, placed[TARGET] or 0
    assert min(source, target) > 0, placed  # DynamicWeight divides over both
    assert source + target == REPLICAS
    for cluster in moves.clients:
        moves.wait_healthy(cluster, "Deployment", "web")
    moves.reconcile()  # observes both rollouts
    assert moves.committed(HEALTH)["status"]["health"] == "Healthy"
    return placed


def drain(moves: MoveFleet, cluster: str) -> None:
    moves.repo.write({f"clusters/{cluster}.yaml": cluster_file(cluster, "  drain: true\n")})
    moves.repo.commit(f"drain {cluster}")


def test_the_old_copies_stay_until_the_real_rollout_of_the_new_ones_completes(
    fleet: Fleet, tmp_path: Path
) -> None:
    with move_fleet(fleet, tmp_path, FILES) as moves:
        placed = settle(moves)
        kept = placed[SOURCE]
        moves.label_nodes(TARGET, None)  # the target's new pods find no Node
        drain(moves, SOURCE)

        moved = moves.reconcile()
        decision = web(moved)
        assert [(p.cluster, p.replicas) for p in decision.clusters] == [(TARGET, REPLICAS)]
        assert [(p.cluster, p.replicas) for p in decision.retiring] == [(SOURCE, kept)]
        assert moves.replicas("Deployment", "web") == {TARGET: REPLICAS, SOURCE: kept}
        added = REPLICAS - (placed[TARGET] or 0)
        eventually(
            f"{added} new pods Unschedulable on {TARGET}",
            lambda: True if len(moves.unschedulable(TARGET, "app=web")) == added else None,
        )

        waiting = moves.reconcile()
        assert [(p.cluster, p.replicas) for p in web(waiting).retiring] == [(SOURCE, kept)]
        assert moves.replicas("Deployment", "web")[SOURCE] == kept
        assert running(moves, SOURCE) == kept  # the old copies still serve
        health = moves.committed(HEALTH)["status"]
        assert health["health"] == "Progressing"
        assert health["message"].startswith(TARGET)

        moves.label_nodes(TARGET, "pool")  # now the new pods can run
        moves.wait_healthy(TARGET, "Deployment", "web")
        retired = moves.reconcile()
        assert not web(retired).retiring
        assert moves.replicas("Deployment", "web") == {TARGET: REPLICAS, SOURCE: None}
        eventually(
            f"the old pods gone from {SOURCE}",
            lambda: True if not moves.listed(SOURCE, "Pod", "app=web") else None,
        )
        assert running(moves, TARGET) == REPLICAS


def test_a_move_completes_in_one_reconcile_when_the_real_rollout_finishes_in_time(
    fleet: Fleet, tmp_path: Path
) -> None:
    with move_fleet(fleet, tmp_path, FILES) as moves:
        settle(moves)
        drain(moves, SOURCE)
        result = moves.reconcile(move_wait=90.0)
        assert result.passes == 2  # the first moved, the second retired the old copies
        assert not web(result).retiring
        assert moves.replicas("Deployment", "web") == {TARGET: REPLICAS, SOURCE: None}
