"""One settings table serves every command: `dro run` and the one-pass commands read the same
`DRO_*` variables, convert a default as they convert a flag, and only `settings/__init__.py`
reads the environment."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from reconciler import cli, settings
from reconciler.cli import run as cli_run

ROOT = Path(__file__).resolve().parent.parent


def _flags(command: str) -> dict[str, argparse.Action]:
    parser = cli.build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub = commands.choices[command]
    return {o: a for a in sub._actions for o in a.option_strings if o.startswith("--")}


def test_every_default_converts_as_its_flag_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    table = tuple(settings.TABLE.values())
    defaults = settings.resolve(table, {}, environ={})
    for setting in table:
        shown = setting.shown_default
        if shown is None:
            assert defaults[setting.dest] is None, setting.name
            continue
        if setting.at_parse:
            flag = settings.resolve((setting,), {setting.dest: shown}, environ={})
            assert defaults[setting.dest] == flag[setting.dest], setting.name
            assert type(defaults[setting.dest]) is type(flag[setting.dest]), setting.name
    assert defaults["state_dir"] == tmp_path / "dro"


def test_reconcile_reads_the_environment_as_run_does(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"DRO_IN_CLUSTER": "yes", "DRO_PARALLEL": "3", "DRO_MOVE_WAIT": "2m"}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DRO_GIT_CREDENTIALS_FILE", "/run/secrets/git")
    args = cli.build_parser().parse_args(["reconcile", "--once", "--repo", "x"])
    table = cli._SETTINGS["reconcile"]
    values = settings.resolve(table, vars(args), flags_converted=True)
    assert values["in_cluster"] is True, "DRO_IN_CLUSTER=yes means true, as --in-cluster=yes"
    assert (values["parallel"], values["move_wait"]) == (3, 120.0)
    assert values["git_credentials_file"] == Path("/run/secrets/git")
    run = settings.resolve(settings.pick("in-cluster", "parallel", "move-wait"), {})
    assert (run["in_cluster"], run["parallel"], run["move_wait"]) == (True, 3, 120.0)


def test_a_flag_beats_the_environment_on_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRO_PARALLEL", "3")
    monkeypatch.setenv("DRO_IN_CLUSTER", "true")
    args = cli.build_parser().parse_args(
        ["reconcile", "--once", "--parallel", "5", "--in-cluster=false"]
    )
    values = settings.resolve(cli._SETTINGS["reconcile"], vars(args), flags_converted=True)
    assert (values["parallel"], values["in_cluster"]) == (5, False)


def test_a_bad_environment_value_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("DRO_MOVE_WAIT", "soon")
    argv = ["reconcile", "--once", "--repo", str(tmp_path), "--state-dir", str(tmp_path)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    said = "not a duration: 'soon' (expected e.g. 30s, 10m, 1h30m)"
    assert err == f"dro reconcile: DRO_MOVE_WAIT: {said}\n"


def test_shared_settings_say_the_same_on_run_and_reconcile() -> None:
    run, reconcile = _flags("run"), _flags("reconcile")
    shared = sorted(set(run) & set(reconcile) - {"--help", "--log-format", "--verbose", "--quiet"})
    assert len(shared) == 13, shared
    for flag in shared:
        assert run[flag].help == reconcile[flag].help, flag
        name = flag.removeprefix("--")
        assert f"[env {settings.TABLE[name].env}]" in (run[flag].help or ""), flag


def test_no_command_lost_a_flag() -> None:
    source = {"--repo", "--ref", "--state-dir", "--git-credentials-file", "--guard"}
    clusters = {"--kubeconfig", "--in-cluster", "--cluster-timeout", "--parallel", "--move-wait"}
    clusters |= {"--status-interval"}
    assert source | clusters | {"--once", "--output-branch", "--no-push"} <= set(
        _flags("reconcile")
    )
    for command in ("validate", "schedule", "render", "explain"):
        assert source <= set(_flags(command)), command
    plan = {"--base", "--head", "--output-branch", "--chart", "--exit-code", "--output"}
    assert plan | source - {"--ref"} <= set(_flags("plan"))
    assert {"--config"} | {f"--{s.name}" for s in cli_run.OPTIONS} <= set(_flags("run"))


def test_only_settings_reads_the_environment() -> None:
    reading = re.compile(r"os\.environ|getenv|settings\.env\(")
    found = [
        str(module.relative_to(ROOT))
        for module in sorted((ROOT / "reconciler").rglob("*.py"))
        if module.relative_to(ROOT) != Path("reconciler/settings/__init__.py")
        and reading.search(module.read_text(encoding="utf-8"))
    ]
    assert found == []
