"""A stateful move in a sharded `dro run`: each step of it follows the last as soon as the
member that applied it sees its copies ready, not at the leader's next interval (an hour
here). Two `dro run --shards auto` replicas, four emulated clusters that complete every
rollout at once (`tests/shardfleet.py`)."""

from __future__ import annotations

from pathlib import Path

from tests.livefleet import cluster_file
from tests.service import wait_for
from tests.shardfleet import Fleet, running
from tests.test_stateful_move import POLICY

DB = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, labels: {app: db}}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "db:1", resources: {requests: {cpu: "1"}}}]
"""
SECRET = b"sharded-moves"
READY = "the copies of a move are ready for its next step"


def homes(fleet: Fleet) -> dict[str, int]:
    """The clusters running the database, with their live `spec.replicas`."""
    found = {
        c: api.get("apps", "v1", "statefulsets", "shop", "db") for c, api in fleet.apis.items()
    }
    return {c: int(obj["spec"]["replicas"]) for c, obj in found.items() if obj is not None}


def test_a_move_takes_its_steps_without_waiting_for_the_leaders_interval(tmp_path: Path) -> None:
    secret = tmp_path / "webhook-secret"
    secret.write_bytes(SECRET)
    source = {"workloads/db.yaml": DB, "policies/databases.yaml": POLICY}
    with running(tmp_path, clusters=4, rollouts=True, extra=source) as fleet:
        for name in ("dro-a", "dro-b"):
            fleet.start(name, interval=3600, extra=("--webhook-secret-file", str(secret)))
        wait_for(lambda: len(homes(fleet)) == 1, "the database placed", timeout=60)
        wait_for(
            lambda: sum(r.metric("dro_shard_clusters") for r in fleet.replicas.values()) == 4,
            "every cluster owned and writable: the joins' handovers done",
        )
        (old,) = homes(fleet)
        leader = fleet.replicas[fleet.leader()]

        fleet.repo.write({f"clusters/{old}.yaml": cluster_file(old, "  drain: true\n")})
        fleet.repo.commit(f"drain {old}")
        assert leader.push_event(SECRET) == 202

        # Provisioning, Syncing, CutOver and Done: four commits, one webhook
        wait_for(
            lambda: len(homes(fleet)) == 1 and old not in homes(fleet),
            "the database moved off the drained cluster, its old copy removed",
            timeout=90,
        )
        (new,) = homes(fleet)
        assert homes(fleet) == {new: 1}
        asked = [
            e
            for replica in fleet.replicas.values()
            for e in replica.events()
            if e["event"] == "pass_triggered" and e.get("reason") == READY
        ]
        assert len(asked) >= 3, "a pass asked for at each step the copies made ready"
        assert fleet.double_writes() == []
