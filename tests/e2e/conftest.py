"""The e2e fixtures: three real clusters for the whole session, and clients to them.

Every test under tests/e2e is marked `e2e`, which pyproject's addopts deselect, so `make test`
never starts a cluster and needs no Go; `make e2e` builds the binaries and selects `-m e2e`.
The `fleet` fixture's clusters are FLEET; a module can start others by parametrizing `fleet`
indirectly with a tuple of ClusterSpecs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config
from kubernetes.client import ApiClient

from tests.e2e.controlplane import ClusterSpec, Fleet, StartFailed, start_fleet

HERE = Path(__file__).parent
FLEET = (
    ClusterSpec("e2e-a", nodes=3, cpu="4", memory="16Gi", pods=110),
    ClusterSpec("e2e-b", nodes=2, cpu="8", memory="32Gi", pods=110),
    ClusterSpec("e2e-c", nodes=1, cpu="2", memory="4Gi", pods=10),
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test in this folder `e2e` before `-m` selects (hence tryfirst)."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)


def _report(config: pytest.Config, line: str) -> None:
    """Write a line to the terminal, past pytest's output capture."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(line)


@pytest.fixture(scope="session")
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    """Three started clusters (FLEET, or the specs a test passes as the param); stopped after."""
    specs = getattr(request, "param", FLEET)
    try:
        with start_fleet(specs, tmp_path_factory.mktemp("fleet")) as started:
            _report(
                request.config, f"e2e: {len(specs)} clusters ready in {started.started_in:.1f} s"
            )
            yield started
    except StartFailed as error:
        pytest.fail(str(error))


@pytest.fixture
def clients(fleet: Fleet) -> Iterator[dict[str, ApiClient]]:
    """An ApiClient per context of the fleet's kubeconfig, as dro builds its clients."""
    built = {
        c.name: config.new_client_from_config(config_file=str(fleet.kubeconfig), context=c.name)
        for c in fleet.clusters
    }
    yield built
    for api_client in built.values():
        api_client.close()
