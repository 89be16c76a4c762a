"""Objects dro did not create, against three emulated clusters: never adopted unless the
takeover rule allows it, never deleted, and left exactly as they were when a commit that named
them is reverted (the `kube-system/coredns` incident, in a namespace the guard allows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import cli, load
from tests.livefleet import Fleet, running_fleet

COREDNS = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: platform
  labels: {k8s-app: kube-dns}
spec:
  replicas: 2
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      containers: [{name: coredns, image: "registry.k8s.io/coredns/coredns:v1.11.1"}]
"""
READER = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: coredns-reader}
rules:
  - {apiGroups: [""], resources: [endpoints, services], verbs: [get, list, watch]}
"""
HIJACK = COREDNS.replace("registry.k8s.io/coredns/coredns:v1.11.1", "evil.example/dns:1")
WIDER = READER.replace("resources: [endpoints, services]", "resources: [secrets]")
TAKEOVER_POLICY = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {{name: platform}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, namespace: platform}}]
  targetClusters: [{{selectorType: label, values: ["env=prod"]}}]
  placement:
    replicaScheduling: {{type: Duplicated}}
    apply: {{takeover: {rule}}}
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with running_fleet(tmp_path) as running:
        running.reconcile()
        for api in running.apis.values():  # what the clusters ran before dro was pointed at them
            api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}})
            api.put(yaml.safe_load(COREDNS))
            api.put(yaml.safe_load(READER))
        yield running


def preexisting(fleet: Fleet) -> dict[str, tuple[Any, Any]]:
    """The stored coredns Deployment and ClusterRole of every cluster, as the API keeps them
    (resourceVersion included: any write at all would change it)."""
    return {
        name: (
            api.get("apps", "v1", "deployments", "platform", "coredns"),
            api.get("rbac.authorization.k8s.io", "v1", "clusterroles", "", "coredns-reader"),
        )
        for name, api in fleet.apis.items()
    }


def test_a_commit_naming_foreign_objects_does_not_adopt_them_and_its_revert_keeps_them(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    before = preexisting(fleet)
    assert all(deployment and role for deployment, role in before.values())
    fleet.repo.write({"workloads/coredns.yaml": HIJACK + "---\n" + WIDER})
    fleet.repo.commit("take over coredns")
    args = ["reconcile", "--once", "--repo", str(fleet.repo.bare), "--move-wait", "0s"]
    args += ["--state-dir", str(fleet.settings.state_dir)]
    args += ["--kubeconfig", str(fleet.settings.kubeconfig)]
    assert cli.main(args) == 1
    out = capsys.readouterr().err
    assert preexisting(fleet) == before, "not a single write to either object"
    for cluster in fleet.apis:
        deployment = (
            f"{cluster}: not applied: workloads/coredns.yaml:1: cluster {cluster}: Deployment "
            "platform/coredns exists and dro did not create it; not adopted, left as it is: it "
            "differs from the rendered manifest at .spec.template.spec.containers"
        )
        assert any(line.startswith(deployment) for line in out.splitlines()), out
        role = f"{cluster}: not applied: workloads/coredns.yaml:15: cluster {cluster}: ClusterRole"
        assert any(line.startswith(role) and ".rules" in line for line in out.splitlines()), out
    assert fleet.live("a", "Deployment", "web") is not None, "the rest still applies"
    fleet.repo.write({"workloads/coredns.yaml": None})
    fleet.repo.commit("Revert 'take over coredns'")
    reverted = fleet.reconcile()
    assert reverted.applied is not None
    assert reverted.applied.ok
    assert [s.pruned for s in reverted.applied.clusters] == [0, 0, 0]
    assert preexisting(fleet) == before, "the revert left the pre-existing objects as they were"


def test_an_identical_object_is_adopted_and_released_not_deleted(fleet: Fleet) -> None:
    fleet.repo.write({"workloads/coredns.yaml": COREDNS + "---\n" + READER})
    fleet.repo.commit("manage coredns as it is")
    adopted = fleet.reconcile()
    assert adopted.applied is not None
    assert adopted.applied.ok, [s.rejected for s in adopted.applied.clusters]
    for _, (deployment, role) in preexisting(fleet).items():
        assert deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dro"
        assert role["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dro"
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "registry.k8s.io/coredns/coredns:v1.11.1"
    fleet.repo.write({"workloads/coredns.yaml": None})
    fleet.repo.commit("stop managing coredns")
    released = fleet.reconcile()
    assert released.applied is not None
    assert [s.pruned for s in released.applied.clusters] == [0, 0, 0]
    assert all(deployment and role for deployment, role in preexisting(fleet).values())
    assert all(len(s.released) == 2 for s in released.applied.clusters)
    assert (
        "adopted, not created by dro: released, not deleted"
        in released.applied.clusters[0].released[0]
    )


@pytest.mark.parametrize(
    ("rule", "manifest", "adopted"),
    [("Never", COREDNS, False), ("Always", HIJACK, True), ("IfNoDiff", HIJACK, False)],
)
def test_the_takeover_rule_of_the_policy_decides(
    fleet: Fleet, rule: str, manifest: str, adopted: bool
) -> None:
    before = preexisting(fleet)
    fleet.repo.write(
        {
            "workloads/coredns.yaml": manifest,
            "policies/platform.yaml": TAKEOVER_POLICY.format(rule=rule),
        }
    )
    fleet.repo.commit(f"coredns under takeover {rule}")
    result = fleet.reconcile()
    assert result.applied is not None
    assert result.applied.ok is adopted
    image = fleet.apis["b"].get("apps", "v1", "deployments", "platform", "coredns")["spec"][
        "template"
    ]["spec"]["containers"][0]["image"]
    assert image == ("evil.example/dns:1" if adopted else "registry.k8s.io/coredns/coredns:v1.11.1")
    listed = not_adopted(fleet, "b")
    if not adopted:
        assert preexisting(fleet) == before
        why = "takeover is Never" if rule == "Never" else "differs from the rendered manifest"
        assert why in result.applied.clusters[0].rejected[0]
        assert list(listed) == ["apps/Deployment/platform/coredns"], "reported in status/drift/"
        entry = listed["apps/Deployment/platform/coredns"]
        assert entry["takeover"] == rule
        pointers = {f["pointer"]: f for f in entry["fields"]}
        assert "/metadata/labels/app.kubernetes.io~1managed-by" in pointers
        image = pointers.get("/spec/template/spec/containers/0/image")
        if manifest == HIJACK:
            assert image == {
                "pointer": "/spec/template/spec/containers/0/image",
                "live": "registry.k8s.io/coredns/coredns:v1.11.1",
                "rendered": "evil.example/dns:1",
            }
        else:
            assert image is None
    else:
        assert listed == {}, "adopted: nothing to report"
    fleet.repo.write({"workloads/coredns.yaml": None, "policies/platform.yaml": None})
    fleet.repo.commit("revert")
    fleet.reconcile()
    assert all(deployment is not None for deployment, _ in preexisting(fleet).values())


def not_adopted(fleet: Fleet, cluster: str) -> dict[str, Any]:
    """The objects `status/drift/<cluster>.yaml` lists as not adopted, by placement name."""
    settings = fleet.settings
    state = load.previous_state(settings.repo or "", settings.output_branch, settings.state_dir)
    data = state.get(f"status/drift/{cluster}.yaml")
    objects = yaml.safe_load(data)["status"]["objects"] if data else []
    return {o["resource"]: o for o in objects if o.get("notAdopted")}


def test_prune_spares_an_inventory_object_that_lost_dros_label(fleet: Fleet) -> None:
    live = fleet.live("a", "ConfigMap", "web")
    del live["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    fleet.apis["a"].put(live)
    web = (fleet.repo.work / "workloads/web.yaml").read_text()
    fleet.repo.write({"workloads/web.yaml": web.rsplit("---", 1)[0]})
    fleet.repo.commit("drop the ConfigMap")
    result = fleet.reconcile()
    assert result.applied is not None
    assert [s.pruned for s in result.applied.clusters] == [0, 1, 1]
    assert fleet.live("a", "ConfigMap", "web") is not None
    assert result.applied.clusters[0].released == [
        "ConfigMap shop/web: does not carry dro's label: left in place"
    ]
