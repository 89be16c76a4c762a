"""Three `dro run --shards auto` replicas share six emulated clusters: each replica observes and
applies only the clusters it owns, the leader alone commits, and when a member is killed its
clusters are taken over within the Lease duration, with no cluster written by two members in
overlapping windows (the emulators log every request with the token of the replica that sent
it: each replica reaches the clusters with a kubeconfig of its own)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import SourceRepo, git, make_source_repo
from tests.kubeapi import KubeAPI
from tests.livefleet import DRO, WEB, cluster_file
from tests.service import Service, wait_for

CLUSTERS = tuple(f"c{i}" for i in range(6))
REPLICAS = ("dro-a", "dro-b", "dro-c")
LEASE = 3.0
RENEW_DEADLINE = LEASE * 2 / 3


@dataclass
class Shards:
    """The hub (Leases and observation ConfigMaps), the clusters, the source and the replicas."""

    hub: KubeAPI
    apis: dict[str, KubeAPI]
    repo: SourceRepo
    replicas: dict[str, Service]
    tmp: Path

    def start(self, name: str) -> Service:
        """Start (or restart) the replica `name`, with its own token for the clusters."""
        kubeconfig = self.tmp / f"clusters-{name}"
        for cluster, api in self.apis.items():
            api.kubeconfig(kubeconfig, context=cluster, token=name)
        hub = self.hub.kubeconfig(self.tmp / "hub", context="hub")
        self.replicas[name] = Service(
            self.tmp,
            *("--repo", str(self.repo.bare), "--interval", "3s", "--shards", "auto"),
            *("--lease-kubeconfig", str(hub), "--lease-namespace", "default"),
            *("--lease-duration", f"{LEASE:g}s", "--kubeconfig", str(kubeconfig)),
            *("--cluster-timeout", "2s", "--state-dir", str(self.tmp / f"state-{name}")),
            env={"POD_NAME": name},
        )
        return self.replicas[name]

    def replicas_of(self, cluster: str, name: str = "web") -> int | None:
        """The live `spec.replicas` of a Deployment on a cluster (None when absent)."""
        live = self.apis[cluster].get("apps", "v1", "deployments", "shop", name)
        return None if live is None else int(live["spec"]["replicas"])

    def readers(self, cluster: str, since: float) -> set[str]:
        """The replicas that sent any request to `cluster` since `since` (monotonic)."""
        return {s.token for s in self.apis[cluster].stamped if s.at >= since}

    def leader(self) -> str:
        """The holder of the leader's Lease."""
        lease = self.hub.get("coordination.k8s.io", "v1", "leases", "default", "dro")
        assert lease is not None
        return str(lease["spec"]["holderIdentity"])

    def rendered_commits(self) -> list[str]:
        """The commits of the output branch, newest first."""
        return git(self.repo.bare, "log", "--format=%H", "dro/rendered").splitlines()


@contextmanager
def shards(tmp: Path) -> Iterator[Shards]:
    """Six emulated clusters of one cpu-light fleet, and the hub; the replicas are started by
    the test, and every process and server is stopped after."""
    repo = make_source_repo(tmp / "source", None)
    files = {"dro.yaml": DRO, "workloads/web.yaml": WEB}
    repo.write(files | {f"clusters/{c}.yaml": cluster_file(c) for c in CLUSTERS})
    repo.commit("fleet")
    with ExitStack() as stack:
        hub = stack.enter_context(KubeAPI())
        apis = {c: stack.enter_context(KubeAPI(nodes=2)) for c in CLUSTERS}
        fleet = Shards(hub=hub, apis=apis, repo=repo, replicas={}, tmp=tmp)
        try:
            yield fleet
        finally:
            for replica in fleet.replicas.values():
                replica.close()


def owners(fleet: Shards, since: float) -> dict[str, set[str]]:
    """Cluster → the replicas that read it since `since`."""
    return {cluster: fleet.readers(cluster, since) for cluster in CLUSTERS}


WRITES = ("POST", "PUT", "PATCH", "DELETE")


