"""Fixtures of the API contract tests: the emulator, or the cluster DRO_E2E_KUBECONFIG names
(its context DRO_E2E_CONTEXT, else its current one), and clients to it; each test gets its own
namespace. `make e2e` runs them against a real cluster it starts (tests/e2e/test_contract.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.contract.helpers import E2E_CONTEXT, E2E_KUBECONFIG, unique
from tests.kubeapi import KubeAPI

# Fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
def emulator() -> Iterator[KubeAPI | None]:
    """A running emulator with three 8-CPU/32Gi Nodes, or None against a real cluster."""
    if E2E_KUBECONFIG:
        yield None
        return
    with KubeAPI(nodes=3, node_cpu="8", node_memory="32Gi") as api:
        yield api


@pytest.fixture
def api(emulator: KubeAPI | None) -> KubeAPI:
    """The emulator itself, for tests marked `emulator_only`."""
    assert emulator is not None, "mark tests that use the `api` fixture with @emulator_only"
    return emulator


@pytest.fixture
def api_client(emulator: KubeAPI | None, tmp_path: Path) -> Iterator[ApiClient]:
    """An ApiClient built from a kubeconfig file, as the reconciler builds its clients."""
    if emulator is None:
        built = config.new_client_from_config(config_file=E2E_KUBECONFIG, context=E2E_CONTEXT)
    else:
        kubeconfig = emulator.kubeconfig(tmp_path / "kubeconfig", context="c1")
        built = config.new_client_from_config(config_file=str(kubeconfig), context="c1")
    yield built
    built.close()


@pytest.fixture
def dyn(api_client: ApiClient, tmp_path: Path) -> DynamicClient:
    """A DynamicClient with its discovery cache in the test's temporary directory."""
    return DynamicClient(api_client, cache_file=str(tmp_path / "discovery.json"))


@pytest.fixture
def core(api_client: ApiClient) -> client.CoreV1Api:
    """The typed core/v1 API."""
    return client.CoreV1Api(api_client)


@pytest.fixture
def make_namespace(core: client.CoreV1Api) -> Iterator[Callable[[], str]]:
    """Create uniquely named namespaces on demand; delete them afterwards."""
    created: list[str] = []

    def make() -> str:
        name = unique("kubeapi-contract")
        core.create_namespace({"metadata": {"name": name}})
        created.append(name)
        return name

    yield make
    for name in created:
        try:
            core.delete_namespace(name)
        except ApiException as error:
            if error.status != 404:
                raise


@pytest.fixture
def namespace(make_namespace: Callable[[], str]) -> str:
    """One fresh namespace for the test."""
    return make_namespace()
