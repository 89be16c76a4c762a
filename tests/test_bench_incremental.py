"""bench/incremental.py runs a real `dro run` end to end on a small fleet: the fleet settles,
the no-change passes commit nothing and are idle, and a changed workload reaches the output
branch through the signed webhook."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def test_the_incremental_bench_measures_idle_and_changed_passes() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "incremental.py"),
            "--clusters",
            "12",
            "--workloads",
            "40",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    figures = json.loads(done.stdout)
    assert figures["no-change commits"] == 0
    assert figures["settle passes"] < 8, "the roomy fleet settles"
    assert figures["no change"] < figures["full (cold)"]
    assert 0 < figures["webhook to commit"] < 60
    assert figures["one workload"] > figures["no change"], "a change is a pass, not idle"


def test_the_online_bench_counts_the_writes_the_emulated_clusters_received() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "incremental.py"),
            *("--clusters", "12", "--workloads", "40", "--online", "3", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    figures = json.loads(done.stdout)
    first, *_ = figures["passes"]
    assert first["pass"] == "full (cold)"
    assert first["writes"] > 0, "the first pass applies every object to the empty clusters"
    assert figures["no-change writes"] == 0
    assert figures["no-change commits"] == 0
    assert figures["no-change idle"] == 3
    changed = figures["passes"][-1]
    assert changed["pass"] == "one workload"
    assert changed["writes"] > 0, "the scaled Deployment is applied"
    assert not changed["idle"]
