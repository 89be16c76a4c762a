"""kubectl's habits: global flags anywhere, usage errors exit 1, one-line internal errors,
`-o json|yaml|table` everywhere (validate included), bool flags bare, help on every flag,
short names and "did you mean" in explain, shell completion, and `dro version`."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from reconciler import cli, schedule
from reconciler.cli import completion
from tests.conftest import EXAMPLE, EXAMPLE_WARNING
from tests.terminal import DRO


def test_global_flags_work_before_and_after_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (
        ["-v", "validate", str(EXAMPLE)],
        ["validate", str(EXAMPLE), "-v"],
        ["validate", "-v", str(EXAMPLE), "--log-format", "json"],
        ["--log-format", "json", "validate", str(EXAMPLE), "-q"],
    ):
        assert cli.main(argv) == 0, argv
    args = cli.build_parser().parse_args(["-v", "schedule", str(EXAMPLE)])
    assert args.verbose is True, "a flag before the command is not reset by the command"
    args = cli.build_parser().parse_args(["schedule", str(EXAMPLE), "-q", "--log-format=json"])
    assert (args.quiet, args.log_format) == (True, "json")


@pytest.mark.parametrize(
    "argv",
    [
        ["schedul"],
        ["schedule", "--bogus"],
        ["schedule", "-o", "xml"],
        [],
        ["reconcile", "--once", "--in-cluster=maybe"],
    ],
)
def test_usage_errors_exit_1_not_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "usage: dro" in err
    assert "error:" in err


def test_a_mistyped_command_gets_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["schedul", "."])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.endswith("; did you mean 'schedule'?\n")


def test_an_abbreviated_flag_is_refused_with_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["reconcile", "--once", "--rep", "/nonexistent"])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.endswith(
        "unrecognized arguments: --rep; did you mean '--repo'?\n"
    )


def test_an_unknown_flag_far_from_every_flag_gets_no_guess(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["schedule", "--bogus"])
    assert capsys.readouterr().err.endswith("unrecognized arguments: --bogus\n")


def test_an_unexpected_exception_is_one_line_and_the_traceback_needs_v(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("the scheduler fell over\nsecond line")

    monkeypatch.setattr(schedule, "place_and_project", broken)
    assert cli.main(["schedule", str(EXAMPLE)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "dro schedule: internal error: RuntimeError: the scheduler fell over "
        "(run with -v for the traceback)\n"
    )
    assert cli.main(["schedule", str(EXAMPLE), "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith("dro schedule: internal error: RuntimeError: the scheduler fell over\n")


@pytest.mark.parametrize("command", ["validate", "schedule", "explain", "version"])
def test_output_json_and_yaml_parse_on_every_command(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {
        "validate": [str(EXAMPLE)],
        "schedule": [str(EXAMPLE)],
        "explain": [str(EXAMPLE), "shop/deploy/frontend"],
        "version": [],
    }[command]
    assert cli.main([command, *args, "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert cli.main([command, *args, "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json


def test_validate_o_json_lists_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    frontend = repo / "workloads/shop/frontend.yaml"
    frontend.write_text(frontend.read_text().replace("replicas: 6", "replicas: six", 1))
    assert cli.main(["validate", str(repo), "-o", "json"]) == 1
    captured = capsys.readouterr()
    problems = json.loads(captured.out)
    assert problems, captured
    (problem,) = [p for p in problems if p["file"] == "workloads/shop/frontend.yaml"]
    assert set(problem) == {"file", "line", "pointer", "message", "severity"}
    assert problem["pointer"] == "/spec/replicas"
    assert problem["severity"] == "error"
    assert isinstance(problem["line"], int)
    assert problem["line"] > 1
    assert cli.main(["validate", str(EXAMPLE), "-o", "json"]) == 0
    (warning,) = json.loads(capsys.readouterr().out)  # the demo Secret is plaintext
    assert warning["severity"] == "warning"
    line = f"{warning['file']}:{warning['line']}: {warning['pointer']}: warning: "
    assert (line + warning["message"]).startswith(EXAMPLE_WARNING)


def test_a_bad_setting_of_run_exits_1_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--leader-elect=maybe", "--repo", "x"]) == 1
    assert capsys.readouterr().err == "dro run: --leader-elect: 'maybe' is not true or false\n"


def test_bool_flags_work_bare_and_with_a_value() -> None:
    parser = cli.build_parser()
    for given, expected in (
        (["--leader-elect"], "true"),
        (["--leader-elect=false"], "false"),
        (["--leader-elect", "false"], "false"),
        ([], None),
    ):
        args = parser.parse_args(["run", *given])
        assert args.leader_elect == expected, given
    assert parser.parse_args(["reconcile", "--once", "--in-cluster"]).in_cluster is True
    assert parser.parse_args(["reconcile", "--once", "--in-cluster=false"]).in_cluster is False


def _actions(parser: argparse.ArgumentParser, where: str = "dro") -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _actions(sub, f"{where} {name}")
            continue
        found.append((f"{where} {'/'.join(action.option_strings) or action.dest}", action))
    return found


def test_every_flag_and_argument_has_help() -> None:
    actions = _actions(cli.build_parser())
    assert len(actions) > 80
    missing = [name for name, action in actions if not getattr(action, "help", None)]
    assert missing == []


def test_help_shows_durations_as_people_write_them(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "(default: 60s)" in shown
    assert "(default: 10m)" in shown
    assert "60.0" not in shown
    assert "600.0" not in shown


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        ("shop/deploy/frontend", "shop/Deployment.apps/frontend"),
        ("shop/deployments/frontend", "shop/Deployment.apps/frontend"),
        ("shop/svc/frontend", "shop/Service/frontend"),
        ("shop/cm/frontend-config", "shop/ConfigMap/frontend-config"),
        ("platform/ds/log-shipper", "platform/DaemonSet.apps/log-shipper"),
        ("platform/cj/cert-rotation", "platform/CronJob.batch/cert-rotation"),
    ],
)
def test_explain_takes_kubectl_short_names(
    asked: str, found: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["explain", str(EXAMPLE), asked]) == 0
    assert capsys.readouterr().out.startswith(found)


def test_explain_says_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", str(EXAMPLE), "shop/deploy/fronted"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "dro explain: no workload shop/deploy/fronted in the source; "
        "did you mean shop/Deployment.apps/frontend?\n"
    )


def test_version_command_and_flag_agree(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["version"]) == 0
    said = capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out == said
    assert said.startswith("dro ")


def _complete(script: Path, *words: str) -> list[str]:
    """What bash's completion offers after `dro WORDS…` (the last word being typed)."""
    line = " ".join(["dro", *words])
    program = (
        f"source {script}\n"
        f"COMP_WORDS=(dro {' '.join(words)}); COMP_CWORD={len(words)}; COMP_LINE='{line}'\n"
        f"{completion.FUNCTION}\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.split()


def test_bash_completion_is_valid_and_completes(tmp_path: Path) -> None:
    script = tmp_path / "dro.bash"
    done = subprocess.run(
        [DRO, "completion", "bash"], capture_output=True, text=True, check=True, timeout=60
    )
    script.write_text(done.stdout)
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    assert _complete(script, "sch") == ["schedule"]
    assert _complete(script, "-v", "ex") == ["explain"]
    assert _complete(script, "schedule", "-o", "") == ["json", "yaml", "table"]
    assert "--leader-elect" in _complete(script, "run", "--lea")
    assert _complete(script, "run", "--leader-elect", "f") == ["false"]
    assert _complete(script, "--log-format", "json", "ver") == ["version"]
    assert _complete(script, "completion", "") == ["bash", "zsh", "fish"]


def test_zsh_and_fish_scripts_name_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for shell in ("zsh", "fish"):
        assert cli.main(["completion", shell]) == 0
        script = capsys.readouterr().out
        for command in ("validate", "schedule", "explain", "plan", "run", "version"):
            assert command in script, (shell, command)
    assert cli.main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out
    assert "__fish_seen_subcommand_from schedule' -l output -xa 'json yaml table'" in fish
