"""dro's whole live pass on the real e2e fleet: a source repo whose clusters are the fleet's
kubeconfig contexts (e2e-a, e2e-b, e2e-c), `pipeline.reconcile_once` with the fleet's
kubeconfig, and reads of the real API servers through the official client.

`dro_on_fleet` gives a `DroFleet` on clean clusters (no `shop` or `dro-system` namespace, waited
for) and leaves them clean: it deletes those namespaces and waits until they are gone, so the
next test's first pass starts from an empty inventory. Named apart from K's realfleet.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from reconciler import load, pipeline
from reconciler.settings import Settings
from tests.conftest import SourceRepo, make_source_repo
from tests.e2e.controlplane import Fleet
from tests.e2e.waiting import eventually
from tests.livefleet import scheduler_config

NAMESPACE = "shop"
OWNED = (NAMESPACE, "dro-system")  # dro-system holds each cluster's inventory
DRO = scheduler_config(
    '{threshold: 0.9, maxMovesPerPass: "50%", cooldown: 1s, unschedulableAfter: 3s}'
)
WEB = """apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: "web:1", resources: {requests: {cpu: 250m, memory: 64Mi}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
data: {greeting: hello}
"""
STATIC_BATCH = """apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec:
  replicas: 9
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers:
        - {name: batch, image: "batch:1", resources: {requests: {cpu: "1", memory: 64Mi}}}
---
apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: batch-even}
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      namespace: shop
      labelSelector: {matchLabels: {app: batch}}
  targetClusters: [{selectorType: label, values: ["env=prod"]}]
  placement:
    replicaScheduling:
      type: Divided
      division: StaticWeight
      weights: [{labels: {env: prod}, weight: 1}]
"""
"""Nine 1-CPU replicas split evenly: three land on e2e-c, whose one Node has 2 CPUs."""
DYNAMIC_BATCH = """apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec:
  replicas: 12
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers:
        - {name: batch, image: "batch:1", resources: {requests: {cpu: 500m, memory: 64Mi}}}
---
apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: batch-by-room}
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      namespace: shop
      labelSelector: {matchLabels: {app: batch}}
  targetClusters: [{selectorType: label, values: ["tier=batch"]}]
  placement:
    replicaScheduling: {type: Divided, division: DynamicWeight}
"""
"""Twelve half-CPU replicas divided by room over e2e-a (12 CPUs) and e2e-c (2 CPUs)."""
BATCH_CLUSTERS = ("e2e-a", "e2e-c")


def cluster_file(name: str) -> str:
    """A Cluster reached through the fleet's kubeconfig context of its own name."""
    tier = ", tier: batch" if name in BATCH_CLUSTERS else ""
    return f"""apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {{name: {name}, labels: {{env: prod{tier}}}}}
spec:
  kubeconfig: {{context: {name}}}
  capacity: {{cpu: "8", memory: 32Gi, pods: "110"}}
"""


@dataclass
class DroFleet:
    """The source repo, the pass settings, the real fleet and a client per cluster."""

    repo: SourceRepo
    settings: Settings
    fleet: Fleet
    clients: Mapping[str, ApiClient]

    def reconcile(self, **changes: Any) -> pipeline.PassResult:
        """One `reconcile --once`, with settings changed as given."""
        return pipeline.reconcile_once(replace(self.settings, **changes))

    def apps(self, cluster: str) -> client.AppsV1Api:
        return client.AppsV1Api(self.clients[cluster])

    def core(self, cluster: str) -> client.CoreV1Api:
        return client.CoreV1Api(self.clients[cluster])

    def deployment(self, cluster: str, name: str) -> client.V1Deployment | None:
        """A live Deployment in `shop`, or None."""
        apps = self.apps(cluster)
        return absent_as_none(lambda: apps.read_namespaced_deployment(name, NAMESPACE))

    def config_map(self, cluster: str, name: str, namespace: str = NAMESPACE) -> Any:
        """A live ConfigMap, or None."""
        core = self.core(cluster)
        return absent_as_none(lambda: core.read_namespaced_config_map(name, namespace))

    def replicas(self, name: str) -> dict[str, int | None]:
        """Live `spec.replicas` of a Deployment per cluster (None where absent)."""
        found = {c: self.deployment(c, name) for c in self.clients}
        return {c: d.spec.replicas if d else None for c, d in found.items()}

    def wait_available(self, name: str, timeout: float = 120.0) -> None:
        """Until the Deployment's live replicas are all available wherever it runs."""

        def available() -> bool | None:
            for cluster in self.clients:
                found = self.deployment(cluster, name)
                if found is None:
                    continue
                status = found.status
                if (status.available_replicas or 0) != found.spec.replicas or (
                    status.observed_generation != found.metadata.generation
                ):
                    return None
            return True

        eventually(f"{name} available on every cluster", available, timeout)

    def committed(self, path: str) -> dict[str, Any]:
        """A file of the output branch's tip, parsed."""
        settings = self.settings
        assert settings.repo is not None
        state = load.previous_state(settings.repo, settings.output_branch, settings.state_dir)
        body = yaml.safe_load(state[path])
        assert isinstance(body, dict)
        return body

    def status_of(self, cluster: str) -> dict[str, Any]:
        """The `status` of a cluster's committed status file."""
        found = self.committed(f"status/clusters/{cluster}.yaml")["status"]
        assert isinstance(found, dict)
        return found


def absent_as_none(read: Any) -> Any:
    """What `read()` returns, or None on 404."""
    try:
        return read()
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _wait_gone(clients: Mapping[str, ApiClient], timeout: float = 120.0) -> None:
    """Delete the namespaces dro's passes own on every cluster; wait until all are gone."""
    for api_client in clients.values():
        core = client.CoreV1Api(api_client)
        for name in OWNED:
            absent_as_none(lambda c=core, n=name: c.delete_namespace(n))

    def gone() -> bool | None:
        for api_client in clients.values():
            names = {ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items}
            if names & set(OWNED):
                return None
        return True

    eventually(f"namespaces {OWNED} gone on every cluster", gone, timeout)


def source_files(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The source files, with `extra` added or replacing some."""
    files = {"dro.yaml": DRO, "workloads/web.yaml": WEB}
    return files | dict(extra or {})


@contextmanager
def dro_on_fleet(fleet: Fleet, clients: Mapping[str, ApiClient], tmp: Path) -> Iterator[DroFleet]:
    """A source repo for the fleet's clusters and settings to reconcile it, on clean clusters."""
    _wait_gone(clients)
    repo = make_source_repo(tmp / "source", None)
    repo.write(source_files())
    repo.write({f"clusters/{c.name}.yaml": cluster_file(c.name) for c in fleet.clusters})
    repo.commit("the e2e fleet")
    settings = Settings(
        repo=str(repo.bare),
        state_dir=tmp / "state",
        kubeconfig=fleet.kubeconfig,
        cluster_timeout=5.0,
        move_wait=0.0,
    )
    try:
        yield DroFleet(repo=repo, settings=settings, fleet=fleet, clients=clients)
    finally:
        _wait_gone(clients)
