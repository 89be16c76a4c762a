"""What a user sees in a terminal: stdout carries only data, even with the spinner on; tables
never cut a name at 80, 100 or 120 columns and print plain columns when piped; reconcile says
each failure once and logs for people unless asked for JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reconciler import cli
from reconciler.cli import progress, report
from reconciler.domain import Decision, Placed, ResourceKey
from reconciler.review import tables
from tests.conftest import EXAMPLE, SourceRepo, git
from tests.terminal import dro, run

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BOX = set("┌┐└┘│─┼├┤┬┴━┃")
CLUSTERS = (
    "ap-south-1",
    "ap-south-staging",
    "eu-west-1",
    "eu-west-2",
    "us-east-1",
    "us-east-2",
    "us-east-gpu",
)


def test_schedule_json_redirected_from_a_terminal_is_the_json(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    code, shown = run(f"{dro('schedule', str(EXAMPLE), '-o', 'json')} > {out}")
    assert code == 0, shown
    assert len(json.loads(out.read_text())["decisions"]) > 10
    assert '"decisions"' not in shown, "the data went to the terminal, not the file"


def test_schedule_json_piped_from_a_terminal_parses(tmp_path: Path) -> None:
    check = "python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"decisions\"]))'"
    code, shown = run(f"{dro('schedule', str(EXAMPLE), '-o', 'json')} | {check}")
    assert code == 0, shown
    assert re.search(r"^\d+$", ANSI.sub("", shown).replace("\r", "\n"), re.M), shown


def test_plan_redirected_from_a_terminal_writes_the_markdown(
    source_repo: SourceRepo, tmp_path: Path
) -> None:
    git(source_repo.work, "checkout", "--quiet", "-b", "feature")
    frontend = source_repo.work / "workloads/shop/frontend.yaml"
    frontend.write_text(frontend.read_text().replace("replicas: 6", "replicas: 8", 1))
    git(source_repo.work, "commit", "--quiet", "-am", "scale")
    plan_md = tmp_path / "plan.md"
    command = dro("plan", "--repo", str(source_repo.work), "--base", "main", "--head", "feature")
    code, shown = run(f"cd {tmp_path} && {command} > {plan_md}")
    assert code == 0, shown
    assert "frontend" in plan_md.read_text()


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_schedule_table_in_a_terminal_cuts_no_name(columns: int) -> None:
    code, shown = run(dro("schedule", str(EXAMPLE)), columns=columns)
    assert code == 0, shown
    text = ANSI.sub("", shown)
    assert "…" not in text
    for cluster in CLUSTERS:
        assert re.search(rf"(^|[\s│]){re.escape(cluster)}([\s│]|$)", text, re.M), cluster
    assert "shop/Deployment.apps/frontend" in text
    assert max(len(line.rstrip("\r")) for line in text.splitlines()) <= columns
    counts = re.findall(r"frontend\s*│?\s+(\d+)", text)
    assert counts, "the replica counts are shown"


def test_schedule_table_piped_is_plain_aligned_columns() -> None:
    code, shown = run(dro("schedule", str(EXAMPLE)) + " | cat", columns=80)
    assert code == 0
    lines = ANSI.sub("", shown).replace("\r", "").splitlines()
    assert not BOX & set("".join(lines))
    header = next(line for line in lines if line.startswith("WORKLOAD"))
    assert header.split() == ["WORKLOAD", *CLUSTERS]
    row = next(line for line in lines if line.startswith("ml/Deployment.apps/recommender"))
    assert row.split() == ["ml/Deployment.apps/recommender", "·", "·", "·", "·", "·", "·", "4"]


def test_a_narrow_terminal_gets_one_block_per_cluster() -> None:
    key = ResourceKey(group="apps", kind="Deployment", namespace="shop", name="web")
    decision = Decision(
        key=key,
        api_version="apps/v1",
        policy=None,
        clusters=(Placed("us-east-1-long-cluster-name", 2), Placed("eu-west-1", 1)),
    )
    grid = report.placement_table([decision], ["eu-west-1", "us-east-1-long-cluster-name"])
    assert tables.boxed_width(grid) > 40
    text = tables.blocks(grid.narrow or grid)
    assert "CLUSTER us-east-1-long-cluster-name\n  shop/Deployment.apps/web  2" in text


def test_reconcile_logs_for_people_and_json_behind_a_flag(
    source_repo: SourceRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["reconcile", "--once", "--repo", str(source_repo.bare)]
    args += ["--state-dir", str(tmp_path / "state"), "-v"]
    assert cli.main(args) == 0
    captured = capsys.readouterr()
    assert not any(line.startswith("{") for line in captured.out.splitlines())
    assert not any(line.startswith("{") for line in captured.err.splitlines())
    assert "info: committed " in captured.err
    source_repo.write(
        {
            "workloads/shop/extra.yaml": "apiVersion: v1\nkind: ConfigMap\n"
            "metadata: {name: extra, namespace: shop}\n"
        }
    )
    source_repo.commit("one more")
    assert cli.main([*args, "--log-format", "json"]) == 0
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert "committed" in {e["event"] for e in events}
    assert not any(line.startswith("{") for line in captured.out.splitlines())


@pytest.mark.parametrize("columns", [80, 140])
def test_plan_in_a_terminal_cuts_no_name(source_repo: SourceRepo, columns: int) -> None:
    """The plan's placements never cut a workload's name: a table when it fits, wrapped,
    else one block per workload; no line is wider than the terminal (none is cropped)."""
    git(source_repo.work, "checkout", "--quiet", "-b", "wide")
    frontend = source_repo.work / "workloads/shop/frontend.yaml"
    frontend.write_text(frontend.read_text().replace("replicas: 6", "replicas: 9", 1))
    git(source_repo.work, "commit", "--quiet", "-am", "scale")
    command = dro("plan", "--repo", str(source_repo.work), "--base", "main", "--head", "wide")
    code, shown = run(command, columns=columns)
    assert code == 0, shown
    text = ANSI.sub("", shown)
    assert "shop/Deployment.apps/frontend" in text
    assert "replicas changed from 6 to 9" in text
    # the spinner redraws its line with a carriage return: each frame is a line of its own
    assert max(len(line) for line in re.split(r"[\r\n]", text)) <= columns


def test_writelines_on_stdout_stops_the_spinner_first() -> None:
    """`dro diff` writes its unified diffs with `writelines`: the spinner must stop before
    them as it does before `write`, or its last frame stays on the data's first line."""
    written: list[str] = []
    stops: list[int] = []

    class Stream:
        def write(self, text: str) -> int:
            written.append(("stopped " if stops else "spinning ") + text)
            return len(text)

    out = progress._StopOnWrite(Stream(), lambda: stops.append(1))  # type: ignore[arg-type]
    out.writelines(["--- live\n", "+++ rendered\n"])
    assert stops == [1]
    assert written == ["stopped --- live\n", "stopped +++ rendered\n"]
