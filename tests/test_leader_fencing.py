"""Leader fencing: one writer at a time, even when the leader is paused past its Lease.

Two `dro run` replicas elect a leader on a Lease (its own API emulator) and apply to three
cluster emulators, each replica with its own kubeconfig user, so the emulators' logs say who
sent each write. The leader is stopped (SIGSTOP) in the middle of a pass that has writes left,
longer than the Lease; the other replica takes over and starts writing; then the first is
continued (SIGCONT). Its fence (the renew deadline) must stop it before its next write: no
write of the old leader may arrive after the new leader's first.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from reconciler import commit, load
from reconciler.domain import fence
from reconciler.kube import client as kube
from reconciler.service import leader
from tests.conftest import SourceRepo, make_source_repo
from tests.kubeapi import KubeAPI
from tests.livefleet import NAMES, source_files
from tests.service import Service, wait_for
from tests.soak_parts import RecordingAPI, Written, dro_child, user_kubeconfig

LEASE_SECONDS = 2.0
SECRET = b"webhook"
CONFIGMAPS = 12


def configmaps(count: int) -> str:
    """A workload file of `count` ConfigMaps: as many writes per cluster."""
    return "---\n".join(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: shop}}\n"
        f"data: {{index: '{i}'}}\n"
        for i in range(count)
    )


def writes_of(apis: dict[str, RecordingAPI], user: str, since: float = 0.0) -> list[Written]:
    """The writes `user` sent to the cluster emulators since `since`, oldest first."""
    found = [w for api in apis.values() for w in api.written if w.user == user and w.at >= since]
    return sorted(found, key=lambda w: w.at)


def test_a_leader_paused_past_its_lease_writes_nothing_after_the_new_leader(
    tmp_path: Path,
) -> None:
    lease_api = KubeAPI().start()
    apis = {name: RecordingAPI(name, nodes=2) for name in NAMES}
    replicas: dict[str, Service] = {}
    try:
        for api in apis.values():
            api.start()
        repo = make_source_repo(tmp_path / "src", None)
        repo.write(source_files())
        repo.commit("fleet")
        lease_config = lease_api.kubeconfig(tmp_path / "lease-kubeconfig", context="home")
        secret = tmp_path / "webhook-secret"
        secret.write_bytes(SECRET)
        for name in ("dro-a", "dro-b"):
            kubeconfig = tmp_path / f"{name}-kubeconfig"
            for cluster, api in apis.items():
                user_kubeconfig(api, kubeconfig, cluster, name)
            replicas[name] = Service(
                tmp_path,
                *(
                    "--repo",
                    str(repo.bare),
                    "--interval",
                    "10m",
                    "--state-dir",
                    str(tmp_path / name),
                ),
                *("--lease-kubeconfig", str(lease_config), "--lease-namespace", "default"),
                *("--lease-duration", f"{LEASE_SECONDS}s", "--kubeconfig", str(kubeconfig)),
                *("--webhook-secret-file", str(secret), "--cluster-timeout", "10s"),
                *("--move-wait", "0s", "--status-interval", "1h"),
                env={"POD_NAME": name},
            )
        a, b = replicas["dro-a"], replicas["dro-b"]
        wait_for(lambda: a.metric("dro_leader") + b.metric("dro_leader") == 1, "one leader")
        old, new = ("dro-a", "dro-b") if a.metric("dro_leader") == 1 else ("dro-b", "dro-a")
        wait_for(lambda: replicas[old].metric("dro_reconcile_total", result="success") == 1, "pass")
        assert writes_of(apis, old), "the leader's first pass applied"
        assert not writes_of(apis, new), "a follower writes nothing"

        # a pass with many writes left, each answered slowly by every cluster
        for api in apis.values():
            api.delay(0.1, method="PATCH")
        triggered = time.time()
        pause_mid_pass(repo, replicas[old], apis, old)
        stopped = time.time()
        wait_for(lambda: replicas[new].metric("dro_leader") == 1, "the takeover", timeout=20)
        first_new = wait_for(lambda: writes_of(apis, new), "the new leader's first write")
        assert isinstance(first_new, list)
        os.kill(dro_child(replicas[old]), signal.SIGCONT)
        assert time.time() - stopped > LEASE_SECONDS, "paused past the Lease"

        ended = wait_for(lambda: ended_passes(replicas[old]), "the old leader's pass to end")
        wait_for(
            lambda: replicas[new].metric("dro_reconcile_total", result="success") >= 1,
            "the new leader's pass",
            timeout=60,
        )
        late = [w for w in writes_of(apis, old, triggered) if w.at >= first_new[0].at]
        assert not late, f"the old leader wrote {len(late)} times after the new one: {late}"
        assert ended == ["success", "interrupted"], ended
        interrupted = [e for e in replicas[old].events() if e.get("event") == "pass_interrupted"]
        assert len(interrupted) == 1, "the abandoned pass is logged once"
        assert "not sent, pass abandoned" in str(interrupted[0]["reason"])
        for api in apis.values():
            api.delay(0)
            assert api.get("", "v1", "configmaps", "shop", f"cm-{CONFIGMAPS - 1}") is not None
    finally:
        for replica in replicas.values():
            child = _child_or_none(replica)
            if child is not None:
                os.kill(child, signal.SIGCONT)  # a stopped process ignores SIGKILL's wait
            replica.close()
        for api in apis.values():
            api.stop()
        lease_api.stop()


def pause_mid_pass(
    repo: SourceRepo, leader_service: Service, apis: dict[str, RecordingAPI], name: str
) -> None:
    """Commit many ConfigMaps, ask the leader for a pass, and SIGSTOP it while its first
    write of that pass to every cluster is held unanswered (so most of its writes are still
    to come, and each of its threads waits for an answer, past its fence check)."""
    gates = [api.hold_writes(name) for api in apis.values()]
    repo.write({"workloads/many.yaml": configmaps(CONFIGMAPS)})
    repo.commit("many configmaps")
    assert leader_service.push_event(SECRET) == 202
    wait_for(lambda: all(api.waiting for api in apis.values()), "the leader's first writes")
    os.kill(dro_child(leader_service), signal.SIGSTOP)
    for gate in gates:
        gate.set()


def ended_passes(service: Service) -> list[str] | None:
    """The results of the passes it ended, once there are two."""
    results = [str(e["result"]) for e in service.events() if e.get("event") == "pass_ended"]
    return results if len(results) >= 2 else None


def _child_or_none(service: Service) -> int | None:
    try:
        return dro_child(service)
    except (OSError, AssertionError):
        return None


class Deposing:
    """A fence that refuses every write and notes what was checked."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, write: str) -> None:
        self.checked.append(write)
        raise fence.Deposed(f"{write} not sent")