def overlapping_writers(api: KubeAPI, margin: float) -> list[str]:
    """Where two replicas' writes to one cluster come closer than `margin` seconds apart at
    a change of writer: each such change, said in words (empty when there is none)."""
    writes = [s for s in api.stamped if s.method in WRITES]
    found = []
    for before, after in itertools.pairwise(writes):
        if before.token != after.token and after.at - before.at < margin:
            gap = after.at - before.at
            found.append(f"{before.token} then {after.token} {gap:.2f}s later ({after.path})")
    return found


def test_each_member_applies_its_own_clusters_and_the_leader_alone_commits(
    tmp_path: Path,
) -> None:
    with shards(tmp_path) as fleet:
        for name in REPLICAS:
            fleet.start(name)
        wait_for(
            lambda: all(fleet.replicas_of(c) == 6 for c in CLUSTERS),
            "web applied on every cluster",
            timeout=60,
        )
        members = fleet.hub.objects.list("coordination.k8s.io", "v1", "leases", "default")
        names = sorted(m["metadata"]["name"] for m in members)
        assert names == ["dro", "dro-member-dro-a", "dro-member-dro-b", "dro-member-dro-c"]
        # once all three are members, each cluster is read by exactly one of them
        settled = time.monotonic() + LEASE + 1
        wait_for(lambda: time.monotonic() > settled, "the handovers of the joins")
        since = time.monotonic()
        wait_for(
            lambda: all(fleet.readers(c, since) for c in CLUSTERS),
            "a pass on every cluster",
            timeout=30,
        )
        seen = owners(fleet, since)
        assert all(len(readers) == 1 for readers in seen.values()), seen
        assert {r for readers in seen.values() for r in readers} == set(REPLICAS), seen
        config_maps = fleet.hub.objects.list("", "v1", "configmaps", "default")
        published = sorted(c["metadata"]["name"] for c in config_maps)
        assert published == [f"dro-observations-{name}" for name in REPLICAS]
        committers = {
            name
            for name, replica in fleet.replicas.items()
            if any(e["event"] == "committed" for e in replica.events())
        }
        assert committers == {fleet.leader()}, "only the leader commits"
        assert fleet.rendered_commits(), "and it did"
        for cluster in CLUSTERS:
            assert overlapping_writers(fleet.apis[cluster], LEASE - RENEW_DEADLINE) == []


def test_a_killed_members_clusters_move_within_the_lease_duration_without_double_writes(
    tmp_path: Path,
) -> None:
    with shards(tmp_path) as fleet:
        for name in REPLICAS:
            fleet.start(name)
        wait_for(lambda: all(fleet.replicas_of(c) == 6 for c in CLUSTERS), "web everywhere", 60)
        settled = time.monotonic() + LEASE + 1
        wait_for(lambda: time.monotonic() > settled, "the handovers of the joins")
        since = time.monotonic()
        wait_for(lambda: all(fleet.readers(c, since) for c in CLUSTERS), "a pass everywhere")
        victim = next(r for r in REPLICAS if r != fleet.leader())
        theirs = sorted(c for c, readers in owners(fleet, since).items() if victim in readers)
        assert theirs, f"{victim} owns no cluster"

        killed = time.monotonic()
        fleet.replicas[victim].kill()
        survivors = set(REPLICAS) - {victim}
        wait_for(
            lambda: all(fleet.readers(c, killed) & survivors for c in theirs),
            f"{victim}'s clusters {theirs} taken over",
            timeout=30,
        )
        took = time.monotonic() - killed
        assert took < LEASE + 3.0, f"took {took:.1f}s for a {LEASE:g}s Lease"

        fleet.repo.write({"workloads/web.yaml": WEB.replace("replicas: 6", "replicas: 4")})
        fleet.repo.commit("fewer web")
        wait_for(
            lambda: all(fleet.replicas_of(c) == 4 for c in CLUSTERS),
            "the change applied on every cluster, the dead member's included",
            timeout=60,
        )
        for cluster in CLUSTERS:
            assert overlapping_writers(fleet.apis[cluster], LEASE - RENEW_DEADLINE) == []
            late = [
                s
                for s in fleet.apis[cluster].stamped
                if s.token == victim and s.at > killed + 0.5 and s.method in WRITES
            ]
            assert late == [], f"{victim} wrote to {cluster} after it was killed"
