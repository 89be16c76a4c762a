"""The disruption budget on real clusters: under `maxUnavailableClusters: 1`, a drain waits
while the workload's copies on another cluster are not Healthy, as the real deployment
controller reports it, and goes on once they are.

A pod of the Deployment on the target is deleted while the target's Nodes lack the label its
pods select: its replacement stays Pending, so the Deployment there is Progressing and the
target is out of service. Putting the label back lets it recover.
"""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from tests.e2e.controlplane import Fleet
from tests.e2e.movefleet import NAMESPACE, move_fleet
from tests.e2e.test_moves import FILES, SOURCE, TARGET, drain, settle, web
from tests.e2e.waiting import eventually

BUDGET = "    disruption: {maxUnavailableClusters: 1}\n"
BUDGETED = {**FILES, "policies/web.yaml": FILES["policies/web.yaml"] + BUDGET}


def test_a_drain_waits_while_another_cluster_is_out_of_service(
    fleet: Fleet, tmp_path: Path
) -> None:
    with move_fleet(fleet, tmp_path, BUDGETED) as moves:
        placed = settle(moves)
        moves.label_nodes(TARGET, None)
        core = client.CoreV1Api(moves.clients[TARGET])
        (pod, *_) = core.list_namespaced_pod(NAMESPACE, label_selector="app=web").items
        core.delete_namespaced_pod(pod.metadata.name, NAMESPACE)
        eventually(
            f"web Progressing on {TARGET}",
            lambda: True if not moves.healthy(TARGET, "Deployment", "web") else None,
        )
        drain(moves, SOURCE)

        held = web(moves.reconcile())
        assert held.moves == (), "the target is out of service: the budget of 1 is spent"
        assert held.disruption is not None
        assert held.disruption.entering == (TARGET,)
        assert [(w.cluster, w.replicas) for w in held.disruption.waiting] == [
            (SOURCE, placed[SOURCE])
        ]
        assert moves.replicas("Deployment", "web") == placed, "nothing changed on the clusters"

        moves.label_nodes(TARGET, "pool")
        moves.wait_healthy(TARGET, "Deployment", "web")
        moved = web(moves.reconcile())
        assert [(m.source, m.target) for m in moved.moves] == [(SOURCE, TARGET)]
        assert moved.disruption is not None
        assert (moved.disruption.leaving, moved.disruption.entering) == ((SOURCE,), (TARGET,))
        assert moved.disruption.waiting == ()
