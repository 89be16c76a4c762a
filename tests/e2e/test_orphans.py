"""The servers of a fleet stop by themselves when the process that started them is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.controlplane import ROOT

STARTER = """
import sys, time
from pathlib import Path
from tests.e2e.controlplane import ClusterSpec, start_fleet
spec = ClusterSpec("orphan", nodes=1, cpu="2", memory="4Gi", pods=10)
with start_fleet([spec], Path(sys.argv[1])) as fleet:
    print(" ".join(str(p.pid) for c in fleet.clusters for p in c.processes.values()), flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_test_run_leaves_no_server_behind(tmp_path: Path) -> None:
    """SIGKILL to the process that started a cluster: etcd, the API server, the controllers and
    kwok all exit within seconds, though nothing ran the fixture's teardown."""
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    line = starter.stdout.readline()
    pids = [int(p) for p in line.split()]
    assert len(pids) == 5, line
    assert all(_alive(p) for p in pids)

    starter.send_signal(signal.SIGKILL)
    starter.wait()
    starter.stdout.close()

    deadline = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)  # polling against a deadline: the kernel's kill is asynchronous
    assert [p for p in pids if _alive(p)] == []
