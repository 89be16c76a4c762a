"""`reconciler.review.chart`: the water-level picture `dro plan --chart` writes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reconciler.errors import UsageError
from reconciler.review import chart, plandiff


def _diff() -> plandiff.PlanDiff:
    return plandiff.PlanDiff(
        base=plandiff.Side(ref="main", clusters=("alpha", "bravo")),
        head=plandiff.Side(ref="feature", clusters=("bravo", "charlie")),
        levels=(
            plandiff.LevelChange(cluster="alpha", before={"cpu": 0.5, "memory": 0.4}, after=None),
            plandiff.LevelChange(
                cluster="bravo",
                before={"cpu": 0.6, "memory": 0.3, "ephemeral-storage": 0.0},
                after={"cpu": 1.2, "memory": 0.7, "nvidia.com/gpu": 0.25},
            ),
            plandiff.LevelChange(cluster="charlie", before=None, after={"cpu": 0.1, "memory": 0.2}),
        ),
    )


def test_svg_shows_title_clusters_and_resources(tmp_path: Path) -> None:
    path = tmp_path / "out" / "levels.SVG"
    chart.write(_diff(), path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<?xml")
    assert "<svg" in text
    assert "Water levels: main → feature" in text
    for name in ("alpha", "bravo", "charlie", "added", "removed", "cpu", "memory"):
        assert name in text
    assert "nvidia.com/gpu" in text
    assert "ephemeral-storage" not in text


def test_png_has_png_signature(tmp_path: Path) -> None:
    path = tmp_path / "levels.png"
    chart.write(_diff(), path)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_same_input_gives_identical_bytes(tmp_path: Path, suffix: str) -> None:
    first, second = tmp_path / f"first{suffix}", tmp_path / f"second{suffix}"
    chart.write(_diff(), first)
    chart.write(_diff(), second)
    assert first.read_bytes()
    assert first.read_bytes() == second.read_bytes()


def test_unknown_suffix_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "levels.jpg"
    with pytest.raises(UsageError, match=r"levels\.jpg.*\.svg.*\.png"):
        chart.write(_diff(), path)
    assert not path.exists()


def test_no_levels_still_writes_a_figure(tmp_path: Path) -> None:
    diff = plandiff.PlanDiff(base=plandiff.Side(ref="main"), head=plandiff.Side(ref="broken"))
    path = tmp_path / "empty.svg"
    chart.write(diff, path)
    text = path.read_text(encoding="utf-8")
    assert "no water levels to show" in text
    assert "Water levels: main → broken" in text


def test_limit_and_deltas_are_drawn(tmp_path: Path) -> None:
    diff = _diff()
    limited = replace(
        diff, head=replace(diff.head, water_level_limits={"cpu": 0.85, "memory": 0.9})
    )
    path = tmp_path / "limits.svg"
    chart.write(limited, path)
    text = path.read_text(encoding="utf-8")
    assert "limit 85%" in text
    assert "limit 90%" in text
    assert "+60.0 pp" in text, "bravo's cpu: 60 % → 120 %"
    assert "+40.0 pp" in text, "bravo's memory: 30 % → 70 %"
    assert chart.delta(diff.levels[0], "cpu") is None, "alpha is removed: no delta"
    unlimited = tmp_path / "unlimited.svg"
    chart.write(diff, unlimited)
    assert "limit " not in unlimited.read_text(encoding="utf-8").replace("water-level limit", "")
