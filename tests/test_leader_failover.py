"""Two `dro run` replicas share one Lease on the API emulator: one leads, the other idles
(a webhook it receives reaches the leader through the Lease), and when the leader is killed
the follower takes over within the lease duration, without a duplicate commit."""

from __future__ import annotations

import time
from pathlib import Path

from tests.conftest import git, make_source_repo
from tests.kubeapi import KubeAPI
from tests.service import Service, wait_for

LEASE_SECONDS = 2.0
SECRET = b"webhook"


def test_the_follower_takes_over_when_the_leader_is_killed(tmp_path: Path) -> None:
    api = KubeAPI()
    api.start()
    repo = make_source_repo(tmp_path / "src")
    kubeconfig = api.kubeconfig(tmp_path / "home-kubeconfig", context="home")
    secret = tmp_path / "webhook-secret"
    secret.write_bytes(SECRET)
    common = (
        *("--repo", str(repo.bare), "--interval", "10m", "--lease-kubeconfig", str(kubeconfig)),
        *("--lease-namespace", "default", "--lease-duration", f"{LEASE_SECONDS}s"),
        *("--webhook-secret-file", str(secret)),
    )
    replicas: list[Service] = []
    try:
        for name in ("dro-a", "dro-b"):
            state = ("--state-dir", str(tmp_path / name))
            replicas.append(Service(tmp_path, *common, *state, env={"POD_NAME": name}))
        a, b = replicas
        wait_for(lambda: a.metric("dro_leader") + b.metric("dro_leader") == 1, "one leader")
        leader, follower = (a, b) if a.metric("dro_leader") == 1 else (b, a)
        wait_for(lambda: leader.metric("dro_reconcile_total", result="success") == 1, "a pass")
        assert follower.metric("dro_reconcile_total", result="success") == 0, "followers idle"
        assert follower.get("/readyz")[0] == 200, "an idle follower is ready"
        assert follower.push_event(SECRET) == 202, "a follower hands a webhook to the leader"
        wait_for(
            lambda: leader.metric("dro_reconcile_total", result="success") == 2,
            "the leader's pass for the follower's webhook",
        )
        assert follower.metric("dro_reconcile_total", result="success") == 0
        holder = api.get("coordination.k8s.io", "v1", "leases", "default", "dro")
        assert holder is not None
        assert holder["spec"]["holderIdentity"] in ("dro-a", "dro-b")

        killed = time.monotonic()
        leader.kill()
        wait_for(lambda: follower.metric("dro_leader") == 1, "the takeover", timeout=15)
        took = time.monotonic() - killed
        assert took < LEASE_SECONDS + 1.5, f"took {took:.1f}s for a {LEASE_SECONDS}s lease"
        wait_for(
            lambda: follower.metric("dro_reconcile_total", result="success") >= 1,
            "the new leader's pass",
        )
        rendered = git(repo.bare, "log", "--format=%H", "dro/rendered").splitlines()
        assert len(rendered) == 1, "the same source gives no second commit"
        assert follower.terminate() == 0
    finally:
        for replica in replicas:
            replica.close()
        api.stop()
