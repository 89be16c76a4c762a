"""Every object `dro render example-repo` writes is accepted by a real API server.

The real `dro render example-repo --out DIR` writes one folder per cluster of example-repo
(clusters/<name>/...). Folder i goes to the fleet's cluster i mod 3, its namespaces renamed
`<namespace>-<folder>` (several folders share a real cluster), and dro's own apply path
(`live.cluster_objects` reading the tree as the pipeline does, then `live.apply.sync` over a
`kube.client.Connection`: server-side apply, field manager dro) applies it. The Multi-Cluster
Services CRDs the ServiceExports and ServiceImports need are installed first, from the upstream
release files in data/mcs-api, with kubectl as a user would.

Each rendered object must come back Synced, be readable from the server with dro's label, and
a second pass over the same folder must write nothing: the server kept what dro sent, so dro's
comparison with the live object sees no drift.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from reconciler import live
from reconciler.domain import ObjectRef
from reconciler.kube import client as kube
from reconciler.kube.inventory import INVENTORY_NAMESPACE, MANAGED_BY
from reconciler.live import apply
from reconciler.live.outcome import ResultCode
from tests.e2e.controlplane import ROOT, Fleet
from tests.e2e.waiting import eventually

MCS_CRDS = Path(__file__).parent / "data" / "mcs-api"
MCS_KINDS = {"ServiceExport", "ServiceImport"}
FOLDERS = 7
"""example-repo's clusters: a change there must be seen here."""


def kubectl(fleet: Fleet, context: str, *args: str) -> str:
    """Run the system's kubectl against one cluster of the fleet; fail with its output."""
    found = shutil.which("kubectl")
    assert found, "kubectl must be on PATH: the MCS CRDs are installed with it, as a user would"
    done = subprocess.run(
        [found, f"--kubeconfig={fleet.kubeconfig}", f"--context={context}", *args],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def rendered_tree(out: Path) -> dict[str, bytes]:
    """`dro render example-repo --out` (the real command), read back as path → bytes."""
    subprocess.run(
        [sys.executable, "-m", "reconciler.cli", "render", "example-repo", "--out", str(out), "-q"],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def moved(objects: list[dict[str, Any]], folder: str) -> list[dict[str, Any]]:
    """The folder's objects in namespaces of its own: `<namespace>-<folder>`."""
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "Namespace":
            meta["name"] = f"{meta['name']}-{folder}"
        elif meta.get("namespace"):
            meta["namespace"] = f"{meta['namespace']}-{folder}"
    return objects


def absent_or_active(core: client.CoreV1Api, name: str) -> bool | None:
    """True when the namespace is gone or Active, None while it is still terminating."""
    try:
        phase = core.read_namespace(name).status.phase
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return True if phase == "Active" else None


def gone(core: client.CoreV1Api, name: str) -> bool | None:
    """True once the namespace no longer exists."""
    try:
        core.read_namespace(name)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return None


@pytest.fixture
def with_mcs_crds(fleet: Fleet, clients: dict[str, ApiClient]) -> Iterator[None]:
    """The upstream MCS CRDs on every cluster, Established; dro's namespaces removed after."""
    for cluster in fleet.clusters:
        kubectl(fleet, cluster.name, "apply", "--server-side", "-f", str(MCS_CRDS))
        kubectl(fleet, cluster.name, "wait", "--for=condition=Established", "--timeout=120s",
                "crd/serviceexports.multicluster.x-k8s.io",
                "crd/serviceimports.multicluster.x-k8s.io")  # fmt: skip
        # An earlier test may have left dro's inventory namespace terminating.
        core = client.CoreV1Api(clients[cluster.name])
        eventually(
            f"{INVENTORY_NAMESPACE} on {cluster.name}",
            lambda c=core: absent_or_active(c, INVENTORY_NAMESPACE),
        )
    yield
    for cluster in fleet.clusters:
        kubectl(fleet, cluster.name, "delete", "--ignore-not-found", "-f", str(MCS_CRDS))


def test_every_rendered_object_of_example_repo_is_accepted_by_a_real_api_server(
    fleet: Fleet, clients: dict[str, ApiClient], with_mcs_crds: None, tmp_path: Path
) -> None:
    tree = rendered_tree(tmp_path / "out")
    folders = sorted({path.split("/")[1] for path in tree if path.startswith("clusters/")})
    assert len(folders) == FOLDERS, folders
    namespaces: dict[str, list[str]] = {cluster.name: [] for cluster in fleet.clusters}
    kinds: set[str] = set()
    try:
        for index, folder in enumerate(folders):
            real = fleet.clusters[index % len(fleet.clusters)].name
            objects = moved(live.cluster_objects(tree, folder), folder)
            assert objects, folder
            kinds |= {obj["kind"] for obj in objects}
            namespaces[real] += [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
            connection = kube.connect(real, context=real, kubeconfig=fleet.kubeconfig)
            try:
                first = apply.sync(connection, objects, prune=False)
                assert first.failed == [], (folder, first.failed)
                codes = {result.key: result.code for result in first.results}
                for obj in objects:
                    ref = ObjectRef.of(obj)
                    assert codes.get(ref.key) == ResultCode.SYNCED, (folder, ref, first.rejected)
                    key = ref.key
                    stored = connection.get(
                        ref.api_version, key.kind, key.name, key.namespace or None
                    )
                    assert stored is not None, (folder, ref)
                    labels = stored["metadata"].get("labels") or {}
                    assert labels.get(MANAGED_BY[0]) == MANAGED_BY[1], (folder, ref)
                again = apply.sync(connection, objects, prune=False)
                assert (again.failed, again.applied, again.writes) == ([], 0, 0), (
                    folder,
                    again.drifted,
                    again.rejected,
                )
                assert again.unchanged == len(objects), folder
            finally:
                connection.close()
        assert kinds >= MCS_KINDS, "example-repo should render MCS objects: the CRDs are for them"
    finally:
        started = time.monotonic()
        for real, names in namespaces.items():
            core = client.CoreV1Api(clients[real])
            for name in [*names, INVENTORY_NAMESPACE]:
                try:
                    core.delete_namespace(name)
                except ApiException as error:
                    if error.status != 404:
                        raise
        for real, names in namespaces.items():
            core = client.CoreV1Api(clients[real])
            for name in [*names, INVENTORY_NAMESPACE]:
                eventually(
                    f"namespace {name} on {real} to go", lambda c=core, n=name: gone(c, n), 180
                )
        print(f"namespaces removed in {time.monotonic() - started:.1f} s")
