"""A source repo for dro's moves on the real e2e fleet, and the reads and levers the move tests
need: `reconcile --once` (pipeline.reconcile_once) with a kubeconfig whose contexts are the
fleet's clusters, live objects read through the official client, node labels that let pods
schedule or not, and PersistentVolumes for a StatefulSet's claims.

Only the clusters of CLUSTERS are in the repo (labelled `env=prod`), so a move has one place
to go. `move_fleet` yields a `MoveFleet` and, after the test, deletes what the test left on the
clusters (its namespace, dro's inventory in `dro-system`, its PersistentVolumes and node labels)
and waits until the namespaces are gone, so the next test's dro starts from a clean cluster:
every dro of a cluster shares one inventory.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from reconciler import load, pipeline
from reconciler.settings import Settings
from tests.conftest import SourceRepo, make_source_repo
from tests.e2e.controlplane import Fleet
from tests.e2e.waiting import eventually
from tests.livefleet import scheduler_config

NAMESPACE = "moves"
CLUSTERS = ("e2e-a", "e2e-b")
LABEL = "dro-e2e/moves"
"""On the PersistentVolumes a test makes, and (with a value per purpose) on Nodes."""
HOLD = "dro-e2e/hold"
"""The finalizer that keeps a deleted pod Terminating until a test takes it off."""
DRO = scheduler_config('{threshold: 0.1, maxMovesPerPass: "100%", cooldown: 1s}')
NAMESPACE_FILE = f"""apiVersion: v1
kind: Namespace
metadata: {{name: {NAMESPACE}}}
"""


def cluster_file(name: str, extra: str = "") -> str:
    """A Cluster reached through the fleet kubeconfig's context of its own name."""
    return f"""apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {{name: {name}, labels: {{env: prod}}}}
spec:
  kubeconfig: {{context: {name}}}
  capacity: {{cpu: "12", memory: 48Gi, pods: "220"}}
{extra}"""


def divided(name: str, kind: str) -> str:
    """A dro policy dividing the namespace's workloads of `kind` by DynamicWeight."""
    return f"""apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {{name: {name}}}
spec:
  resourceSelectors:
    - {{apiVersion: apps/v1, kind: {kind}, namespace: {NAMESPACE}}}
  targetClusters: [{{selectorType: label, values: ["env=prod"]}}]
  placement:
    replicaScheduling: {{type: Divided, division: DynamicWeight}}
"""


_PATHS = {
    "Deployment": ("apis/apps/v1", "deployments"),
    "StatefulSet": ("apis/apps/v1", "statefulsets"),
    "Job": ("apis/batch/v1", "jobs"),
    "ConfigMap": ("api/v1", "configmaps"),
    "PersistentVolumeClaim": ("api/v1", "persistentvolumeclaims"),
    "Pod": ("api/v1", "pods"),
}


