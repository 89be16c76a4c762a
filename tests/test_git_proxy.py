"""dro reaches an https remote through the proxy the environment names, as git does
(`gitrepo.proxy_for`): `https_proxy` in either case, never for a host `no_proxy` names, never
for git://, ssh or local remotes. libgit2 alone uses no proxy."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reconciler.git import gitrepo

DRO = str(Path(sys.executable).parent / "dro")
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy variable in either case, whatever the machine running the tests sets."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("https://github.com/team/fleet.git", "http://proxy.corp:3128"),
        ("https://x-access-token:t0ken@github.com/team/fleet.git", "http://proxy.corp:3128"),
        ("http://git.corp/fleet.git", "http://plain.corp:8080"),
        ("https://git.internal.corp/fleet.git", None),  # no_proxy: .internal.corp
        ("https://127.0.0.1:8443/fleet.git", None),  # no_proxy: 127.0.0.1
        ("git://git.corp/fleet.git", None),
        ("ssh://git@git.corp/fleet.git", None),
        ("file:///srv/fleet.git", None),
        ("/srv/fleet.git", None),
    ],
)
def test_the_proxy_is_chosen_as_git_chooses_it(
    clean_environment: pytest.MonkeyPatch, url: str, want: str | None
) -> None:
    clean_environment.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    clean_environment.setenv("http_proxy", "http://plain.corp:8080")
    clean_environment.setenv("no_proxy", ".internal.corp,127.0.0.1")
    assert gitrepo.proxy_for(url) == want


def test_no_proxy_in_the_environment_means_a_direct_connection(
    clean_environment: pytest.MonkeyPatch,
) -> None:
    assert gitrepo.proxy_for("https://github.com/team/fleet.git") is None


@contextmanager
def listening() -> Iterator[tuple[int, list[bytes]]]:
    """A proxy that takes each connection, keeps what the client sent first, and closes it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(30)
    heard: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                client.settimeout(5)
                heard.append(client.recv(1024))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1]), heard
    finally:
        server.close()
        thread.join(timeout=10)


def test_a_fetch_of_an_https_remote_goes_through_the_proxy(
    tmp_path: Path, clean_environment: pytest.MonkeyPatch
) -> None:
    """The remote's host does not resolve (`.invalid`): a request that reaches the proxy
    went through it. The proxy here hangs up, so the fetch fails, as one clear line."""
    url = "https://git.invalid/fleet.git"
    with listening() as (port, heard):
        proxy = f"http://ops:proxy-s3cret@127.0.0.1:{port}"
        environment = {**os.environ, "HTTPS_PROXY": proxy}
        through = dro(["validate", "--repo", url], tmp_path, environment)
        assert any(b"CONNECT git.invalid:443 " in first for first in heard), heard
        heard.clear()
        direct = dro(
            ["validate", "--repo", url], tmp_path, {**environment, "NO_PROXY": "git.invalid"}
        )
        assert not heard, "a host no_proxy names is reached directly"
    for done in (through, direct):
        assert done.returncode == 1
        assert done.stderr.startswith(
            "dro validate: fetch from https://git.invalid/fleet.git failed"
        )
        assert "Traceback" not in done.stderr
        assert "proxy-s3cret" not in done.stdout + done.stderr
    assert "resolve" in direct.stderr


def dro(
    arguments: list[str], tmp: Path, environment: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DRO, *arguments, "--state-dir", str(tmp / "state")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