def test_a_deposed_replica_does_not_push(source_repo: SourceRepo, tmp_path: Path) -> None:
    url, state = str(source_repo.bare), tmp_path / "state"
    load.from_git(url, "main", state)
    fenced = Deposing()
    with pytest.raises(fence.Deposed):
        commit.publish(
            url, state, branch="out", tree={"f": b"x"}, source_sha="a", commit_time=1, fenced=fenced
        )
    assert fenced.checked == ["push out"]
    assert source_repo.branch_sha("out") is None


def test_the_fence_stops_a_write_in_the_client_and_lets_reads_and_dry_runs_through(
    tmp_path: Path,
) -> None:
    with KubeAPI() as api:
        config = api.kubeconfig(tmp_path / "kubeconfig", context="c1")
        fenced = Deposing()
        connection = kube.connect("c1", context="c1", kubeconfig=config, fence=fenced)
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "default"},
            "data": {"a": "1"},
        }
        try:
            assert connection.get("v1", "ConfigMap", "x", "default") is None
            connection.apply(body, dry_run=True)
            assert fenced.checked == [], "reads and dry runs are not writes"
            for write in (
                lambda: connection.apply(body),
                lambda: connection.create(body),
                lambda: connection.replace(body),
                lambda: connection.delete("v1", "ConfigMap", "x", "default"),
            ):
                try:
                    write()
                except fence.Deposed:
                    continue
                raise AssertionError("a fenced write was sent")
        finally:
            connection.close()
        assert api.writes == [], "no write reached the API"
        assert [w.split()[0] for w in fenced.checked] == ["PATCH", "POST", "PUT", "DELETE"]
        assert fenced.checked[0] == "PATCH /api/v1/namespaces/default/configmaps/x"


def test_a_leader_loop_fences_writes_past_its_renew_deadline(tmp_path: Path) -> None:
    with KubeAPI() as api:
        config = api.kubeconfig(tmp_path / "kubeconfig", context="c1")
        connection = kube.connect("lease", context="c1", kubeconfig=config, timeout=1.0)
        timings = leader.LeaseConfig(
            namespace="default",
            identity="pod-a",
            lease_duration=1.5,
            renew_deadline=1.0,
            retry_period=0.1,
        )
        started = []
        loop = leader.LeaderLoop(
            leader.Elector(connection, timings),
            on_started=lambda: started.append(True),
            on_stopped=lambda: None,
        )
        try:
            with pytest.raises(fence.Deposed, match="not held by this replica"):
                loop.check("PATCH /x")
            loop.start()
            wait_for(lambda: started, "leading")
            loop.check("PATCH /x")  # leading, renewed just now
            api.refuse()  # renewals fail from now on; the fence closes at the renew deadline
            refused = time.monotonic()

            def closed() -> bool:
                try:
                    loop.check("PATCH /x")
                except fence.Deposed:
                    return True
                return False

            wait_for(closed, "the fence to close", timeout=5)
            assert time.monotonic() - refused < timings.lease_duration, (
                "the fence closed only after another replica could have taken the Lease"
            )
        finally:
            api.accept()
            loop.stop()
            connection.close()
