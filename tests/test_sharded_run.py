"""Three `dro run --shards auto` replicas share six emulated clusters: each replica observes and
applies only the clusters it owns, publishes its observations, and the leader alone commits
(`tests/shardfleet.py` says how the writes are told apart). The failure drills are in
`test_shard_drills.py`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.livefleet import DRO
from tests.service import Service, wait_for
from tests.shardfleet import Fleet, running

REPLICAS = ("dro-a", "dro-b", "dro-c")
REPORT = "    apply: {drift: Report}\n"


def leases(fleet: Fleet) -> list[str]:
    """The names of the Leases on the hub."""
    found = fleet.hub.objects.list("coordination.k8s.io", "v1", "leases", "default")
    return sorted(lease["metadata"]["name"] for lease in found)


def test_each_member_applies_its_own_clusters_and_the_leader_alone_commits(
    tmp_path: Path,
) -> None:
    with running(tmp_path, clusters=6) as fleet:
        for name in REPLICAS:
            fleet.start(name)
        wait_for(lambda: fleet.converged(6), "web applied on every cluster", timeout=60)
        wait_for(
            lambda: (
                leases(fleet) == ["dro", "dro-member-dro-a", "dro-member-dro-b", "dro-member-dro-c"]
            ),
            "a member Lease per replica, and the leader's",
        )
        seen = fleet.settled()
        assert all(len(readers) == 1 for readers in seen.values()), seen
        assert {r for readers in seen.values() for r in readers} == set(REPLICAS), seen
        config_maps = fleet.hub.objects.list("", "v1", "configmaps", "default")
        published = sorted(c["metadata"]["name"] for c in config_maps)
        assert published == [f"dro-observations-{name}" for name in REPLICAS]
        assert fleet.committers() == {fleet.leader()}, "only the leader commits"
        assert fleet.rendered_commits(), "and it did"
        assert fleet.double_writes() == []
        owned = {name: r.metric("dro_shard_clusters") for name, r in fleet.replicas.items()}
        assert sum(owned.values()) == 6, owned
        assert max(owned.values()) <= 3, "ceil(1.25 × 6 / 3)"
        assert {r.metric("dro_shard_members") for r in fleet.replicas.values()} == {3}

        for replica in fleet.replicas.values():
            assert replica.terminate() == 0
        assert leases(fleet) == ["dro"], "the members left cleanly"
        assert fleet.hub.objects.list("", "v1", "configmaps", "default") == []


def test_the_leader_warns_of_a_cluster_removed_while_replicas_ran_there(tmp_path: Path) -> None:
    with running(tmp_path, clusters=3) as fleet:
        replica = fleet.start("dro-a")
        wait_for(lambda: fleet.converged(6), "web applied on every cluster", timeout=60)
        assert not [e for e in replica.events() if e["event"] == "cluster_removed_with_replicas"]
        fleet.repo.write({"clusters/c02.yaml": None})
        fleet.repo.commit("c02 leaves the fleet")

        def warned() -> list[dict[str, object]]:
            return [e for e in replica.events() if e["event"] == "cluster_removed_with_replicas"]

        wait_for(lambda: bool(warned()), "the leader's warning", timeout=60)
        assert "c02" in str(warned()[0]["detail"])
        assert any(e["event"] == "source_loaded" for e in replica.events())


def drift_file(fleet: Fleet, cluster: str) -> str | None:
    """`status/drift/<cluster>.yaml` on the output branch, or None."""
    shown = subprocess.run(
        ["git", "-C", str(fleet.repo.bare), "show", f"dro/rendered:status/drift/{cluster}.yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    return shown.stdout if shown.returncode == 0 else None


def test_drift_on_a_cluster_another_member_owns_reaches_the_output_branch(
    tmp_path: Path,
) -> None:
    duplicated = "    replicaScheduling: {type: Duplicated}\n"
    assert duplicated in DRO
    with running(tmp_path, clusters=4) as fleet:
        fleet.repo.write({"dro.yaml": DRO.replace(duplicated, duplicated + REPORT)})
        fleet.repo.commit("report drift, correct nothing")
        for name in REPLICAS[:2]:
            fleet.start(name)
        wait_for(lambda: fleet.converged(6), "web applied on every cluster", timeout=60)
        leader = fleet.leader()
        seen = fleet.settled()
        theirs = sorted(c for c, readers in seen.items() if readers and leader not in readers)
        assert theirs, f"the other member owns some clusters: {seen}"
        cluster = theirs[0]
        live = fleet.apis[cluster].get("", "v1", "configmaps", "shop", "web")
        assert live is not None
        live["data"]["greeting"] = "hacked"
        fleet.apis[cluster].put(live)
        wait_for(lambda: drift_file(fleet, cluster) is not None, "the drift file", timeout=60)
        found = drift_file(fleet, cluster)
        assert found is not None
        assert "core/ConfigMap/shop/web" in found
        assert "/data/greeting" in found
        assert fleet.committers() == {leader}, "the leader wrote it, from the member's survey"


def passes_ended(replica: Service) -> int:
    """How many passes `replica` logged as ended."""
    return sum(1 for e in replica.events() if e["event"] == "pass_ended")


def test_sharded_passes_idle_and_a_member_applies_the_leaders_commit_at_once(
    tmp_path: Path,
) -> None:
    """An hour between passes: webhooks start the passes, and the other member applies the
    leader's new commit when the leader's Lease names it (a renewal later), not at its own
    next interval. Once the fleet is settled, passes with nothing changed stand on the last
    ones, the leader's and the member's: no commit, no write to any cluster."""
    secret = tmp_path / "webhook-secret"
    secret.write_bytes(b"sharded-webhook")
    extra = ("--webhook-secret-file", str(secret))
    with running(tmp_path, clusters=4) as fleet:
        for name in REPLICAS[:2]:
            fleet.start(name, interval=3600, extra=extra)
        wait_for(lambda: fleet.converged(6), "web applied on every cluster", timeout=60)
        wait_for(
            lambda: sum(r.metric("dro_shard_clusters") for r in fleet.replicas.values()) == 4,
            "every cluster owned and writable: the joins' handovers done",
        )
        leader = fleet.replicas[fleet.leader()]
        member = next(r for name, r in fleet.replicas.items() if name != fleet.leader())

        def idles(replica: Service) -> int:
            return sum(1 for e in replica.events() if e["event"] == "pass_idle")

        def round_of_passes() -> tuple[bool, int, bool, bool]:
            """A webhook to the member, which forwards it to the leader, and both passes:
            (a commit was made, cluster writes, the member's pass idled, the leader's)."""
            commits, writes = len(fleet.rendered_commits()), fleet.cluster_writes()
            ended = passes_ended(member), passes_ended(leader)
            idled = idles(member), idles(leader)
            assert member.push_event(b"sharded-webhook") == 202
            wait_for(lambda: passes_ended(member) > ended[0], "the member's pass", timeout=60)
            wait_for(lambda: passes_ended(leader) > ended[1], "the leader's pass", timeout=60)
            return (
                len(fleet.rendered_commits()) > commits,
                fleet.cluster_writes() - writes,
                idles(member) > idled[0],
                idles(leader) > idled[1],
            )

        standing = (False, 0, True, True)
        for _ in range(10):
            if round_of_passes() == standing:
                break
        else:
            raise AssertionError("the sharded passes never stood still")
        assert round_of_passes() == standing, "passes with nothing changed stand still"

        triggered = len([e for e in member.events() if e["event"] == "pass_triggered"])
        fleet.change(4)
        assert leader.push_event(b"sharded-webhook") == 202
        wait_for(lambda: fleet.converged(4), "the change applied on every cluster", timeout=30)
        reasons = [e.get("reason") for e in member.events() if e["event"] == "pass_triggered"]
        assert "the leader committed a new output" in reasons[triggered:]
        assert fleet.double_writes() == []
