"""Failure drills of a sharded `dro run`: three replicas, 20 emulated clusters, the source
served by real `git daemon`s (one per replica). In each drill a change is committed to the
source while the fleet is hurt, and the drill checks that nothing is lost (every cluster
converges to the change, within `BOUND` seconds of it) and nothing is applied twice (no cluster
is written by two replicas in overlapping windows: `Fleet.double_writes`).

BOUND is the documented bound of a handover: the Lease's duration (the dead replica's Lease
expires), one start-up wait of the same length (a cluster whose old owner may still be alive),
and two intervals (the next passes of the leader and of the new owner), with as much again for
a loaded CI machine."""

from __future__ import annotations

import time
from pathlib import Path

from tests.service import wait_for
from tests.shardfleet import INTERVAL, LEASE, Fleet, running

CLUSTERS = 20
REPLICAS = ("dro-a", "dro-b", "dro-c")
BOUND = 2 * (2 * LEASE + 2 * INTERVAL)


def started(fleet: Fleet) -> dict[str, set[str]]:
    """The three replicas, converged on the first commit, settled: who owns what."""
    for name in REPLICAS:
        fleet.start(name)
    wait_for(lambda: fleet.converged(6), "web on every cluster", timeout=60)
    return fleet.settled()


def converges(fleet: Fleet, replicas: int, since: float) -> float:
    """Wait until every cluster runs `replicas`; the seconds it took since `since`."""
    wait_for(lambda: fleet.converged(replicas), f"web at {replicas} everywhere", timeout=BOUND)
    return time.monotonic() - since


def test_kill_the_leader(tmp_path: Path) -> None:
    with running(tmp_path, CLUSTERS) as fleet:
        started(fleet)
        victim = fleet.leader()
        killed = time.monotonic()
        fleet.replicas[victim].kill()
        fleet.change(4)
        took = converges(fleet, 4, killed)
        assert took < BOUND
        assert fleet.leader() != victim
        assert fleet.writes_after(victim, killed + 0.5) == []
        assert fleet.double_writes() == []


def test_kill_a_shard_owner(tmp_path: Path) -> None:
    with running(tmp_path, CLUSTERS) as fleet:
        owners = started(fleet)
        victim = next(r for r in REPLICAS if r != fleet.leader())
        theirs = sorted(c for c, readers in owners.items() if victim in readers)
        assert theirs, f"{victim} owns no cluster"
        killed = time.monotonic()
        fleet.replicas[victim].kill()
        survivors = set(REPLICAS) - {victim}
        wait_for(
            lambda: all(fleet.readers(c, killed) & survivors for c in theirs),
            f"{victim}'s clusters taken over",
            timeout=30,
        )
        took = time.monotonic() - killed
        assert took < LEASE + 2 * INTERVAL, f"took {took:.1f}s for a {LEASE:g}s Lease"
        fleet.change(4)
        assert converges(fleet, 4, killed) < BOUND
        assert fleet.writes_after(victim, killed + 0.5) == []
        assert fleet.double_writes() == []


def test_cut_one_replica_off_from_git(tmp_path: Path) -> None:
    with running(tmp_path, CLUSTERS) as fleet:
        owners = started(fleet)
        cut = next(r for r in REPLICAS if r != fleet.leader())
        theirs = sorted(c for c, readers in owners.items() if cut in readers)
        fleet.daemons[cut].stop()
        changed = time.monotonic()
        fleet.change(4)
        others = [c for c in fleet.apis if c not in theirs]
        wait_for(
            lambda: all(fleet.replicas_of(c) == 4 for c in others),
            "the change on the clusters of the replicas that reach git",
            timeout=BOUND,
        )
        assert all(fleet.replicas_of(c) == 6 for c in theirs), "nobody else writes there"
        fleet.daemons[cut].start()
        assert converges(fleet, 4, changed) < 2 * BOUND
        assert fleet.committers() == {fleet.leader()}
        assert fleet.double_writes() == []


def test_restart_all_three_at_once(tmp_path: Path) -> None:
    with running(tmp_path, CLUSTERS) as fleet:
        started(fleet)
        for replica in fleet.replicas.values():
            replica.process.terminate()
        stopped = time.monotonic()
        for name in REPLICAS:
            assert fleet.replicas[name].process.wait(timeout=30) == 0
        fleet.change(4)  # committed while no replica runs: picked up by the new ones
        for name in REPLICAS:
            fleet.start(f"{name}-2", daemon=name)
        assert converges(fleet, 4, stopped) < BOUND
        assert fleet.writes_after("dro-a", stopped + 0.5) == []
        assert fleet.double_writes() == []
