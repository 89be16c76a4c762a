"""A small fleet for the live-pass tests: a source repo with three clusters (a, b, c), each
served by its own API emulator on 127.0.0.1, and one kubeconfig with a context per cluster."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reconciler import pipeline
from reconciler.settings import Settings
from tests.conftest import SourceRepo, make_source_repo
from tests.kubeapi import KubeAPI

NAMES = ("a", "b", "c")


def scheduler_config(rebalance: str) -> str:
    """dro.yaml of the live-fleet tests: prod clusters by label, duplicated by default, a cpu
    water-level limit of 0.8, and `rebalance` as given (a YAML flow mapping)."""
    return f"""apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {{name: dro}}
spec:
  waterLevelLimit: {{cpu: 0.8}}
  defaultPlacement:
    targetClusters: [{{selectorType: label, values: ["env=prod"]}}]
    replicaScheduling: {{type: Duplicated}}
  rebalance: {rebalance}
"""


DRO = scheduler_config('{threshold: 0.1, maxMovesPerPass: "50%", cooldown: 1s}')
WEB = """apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: "web:1", resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
data: {greeting: hello}
"""
POLICY = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: divided}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, namespace: shop}
  targetClusters: [{selectorType: label, values: ["env=prod"]}]
  placement:
    replicaScheduling: {type: Divided, division: DynamicWeight}
"""


def cluster_file(name: str, extra: str = "") -> str:
    """A Cluster reached through the kubeconfig context of its own name."""
    return f"""apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {{name: {name}, labels: {{env: prod}}}}
spec:
  kubeconfig: {{context: {name}}}
  capacity: {{cpu: "16", memory: 64Gi, pods: "220"}}
{extra}"""


def deployment(name: str, replicas: int, cpu: str = "1") -> str:
    """One more Deployment in the shop namespace."""
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: shop, labels: {{app: {name}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: "{name}:1", resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


@dataclass
class Fleet:
    """The source repo, the three emulators by cluster name, and the pass settings."""

    repo: SourceRepo
    apis: dict[str, KubeAPI]
    settings: Settings

    def reconcile(self, **changes: Any) -> pipeline.PassResult:
        """One `reconcile --once`, with settings changed as given."""
        return pipeline.reconcile_once(replace(self.settings, **changes))

    def live(self, cluster: str, kind: str, name: str, namespace: str = "shop") -> Any:
        """A stored object of one emulator (Deployment, ConfigMap or Namespace), or None."""
        group, plural = {
            "Deployment": ("apps", "deployments"),
            "ConfigMap": ("", "configmaps"),
            "Namespace": ("", "namespaces"),
        }[kind]
        return self.apis[cluster].get(group, "v1", plural, namespace, name)

    def replicas(self, name: str = "web") -> dict[str, int | None]:
        """Live `spec.replicas` of a Deployment per cluster (None where absent)."""
        found = {n: self.live(n, "Deployment", name) for n in self.apis}
        return {n: obj["spec"]["replicas"] if obj else None for n, obj in found.items()}

    def mark_healthy(self, name: str = "web") -> None:
        """Complete a Deployment's rollout on every cluster that has it."""
        for api in self.apis.values():
            live = api.get("apps", "v1", "deployments", "shop", name)
            if live is None:
                continue
            replicas = live["spec"].get("replicas", 1)
            status = {
                "observedGeneration": live["metadata"].get("generation", 1),
                "replicas": replicas,
                "updatedReplicas": replicas,
                "availableReplicas": replicas,
            }
            api.set_status("apps", "v1", "deployments", "shop", name, status)

    def reset_counters(self) -> None:
        """Forget the requests every emulator has logged."""
        for api in self.apis.values():
            api.reset_counters()

    def writes(self) -> int:
        """Writes received by all emulators since their counters were reset."""
        return sum(len(api.writes) for api in self.apis.values())


def source_files(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The fleet's source files, with `extra` added or replacing some."""
    files = {"dro.yaml": DRO, "workloads/web.yaml": WEB, "policies/divided.yaml": POLICY}
    files |= {f"clusters/{name}.yaml": cluster_file(name) for name in NAMES}
    return files | dict(extra or {})


@contextmanager
def running_fleet(tmp: Path, *, rollouts: Mapping[str, bool] | None = None) -> Iterator[Fleet]:
    """Three emulators with two 8-CPU Nodes each, and the source repo; all stopped after."""
    repo = make_source_repo(tmp / "source", None)
    repo.write(source_files())
    repo.commit("fleet")
    kubeconfig = tmp / "kubeconfig"
    with ExitStack() as stack:
        apis = {}
        for name in NAMES:
            api = KubeAPI(nodes=2, rollouts=(rollouts or {}).get(name, False))
            apis[name] = stack.enter_context(api)
            api.kubeconfig(kubeconfig, context=name)
        settings = Settings(
            repo=str(repo.bare),
            state_dir=tmp / "state",
            kubeconfig=kubeconfig,
            cluster_timeout=5.0,
            move_wait=0.0,
        )
        yield Fleet(repo=repo, apis=apis, settings=settings)
