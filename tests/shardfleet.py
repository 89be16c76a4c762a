"""A fleet for the sharded `dro run` tests and failure drills: emulated clusters, a hub (the
API emulator holding the Leases and the observation ConfigMaps), a source repository served
by a real `git daemon` per replica (so one replica can be cut off from git alone), and the
replicas, each a `dro run --shards auto` process that reaches the clusters with a token of its
own (the emulators log each request with it: who wrote where, and when)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import SourceRepo, git, make_source_repo
from tests.kubeapi import KubeAPI
from tests.livefleet import DRO, WEB, cluster_file
from tests.service import Service, free_port, wait_for

LEASE = 3.0
RENEW_DEADLINE = LEASE * 2 / 3
INTERVAL = 3.0
WRITES = ("POST", "PUT", "PATCH", "DELETE")


class GitDaemon:
    """One `git daemon` serving `base` with push enabled, on its own port; `stop` cuts off
    whoever uses it, `start` serves again on the same port."""

    def __init__(self, base: Path) -> None:
        self.base, self.port = base, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        """The git:// URL of a repository under `base`."""
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        """Serve (again), and wait until the port answers."""
        command = [
            *("timeout", "300", "git", "daemon", "--reuseaddr", "--listen=127.0.0.1"),
            *(f"--port={self.port}", f"--base-path={self.base}", "--export-all"),
            *("--enable=receive-pack", str(self.base)),
        ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        wait_for(self._answers, f"git daemon on port {self.port}", timeout=15)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        """Stop serving (its process group is killed)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        self.process = None


@dataclass
class Fleet:
    """The hub, the clusters, the served source, a git daemon per replica, the replicas."""

    hub: KubeAPI
    apis: dict[str, KubeAPI]
    repo: SourceRepo
    daemons: dict[str, GitDaemon]
    tmp: Path
    replicas: dict[str, Service] = field(default_factory=dict)

    def start(
        self,
        name: str,
        daemon: str | None = None,
        *,
        interval: float = INTERVAL,
        extra: tuple[str, ...] = (),
    ) -> Service:
        """Start the replica `name` (its identity, and its token for the clusters), reading
        git through the daemon `daemon` (by default its own, made on first use), passing
        every `interval` seconds, with the `extra` arguments."""
        daemon = daemon or name
        if daemon not in self.daemons:
            self.daemons[daemon] = GitDaemon(self.repo.bare.parent)
            self.daemons[daemon].start()
        kubeconfig = self.tmp / f"clusters-{name}"
        for cluster, api in self.apis.items():
            api.kubeconfig(kubeconfig, context=cluster, token=name)
        hub = self.hub.kubeconfig(self.tmp / "hub", context="hub")
        url = self.daemons[daemon].url(self.repo.bare.name)
        self.replicas[name] = Service(
            self.tmp,
            *("--repo", url, "--interval", f"{interval:g}s", "--shards", "auto"),
            *("--lease-kubeconfig", str(hub), "--lease-namespace", "default"),
            *("--lease-duration", f"{LEASE:g}s", "--kubeconfig", str(kubeconfig)),
            *("--cluster-timeout", "2s", "--state-dir", str(self.tmp / f"state-{name}")),
            *extra,
            env={"POD_NAME": name},
        )
        return self.replicas[name]

    def replicas_of(self, cluster: str, name: str = "web") -> int | None:
        """The live `spec.replicas` of a Deployment on a cluster (None when absent)."""
        live = self.apis[cluster].get("apps", "v1", "deployments", "shop", name)
        return None if live is None else int(live["spec"]["replicas"])

    def converged(self, replicas: int) -> bool:
        """Whether every cluster runs `web` with `replicas`."""
        return all(self.replicas_of(c) == replicas for c in self.apis)

    def readers(self, cluster: str, since: float) -> set[str]:
        """The replicas that sent any request to `cluster` since `since` (monotonic)."""
        return {s.token for s in self.apis[cluster].stamped if s.at >= since}

    def owners(self, since: float) -> dict[str, set[str]]:
        """Cluster → the replicas that read it since `since`."""
        return {cluster: self.readers(cluster, since) for cluster in self.apis}

    def settled(self) -> dict[str, set[str]]:
        """Wait out the handovers of the joins, then until a pass read every cluster; who
        read which since."""
        after = time.monotonic() + LEASE + 1
        wait_for(lambda: time.monotonic() > after, "the handovers of the joins")
        since = time.monotonic()
        wait_for(lambda: all(self.owners(since).values()), "a pass on every cluster", 30)
        return self.owners(since)

    def leader(self) -> str:
        """The holder of the leader's Lease."""
        lease = self.hub.get("coordination.k8s.io", "v1", "leases", "default", "dro")
        assert lease is not None
        return str(lease["spec"]["holderIdentity"])

    def change(self, replicas: int) -> None:
        """Commit `web` with `replicas` to the source."""
        self.repo.write({"workloads/web.yaml": WEB.replace("replicas: 6", f"replicas: {replicas}")})
        self.repo.commit(f"web: {replicas}")

    def committers(self) -> set[str]:
        """The replicas that logged a commit."""
        return {
            name
            for name, replica in self.replicas.items()
            if any(e["event"] == "committed" for e in replica.events())
        }

    def rendered_commits(self) -> list[str]:
        """The commits of the output branch, newest first."""
        return git(self.repo.bare, "log", "--format=%H", "dro/rendered").splitlines()

    def double_writes(self) -> list[str]:
        """Each change of writer on a cluster closer than the fence's margin (the Lease's
        duration less its renew deadline) after the previous writer's last write, in words;
        empty when every cluster had one writer at a time."""
        found = []
        for cluster, api in self.apis.items():
            writes = [s for s in api.stamped if s.method in WRITES]
            for before, after in itertools.pairwise(writes):
                gap = after.at - before.at
                if before.token != after.token and gap < LEASE - RENEW_DEADLINE:
                    found.append(f"{cluster}: {before.token}, then {after.token} {gap:.2f}s later")
        return found

    def cluster_writes(self) -> int:
        """The writes every cluster received so far, dry runs not counted (the hub's
        Leases and observations are not clusters)."""
        return sum(len(api.writes) for api in self.apis.values())

    def writes_after(self, name: str, moment: float) -> list[str]:
        """`name`'s writes to any cluster that arrived after `moment` (monotonic)."""
        return [
            f"{cluster}: {s.method} {s.path}"
            for cluster, api in self.apis.items()
            for s in api.stamped
            if s.token == name and s.at > moment and s.method in WRITES
        ]


@contextmanager
def running(
    tmp: Path, clusters: int, *, rollouts: bool = False, extra: Mapping[str, str] | None = None
) -> Iterator[Fleet]:
    """`clusters` one-node emulated clusters running `web` (6 replicas, Duplicated), the hub,
    and the source served under a folder the git daemons serve; the replicas are started by
    the test, and every process and server is stopped after. `rollouts`: the clusters
    complete every rollout as it is written (`KubeAPI`); `extra`: more source files."""
    names = [f"c{i:02d}" for i in range(clusters)]
    origin = make_source_repo(tmp / "origin", None)
    origin.write(
        {"dro.yaml": DRO, "workloads/web.yaml": WEB}
        | {f"clusters/{c}.yaml": cluster_file(c) for c in names}
        | dict(extra or {})
    )
    origin.commit("fleet")
    served = tmp / "served" / "fleet.git"
    served.parent.mkdir()
    shutil.move(str(origin.bare), served)
    git(origin.work, "remote", "set-url", "origin", str(served))
    repo = SourceRepo(bare=served, work=origin.work)
    with ExitStack() as stack:
        hub = stack.enter_context(KubeAPI())
        apis = {
            c: stack.enter_context(KubeAPI(nodes=1, node_cpu="16", rollouts=rollouts))
            for c in names
        }
        fleet = Fleet(hub=hub, apis=apis, repo=repo, daemons={}, tmp=tmp)
        try:
            yield fleet
        finally:
            for replica in fleet.replicas.values():
                replica.close()
            for daemon in fleet.daemons.values():
                daemon.stop()
