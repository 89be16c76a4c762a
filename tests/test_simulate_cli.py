"""`dro simulate` on the command line: the same bytes twice, located errors, flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler import cli
from reconciler.simulate import policies
from tests.builders.simulate import SMALL, cluster_yaml, write_trace


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_same_trace_gives_the_same_bytes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = run(capsys, "simulate", str(SMALL), "-o", "json", "--plot", str(tmp_path / "a.png"))
    second = run(capsys, "simulate", str(SMALL), "-o", "json", "--plot", str(tmp_path / "b.png"))
    assert first[0] == second[0] == 0
    assert first[1] == second[1]
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    document = json.loads(first[1])
    assert document["trace"] == {
        "name": "small",
        "steps": 12,
        "step": "2h",
        "start": "2025-01-06T00:00:00Z",
        "clusters": 5,
        "workloads": 3,
    }
    assert [p["policy"] for p in document["policies"]] == list(policies.POLICIES)
    assert "wrote the water-level chart" in first[2]
    table = run(capsys, "simulate", str(SMALL))
    assert table[1].splitlines()[0].split()[:3] == ["policy", "overload", "peak"]
    assert [line.split()[0] for line in table[1].splitlines()[1:]] == list(policies.POLICIES)


def test_a_bad_trace_is_reported_at_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_trace(
        tmp_path,
        {"a": (10, 1)},
        {"web": 2},
        """\
        step: 1h
        steps: 0
        events:
          - step: 0
            clusters: {nowhere: {drain: true}}
        """,
    )
    code, out, err = run(capsys, "simulate", str(path))
    assert code == 1
    assert out == ""
    assert f"{path}:8: /spec/steps: 0 is out of range" in err
    assert "Traceback" not in err
    path.write_text(path.read_text().replace("steps: 0", "steps: 3"))
    code, _, err = run(capsys, "simulate", str(path))
    assert code == 1
    assert f"{path}:11: /spec/events/0/clusters/nowhere: no cluster 'nowhere'" in err


def test_an_added_cluster_file_is_validated_where_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = cluster_yaml("c", 10, 0).replace("cpu: '10'", "cpu: ten")
    path = write_trace(
        tmp_path,
        {"a": (10, 1)},
        {"web": 2},
        """\
        step: 1h
        steps: 3
        events:
          - {step: 1, add: [extra/c.yaml]}
        """,
        {"extra/c.yaml": bad},
    )
    code, _, err = run(capsys, "simulate", str(path))
    assert code == 1
    assert str(tmp_path / "extra" / "c.yaml") + ":" in err
    assert "/spec/capacity/cpu" in err


def test_usage_and_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "simulate", str(SMALL), "--policies", "dro,nobody")
    assert code == 1
    assert "unknown policy nobody" in err
    code, _, err = run(capsys, "simulate", str(SMALL), "--plot", str(tmp_path / "x.gif"))
    assert code == 1
    assert "x.gif: cannot tell the chart format" in err
    code, out, _ = run(
        capsys, "simulate", str(SMALL), "--policies", "least-loaded,dro", "-o", "json"
    )
    assert code == 0
    assert [p["policy"] for p in json.loads(out)["policies"]] == ["dro", "least-loaded"]


def test_an_added_cluster_may_not_shadow_a_source_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_trace(
        tmp_path,
        {"a": (10, 1)},
        {"web": 2},
        """\
        step: 1h
        steps: 3
        events:
          - step: 1
            add: [extra/a.yaml]
        """,
        {"extra/a.yaml": cluster_yaml("a", 20, 0)},
    )
    code, _, err = run(capsys, "simulate", str(path))
    assert code == 1
    assert (
        f"{path}:11: /spec/events/0/add/0: extra/a.yaml: the source already has clusters/a.yaml"
        in err
    )
