"""Shared fixtures: real git repositories in temporary directories, a real `git daemon`, and
the repository the `dro plan` tests review (`reviewed`).

The daemon binds to 127.0.0.1 on a free port, is started under `timeout` so it stops by
itself, is waited for by polling its port (no sleeps), and is killed by its PID at teardown.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler import pipeline, settings
from reconciler.kube import client as kube
from tests.builders.plan import CASES
from tests.kubeapi import KubeAPI

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "example-repo"
TOOLS = ROOT / "build" / "tools" / "bin"
"""The pinned kustomize and helm that `make tools` builds (scripts/tools-build.sh): first on
PATH for every test, so the Helm and kustomize sources build with the versions dro pins."""
os.environ["PATH"] = f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}"


def build_tools() -> Path:
    """build/tools/bin with kustomize and helm in it, built now when `make tools` has not run
    (a cached no-op otherwise): the tests that need them never skip."""
    if not ((TOOLS / "kustomize").is_file() and (TOOLS / "helm").is_file()):
        subprocess.run(["bash", str(ROOT / "scripts" / "tools-build.sh")], check=True)
    return TOOLS


EXAMPLE_WARNING = "workloads/payments/ledger-db.yaml:22: /stringData: warning: a plaintext Secret"
"""The start of the one warning `dro validate example-repo` prints: its demo Secret is plaintext."""


def without_example_warning(lines: list[str]) -> list[str]:
    """Output lines without the example repo's plaintext-Secret warning."""
    return [line for line in lines if not line.startswith(EXAMPLE_WARNING)]


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def git(cwd: Path, *args: str) -> str:
    """Run the git CLI in tests (the product itself never does)."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    return done.stdout.strip()


@dataclass
class SourceRepo:
    """A bare "remote" plus a work tree that pushes to it."""

    bare: Path
    work: Path

    def write(self, files: Mapping[str, str | None]) -> None:
        """Write (or delete, for None) files in the work tree."""
        for relative, text in files.items():
            target = self.work / relative
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)

    def commit(self, message: str = "change") -> str:
        """Commit everything and push main; return the new sha."""
        git(self.work, "add", "--all")
        git(self.work, "commit", "--quiet", "--allow-empty", "-m", message)
        git(self.work, "push", "--quiet", "origin", "main")
        return git(self.work, "rev-parse", "HEAD")

    def branch_sha(self, branch: str) -> str | None:
        """The sha of a branch in the bare repo, or None."""
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            cwd=self.bare,
            check=False,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip() or None


def make_source_repo(tmp: Path, content: Path | None = EXAMPLE) -> SourceRepo:
    """A bare repo whose main holds `content` (the example repo by default)."""
    bare = tmp / "remote.git"
    work = tmp / "work"
    tmp.mkdir(parents=True, exist_ok=True)
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    if content is not None:
        # example-repo/README.md is a tour for people, not part of the fleet: leaving it out
        # keeps the commits, and the shas the plan goldens show, those of the fleet alone.
        shutil.copytree(content, work)
        if content == EXAMPLE:
            (work / "README.md").unlink()
    else:
        work.mkdir()
    git(work, "init", "--quiet", "--initial-branch=main")
    git(work, "remote", "add", "origin", str(bare))
    repo = SourceRepo(bare=bare, work=work)
    repo.commit("initial")
    return repo


@pytest.fixture
def source_repo(tmp_path: Path) -> SourceRepo:
    """The example repo committed to a fresh bare repository."""
    return make_source_repo(tmp_path)


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> SourceRepo:
    """The example repo with an output branch from a real pass, and one branch per case."""
    tmp = tmp_path_factory.mktemp("plan")
    repo = make_source_repo(tmp)
    pipeline.reconcile_once(settings.Settings(repo=str(repo.bare), state_dir=tmp / "state"))
    git(repo.work, "fetch", "--quiet", "origin")
    for case, change in CASES.items():
        git(repo.work, "checkout", "--quiet", "-b", case, "main")
        change(repo.work)
        git(repo.work, "add", "--all")
        git(repo.work, "commit", "--quiet", "-m", case)
    git(repo.work, "checkout", "--quiet", "main")
    return repo


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Daemon:
    """A running `git daemon` serving `base` at git://127.0.0.1:port/."""

    base: Path
    port: int
    pid: int

    def url(self, name: str) -> str:
        """The git:// URL of a repository under `base`."""
        return f"git://127.0.0.1:{self.port}/{name}"


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A real git daemon on 127.0.0.1 with push enabled, killed by PID at teardown."""
    base = tmp_path / "served"
    base.mkdir()
    port = _free_port()
    process = subprocess.Popen(
        [
            "timeout",
            "300",
            "git",
            "daemon",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={base}",
            "--export-all",
            "--enable=receive-pack",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("git daemon did not start") from None
    try:
        yield Daemon(base=base, port=port, pid=process.pid)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


@pytest.fixture
def served_repo(git_daemon: Daemon, tmp_path: Path) -> tuple[SourceRepo, str]:
    """The example repo as a bare repository served by the git daemon, and its URL."""
    repo = make_source_repo(tmp_path / "origin")
    served = git_daemon.base / "fleet.git"
    shutil.move(str(repo.bare), served)
    git(repo.work, "remote", "set-url", "origin", str(served))
    git(served, "symbolic-ref", "HEAD", "refs/heads/main")
    return SourceRepo(bare=served, work=repo.work), git_daemon.url("fleet.git")


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[kube.Connection]:
    """A connection, as dro makes it, to a one-node emulated cluster (context `eu-1`)."""
    server = KubeAPI(nodes=1).start()
    try:
        config = server.kubeconfig(tmp_path / "kubeconfig", context="eu-1")
        connection = kube.connect("eu-1", context="eu-1", kubeconfig=config, timeout=2.0)
        yield connection
        connection.close()
    finally:
        server.stop()
