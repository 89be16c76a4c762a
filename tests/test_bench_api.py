"""bench/api.py runs end to end at a low rate and accounts for every commit."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def test_the_api_bench_counts_one_commit_per_successful_write() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "api.py"),
            "--seconds",
            "2",
            "--reads-per-second",
            "50",
            "--writes-per-minute",
            "300",
            "--tolerance",
            "0.5",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    counted = re.search(
        r"commits: (\d+) made for (\d+) successful writes; lost 0, extra 0, "
        r"duplicated 0",
        done.stdout,
    )
    assert counted, done.stdout
    assert counted.group(1) == counted.group(2) == "10"
    rows = {line.split("  ")[0] for line in done.stdout.splitlines()}
    assert {"baseline GET /healthz", "API reads", "API writes"} <= rows
