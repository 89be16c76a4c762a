"""bench/costfloor.py: the linear-programming floor under any placement's cost, on traces
small enough to work out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import costfloor
from tests.builders.simulate import cluster_yaml, write_trace


def _priced(root: Path, name: str, cpu: int, used: int, price: float, region: str) -> None:
    text = cluster_yaml(name, cpu, used).replace("cost: {cpu: 0.5}", f"cost: {{cpu: {price}}}")
    text = text.replace("region: r1", f"region: {region}")
    (root / "repo" / "clusters" / f"{name}.yaml").write_text(text)


def test_the_floor_fills_the_cheap_room_under_the_limit_first(tmp_path: Path) -> None:
    """10 one-core replicas; the cheap cluster has 8 − 2 = 6 cores under its 0.8 limit, the
    dear one takes the other 4: 6 × 0.1 + 4 × 1.0 = 4.6 an hour, over two hourly steps."""
    path = write_trace(
        tmp_path, {"cheap": (10, 2), "dear": (10, 0)}, {"web": 10}, "step: 1h\nsteps: 2\n"
    )
    _priced(tmp_path, "cheap", 10, 2, 0.1, "r1")
    _priced(tmp_path, "dear", 10, 0, 1.0, "r1")
    cost, overfull = costfloor.floor(path, limit=0.8)
    assert overfull == 0
    assert cost == pytest.approx(2 * 4.6)
    # Up to capacity, the cheap one holds 8: 8 × 0.1 + 2 × 1.0.
    assert costfloor.floor(path, limit=1.0)[0] == pytest.approx(2 * 2.8)


def test_the_floor_keeps_a_workload_on_the_clusters_its_policy_selects(tmp_path: Path) -> None:
    """The policy selects region r2 only: the cheap cluster in r1 is not the floor's."""
    path = write_trace(
        tmp_path, {"cheap": (10, 0), "dear": (10, 0)}, {"web": 4}, "step: 1h\nsteps: 1\n"
    )
    _priced(tmp_path, "cheap", 10, 0, 0.1, "r1")
    _priced(tmp_path, "dear", 10, 0, 1.0, "r2")
    policy = tmp_path / "repo" / "policies" / "web.yaml"
    policy.write_text(
        policy.read_text().replace(
            "  placement:\n",
            "  targetClusters:\n    - {selectorType: label, values: [region=r2]}\n  placement:\n",
        )
    )
    assert costfloor.floor(path, limit=0.8)[0] == pytest.approx(4 * 1.0)


def test_a_step_that_does_not_fit_under_the_limit_is_counted(tmp_path: Path) -> None:
    path = write_trace(tmp_path, {"only": (10, 0)}, {"web": 9}, "step: 1h\nsteps: 1\n")
    _priced(tmp_path, "only", 10, 0, 1.0, "r1")
    cost, overfull = costfloor.floor(path, limit=0.8)
    assert (cost, overfull) == (pytest.approx(9.0), 1)
