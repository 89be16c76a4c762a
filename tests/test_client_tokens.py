"""A connection's token: one from the kubeconfig that has no expiry is sent as it is, without
the client's refresh on every request; one that expires (an exec plugin's) is still renewed
before a request once it has expired (`kube.client.connect`)."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from reconciler.kube import client as kube
from tests.kubeapi import KubeAPI


@pytest.fixture
def api() -> Iterator[KubeAPI]:
    server = KubeAPI(nodes=1).start()
    try:
        yield server
    finally:
        server.stop()


def tokens(server: KubeAPI) -> list[str]:
    return [request.token for request in server.stamped if request.path == "/api/v1/nodes"]


def test_a_token_without_expiry_is_sent_as_written(api: KubeAPI, tmp_path: Path) -> None:
    config = api.kubeconfig(tmp_path / "kubeconfig", context="c", token="written")
    connection = kube.connect("c", context="c", kubeconfig=config, timeout=2.0)
    try:
        assert connection._api.configuration.refresh_api_key_hook is None
        for _ in range(3):
            assert len(connection.list("v1", "Node")) == 1
    finally:
        connection.close()
    assert tokens(api) == ["written"] * 3


@pytest.mark.parametrize(("expiry", "renewed"), [("2000-01-01T00:00:00Z", True), (None, False)])
def test_an_exec_token_is_renewed_once_it_has_expired(
    api: KubeAPI, tmp_path: Path, expiry: str | None, renewed: bool
) -> None:
    counter = tmp_path / "runs"
    plugin = tmp_path / "plugin.sh"
    status = {"token": "run-RUN"} | ({"expirationTimestamp": expiry} if expiry else {})
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": status,
    }
    plugin.write_text(
        "#!/bin/sh\n"
        f'echo x >> "{counter}"\n'
        f'RUN=$(wc -l < "{counter}" | tr -d " ")\n'
        f"echo '{json.dumps(credential)}' | sed \"s/RUN/$RUN/\"\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    config = yaml.safe_load(api.kubeconfig(tmp_path / "kubeconfig", context="c").read_text())
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    connection = kube.connect("c", context="c", kubeconfig=tmp_path / "kubeconfig", timeout=2.0)
    try:
        for _ in range(3):
            connection.list("v1", "Node")
    finally:
        connection.close()
    sent = tokens(api)
    assert len(sent) == 3
    if renewed:
        assert len(set(sent)) == 3, "an expired token is renewed before each request"
    else:
        assert sent == ["run-1"] * 3, "a token without expiry is the one the plugin gave"
