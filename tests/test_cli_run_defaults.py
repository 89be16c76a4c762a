"""`dro run` as the README shows it: no `--state-dir`, defaults typed like flags, caches in the
XDG cache directory, and a busy `--listen` port said in one line."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
from pathlib import Path

import pytest

from reconciler import cli, settings
from reconciler.cli import run as cli_run
from tests.conftest import SourceRepo
from tests.service import DRO, Service, wait_for


def test_every_default_goes_through_the_flags_conversion(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DRO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    blank = argparse.Namespace(**{option.dest: None for option in cli_run.OPTIONS})
    values = cli_run.resolve(blank, {}, {})
    for option in cli_run.OPTIONS:
        default = option.shown_default
        if default is None:
            assert values[option.dest] is None
            continue
        assert isinstance(default, str), f"--{option.name}'s default is written as a flag is"
        flag = cli_run.resolve(argparse.Namespace(**{**vars(blank), option.dest: default}), {}, {})
        assert values[option.dest] == flag[option.dest], option.name
        assert type(values[option.dest]) is type(flag[option.dest]), option.name
    assert values["state_dir"] == tmp_path / "cache" / "dro"
    assert (values["interval"], values["leader_elect"], values["parallel"]) == (60.0, True, 8)


def test_the_state_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DRO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert settings.default_state_dir() == tmp_path / "dro"
    assert settings.Settings().state_dir == tmp_path / "dro"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings.default_state_dir() == tmp_path / "home" / ".cache" / "dro"
    monkeypatch.setenv("DRO_STATE_DIR", "/var/lib/dro")
    assert settings.default_state_dir() == Path("/var/lib/dro")


def test_the_container_keeps_var_lib_dro() -> None:
    root = Path(__file__).resolve().parent.parent
    assert "DRO_STATE_DIR=/var/lib/dro" in (root / "Dockerfile").read_text()
    deployment = (root / "deploy" / "deployment.yaml").read_text()
    assert "DRO_STATE_DIR" in deployment
    assert "/var/lib/dro" in deployment


def test_cli_caches_go_to_the_xdg_cache_not_the_working_directory(
    source_repo: SourceRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("DRO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    workdir = tmp_path / "here"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    assert cli.main(["schedule", "--repo", str(source_repo.bare), "-o", "json"]) == 0
    assert list(workdir.iterdir()) == []
    assert any((tmp_path / "cache" / "dro").iterdir())


def test_run_without_state_dir_passes(source_repo: SourceRepo, tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "DRO_STATE_DIR": ""}
    workdir = tmp_path / "here"
    workdir.mkdir()
    running = Service(
        workdir,
        *("--repo", str(source_repo.bare), "--interval", "10m", "--leader-elect=false"),
        env=env,
    )
    try:
        wait_for(lambda: running.metric("dro_reconcile_total", result="success") == 1, "a pass")
        assert running.metric("dro_reconcile_total", result="failure") == 0
    finally:
        running.close()
    assert source_repo.branch_sha("dro/rendered") is not None
    assert not (workdir / ".dro-state").exists()
    assert any((tmp_path / "cache" / "dro").iterdir())


def test_a_busy_listen_port_is_one_line(source_repo: SourceRepo, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [DRO, "run", "--repo", str(source_repo.bare), "--listen", f"127.0.0.1:{port}"]
        command += ["--leader-elect=false", "--state-dir", str(tmp_path / "state")]
        done = subprocess.run(
            command,
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "DRO_LOG_FORMAT": ""},
        )
    assert done.returncode == 1
    assert done.stderr == f"dro run: --listen 127.0.0.1:{port}: Address already in use\n"
    assert "Traceback" not in done.stdout