@dataclass
class MoveFleet:
    """The source repo, the pass settings and an ApiClient per cluster of the repo."""

    repo: SourceRepo
    settings: Settings
    clients: Mapping[str, ApiClient]

    def reconcile(self, **changes: Any) -> pipeline.PassResult:
        """One `reconcile --once`, with settings changed as given."""
        return pipeline.reconcile_once(replace(self.settings, **changes))

    def committed(self, path: str) -> dict[str, Any]:
        """A file of the output branch's tip, parsed."""
        settings = self.settings
        state = load.previous_state(settings.repo or "", settings.output_branch, settings.state_dir)
        body = yaml.safe_load(state[path])
        assert isinstance(body, dict)
        return body

    def _get(self, cluster: str, path: str, selector: str = "") -> Any:
        """GET a path of a cluster's API as a plain dict; None when it is not found."""
        api_client = self.clients[cluster]
        query = f"?{urllib.parse.urlencode({'labelSelector': selector})}" if selector else ""
        url = api_client.configuration.host + path + query
        answer = api_client.call_api("GET", url, header_params={"Accept": "application/json"})
        answer.read()
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise AssertionError(f"GET {path} on {cluster}: {answer.status} {answer.data!r}")
        return json.loads(answer.data)

    def live(self, cluster: str, kind: str, name: str) -> Any:
        """An object of the test namespace on one cluster, as a dict; None when absent."""
        prefix, plural = _PATHS[kind]
        return self._get(cluster, f"/{prefix}/namespaces/{NAMESPACE}/{plural}/{name}")

    def listed(self, cluster: str, kind: str, selector: str = "") -> list[Any]:
        """The objects of one kind in the test namespace of a cluster (by label selector)."""
        prefix, plural = _PATHS[kind]
        found = self._get(cluster, f"/{prefix}/namespaces/{NAMESPACE}/{plural}", selector)
        return list(found["items"]) if found else []

    def replicas(self, kind: str, name: str) -> dict[str, int | None]:
        """Live `spec.replicas` of a workload per cluster (None where it is absent)."""
        found = {c: self.live(c, kind, name) for c in self.clients}
        return {c: obj["spec"]["replicas"] if obj else None for c, obj in found.items()}

    def healthy(self, cluster: str, kind: str, name: str) -> bool:
        """Whether the workload's controller reports its rollout complete at its size."""
        obj = self.live(cluster, kind, name)
        if obj is None:
            return False
        status, wanted = obj.get("status") or {}, obj["spec"].get("replicas", 1)
        observed = status.get("observedGeneration", 0) >= obj["metadata"]["generation"]
        ready = status.get("availableReplicas" if kind == "Deployment" else "readyReplicas", 0)
        return bool(observed and status.get("replicas", 0) == wanted and (ready or 0) == wanted)

    def wait_healthy(self, cluster: str, kind: str, name: str, timeout: float = 120.0) -> None:
        """Poll until the workload's rollout is complete on the cluster."""
        eventually(
            f"{kind} {name} rolled out on {cluster}",
            lambda: True if self.healthy(cluster, kind, name) else None,
            timeout=timeout,
        )

    def unschedulable(self, cluster: str, selector: str) -> list[str]:
        """Names of the pods (by label selector) the real scheduler found no Node for."""
        return [
            pod["metadata"]["name"]
            for pod in self.listed(cluster, "Pod", selector)
            for condition in pod.get("status", {}).get("conditions") or ()
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable"
        ]

    def label_nodes(self, cluster: str, value: str | None) -> None:
        """Set (or with None, remove) the label LABEL on every Node of a cluster."""
        core = client.CoreV1Api(self.clients[cluster])
        for node in core.list_node().items:
            core.patch_node(node.metadata.name, {"metadata": {"labels": {LABEL: value}}})

    def hold_pods(self, cluster: str, selector: str, hold: bool) -> None:
        """Add (or take off) a finalizer on the matching pods of the test namespace, so that
        once deleted they stay Terminating: a slow shutdown."""
        core = client.CoreV1Api(self.clients[cluster])
        for pod in core.list_namespaced_pod(NAMESPACE, label_selector=selector).items:
            if not hold and HOLD not in (pod.metadata.finalizers or ()):
                continue
            # finalizers merge in a strategic merge patch: taking one off needs the directive
            change = "finalizers" if hold else "$deleteFromPrimitiveList/finalizers"
            core.patch_namespaced_pod(pod.metadata.name, NAMESPACE, {"metadata": {change: [HOLD]}})

    def add_volumes(self, cluster: str, count: int, size: str = "1Gi") -> None:
        """`count` hostPath PersistentVolumes of no storage class for claims to bind to."""
        core = client.CoreV1Api(self.clients[cluster])
        for index in range(count):
            core.create_persistent_volume(
                {
                    "metadata": {"name": f"moves-{index}", "labels": {LABEL: "volume"}},
                    "spec": {
                        "capacity": {"storage": size},
                        "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "storageClassName": "",
                        "hostPath": {"path": f"/tmp/moves-{index}"},
                    },
                }
            )

    def clean(self) -> None:
        """Delete what the test left on each cluster; wait until its namespaces are gone."""
        for cluster, api_client in self.clients.items():
            core = client.CoreV1Api(api_client)
            self.hold_pods(cluster, "", hold=False)
            for namespace in (NAMESPACE, "dro-system"):
                with contextlib.suppress(ApiException):
                    core.delete_namespace(namespace)
            core.delete_collection_persistent_volume(label_selector=f"{LABEL}=volume")
            for node in core.list_node(label_selector=LABEL).items:
                core.patch_node(node.metadata.name, {"metadata": {"labels": {LABEL: None}}})
        for name, api_client in self.clients.items():
            await_no_namespace(api_client, name)


def await_no_namespace(api_client: ApiClient, cluster: str) -> None:
    """Wait until neither the test namespace nor dro-system exists (nor is terminating)."""
    core = client.CoreV1Api(api_client)

    def gone() -> bool | None:
        names = {ns.metadata.name for ns in core.list_namespace().items}
        return True if not names & {NAMESPACE, "dro-system"} else None

    eventually(f"namespaces {NAMESPACE} and dro-system gone on {cluster}", gone, timeout=120)


@contextlib.contextmanager
def move_fleet(fleet: Fleet, tmp: Path, files: Mapping[str, str]) -> Iterator[MoveFleet]:
    """The repo (dro.yaml, the clusters, the namespace, and `files`) and clients of CLUSTERS;
    the clusters are cleaned after the test."""
    clients = {
        name: config.new_client_from_config(config_file=str(fleet.kubeconfig), context=name)
        for name in CLUSTERS
    }
    moves = None
    try:
        for name, api_client in clients.items():
            await_no_namespace(api_client, name)  # an earlier test's dro-system may terminate
        repo = make_source_repo(tmp / "source", None)
        repo.write(
            {"dro.yaml": DRO, "workloads/namespace.yaml": NAMESPACE_FILE}
            | {f"clusters/{name}.yaml": cluster_file(name) for name in CLUSTERS}
            | dict(files)
        )
        repo.commit("a fleet of two real clusters")
        settings = Settings(
            repo=str(repo.bare),
            state_dir=tmp / "state",
            kubeconfig=fleet.kubeconfig,
            cluster_timeout=10.0,
            move_wait=0.0,
        )
        moves = MoveFleet(repo=repo, settings=settings, clients=clients)
        yield moves
    finally:
        try:
            if moves is not None:
                moves.clean()
        finally:
            for api_client in clients.values():
                api_client.close()
