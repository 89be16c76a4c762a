"""A four-cluster fleet for the rollout tests: a source repo whose Deployment `shop/web` is
placed on every cluster, each cluster served by its own API emulator, and a clock the test
moves (the pass's `now`), so soaks and health timeouts pass without sleeping."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from reconciler import pipeline, yamlio
from reconciler.settings import Settings
from tests.conftest import SourceRepo, git, make_source_repo
from tests.kubeapi import KubeAPI

NAMES = ("eu-west-1", "eu-west-2", "us-east-1", "us-east-2")
START = 1_800_000_000.0


def dro_yaml(rollout: str | None) -> str:
    """dro.yaml: every prod cluster, duplicated, and `spec.rollout` as given (flow YAML), or
    no rollout setting for None."""
    setting = "" if rollout is None else f"  rollout: {rollout}\n"
    return f"""apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {{name: dro}}
spec:
  defaultPlacement:
    targetClusters: [{{selectorType: label, values: ["env=prod"]}}]
    replicaScheduling: {{type: Duplicated}}
{setting}"""


def web(image: str, *, replicas: int = 2, promote: str | None = None) -> str:
    """The Deployment shop/web running `image`, with a rollout-promote annotation if given."""
    notes = f"\n  annotations: {{multicluster.io/rollout-promote: {promote}}}" if promote else ""
    return f"""apiVersion: v1
kind: Namespace
metadata: {{name: shop}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop{notes}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
"""


def cluster_file(name: str) -> str:
    """A Cluster reached through the kubeconfig context of its own name."""
    region = name.rsplit("-", 1)[0]
    return f"""apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {{name: {name}, labels: {{env: prod, region: {region}}}}}
spec:
  kubeconfig: {{context: {name}}}
  capacity: {{cpu: "16", memory: 64Gi, pods: "220"}}
"""


@dataclass
class RolloutFleet:
    """The repo, the emulators by cluster name, the pass settings and the clock."""

    repo: SourceRepo
    apis: dict[str, KubeAPI]
    settings: Settings
    clock: list[float]

    def change(self, files: Mapping[str, str], message: str) -> str:
        """Commit changed source files; the new source commit."""
        self.repo.write(files)
        return self.repo.commit(message).strip()

    def reconcile(self, at: float) -> pipeline.PassResult:
        """One `reconcile --once` at `START + at` seconds."""
        self.clock[0] = START + at
        return pipeline.reconcile_once(self.settings)

    def live_images(self) -> dict[str, str | None]:
        """Cluster → the image of the live shop/web (None where absent)."""
        found: dict[str, str | None] = {}
        for name, api in self.apis.items():
            obj = api.get("apps", "v1", "deployments", "shop", "web")
            found[name] = obj["spec"]["template"]["spec"]["containers"][0]["image"] if obj else None
        return found

    def rendered_images(self) -> dict[str, str]:
        """Cluster → the image rendered for shop/web on dro/rendered."""
        images = {}
        for name in NAMES:
            path = f"clusters/{name}/shop/deployment-web.yaml"
            (doc,) = yamlio.parse_documents(path, self.show(path).encode())
            images[name] = doc.body["spec"]["template"]["spec"]["containers"][0]["image"]
        return images

    def rollout(self) -> dict[str, Any]:
        """`status.rollout` of shop/web's decision on dro/rendered."""
        path = "decisions/shop/deployment-web.yaml"
        (doc,) = yamlio.parse_documents(path, self.show(path).encode())
        return dict(doc.body["status"]["rollout"])

    def show(self, path: str) -> str:
        """A file of dro/rendered's tip."""
        return git(self.repo.bare, "show", f"dro/rendered:{path}")

    def subject(self) -> str:
        """The subject of dro/rendered's tip."""
        return git(self.repo.bare, "log", "-1", "--format=%s", "dro/rendered").strip()


@contextmanager
def rollout_fleet(
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    rollout: str,
    *,
    stuck: tuple[str, ...] = (),
) -> Iterator[RolloutFleet]:
    """Four emulators that complete Deployment rollouts at once (but those in `stuck`, never),
    the source repo with web:1 placed everywhere, and the clock at START."""
    repo = make_source_repo(tmp / "source", None)
    repo.write(
        {"dro.yaml": dro_yaml(rollout), "workloads/web.yaml": web("web:1")}
        | {f"clusters/{name}.yaml": cluster_file(name) for name in NAMES}
    )
    repo.commit("web:1 everywhere")
    clock = [START]
    monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda: clock[0]))
    kubeconfig = tmp / "kubeconfig"
    with ExitStack() as stack:
        apis = {}
        for name in NAMES:
            api = stack.enter_context(KubeAPI(nodes=1, rollouts=name not in stuck))
            api.kubeconfig(kubeconfig, context=name)
            apis[name] = api
        settings = Settings(
            repo=str(repo.bare),
            state_dir=tmp / "state",
            kubeconfig=kubeconfig,
            cluster_timeout=5.0,
            move_wait=0.0,
        )
        yield RolloutFleet(repo=repo, apis=apis, settings=settings, clock=clock)
