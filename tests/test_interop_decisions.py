"""Argo CD cluster decisions and KEP-5313 PlacementDecisions, as `render.tree` writes them."""

from __future__ import annotations

from typing import Any

import jsonschema
import yaml

from reconciler import render
from reconciler.domain import Decision, Placed, PolicyRef, ResourceKey
from reconciler.render import decisionout
from tests.builders.schedule import PLAIN, cluster, deployment, spec_of

LABEL_VALUE = 63
# The part of the PlacementDecision CRD of kubernetes-sigs/cluster-inventory-api (KEP-5313)
# that dro writes, with its required fields and limits; no other field is allowed.
KEP_5313_SHAPE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "decisions"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "multicluster.x-k8s.io/v1alpha1"},
        "kind": {"const": "PlacementDecision"},
        "metadata": {"type": "object"},
        "schedulerName": {"type": "string"},
        "decisions": {
            "type": "array",
            "maxItems": 100,
            "items": {
                "type": "object",
                "required": ["clusterProfileRef"],
                "additionalProperties": False,
                "properties": {
                    "reason": {"type": "string"},
                    "clusterProfileRef": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
                    },
                },
            },
        },
    },
}


def rendered(names: list[str], *, workload_name: str = "web") -> dict[str, bytes]:
    spec = spec_of([cluster(n) for n in names], [deployment(workload_name, len(names))], PLAIN)
    decision = Decision(
        key=spec.workloads[0].key,
        api_version="apps/v1",
        policy=PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name="p"),
        clusters=tuple(Placed(n, 1) for n in sorted(names)),
    )
    return render.tree(spec, [decision])


def documents(data: bytes) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(data) if d is not None]


def test_the_argocd_decision_lists_each_cluster_with_a_reason() -> None:
    tree = rendered(["b", "a"])
    (resource,) = documents(tree["argocd/prod/deployment-web.yaml"])
    assert resource["metadata"] == {
        "name": "prod.deployment-web",
        "namespace": "argocd",
        "labels": {"app.kubernetes.io/managed-by": "dro", "multicluster.io/namespace": "prod"},
        "annotations": {"multicluster.io/placement": "apps/Deployment/prod/web"},
    }
    assert resource["status"]["decisions"] == [
        {"clusterName": "a", "reason": "placed by ResourcePlacementPolicy p, 1 replica"},
        {"clusterName": "b", "reason": "placed by ResourcePlacementPolicy p, 1 replica"},
    ]
    configmap, crd = documents(tree["argocd/cluster-decisions.yaml"])
    assert configmap["data"] == {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "clusterdecisions",
        "statusListKey": "decisions",
        "matchKey": "clusterName",
    }
    assert crd["metadata"]["name"] == "clusterdecisions.multicluster.io"
    listed = yaml.safe_load(tree["argocd/kustomization.yaml"])["resources"]
    assert listed == ["cluster-decisions.yaml", "prod/deployment-web.yaml"]


def test_the_kep_5313_decision_has_the_keps_shape() -> None:
    tree = rendered(["b", "a"])
    (decision,) = documents(tree["kep-5313/prod/deployment-web.yaml"])
    assert decision["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
    assert decision["kind"] == "PlacementDecision"
    assert decision["schedulerName"] == "dro"
    assert decision["metadata"]["namespace"] == "prod"
    assert [d["clusterProfileRef"]["name"] for d in decision["decisions"]] == ["a", "b"]
    jsonschema.validate(decision, KEP_5313_SHAPE)
    labels = decision["metadata"]["labels"]
    assert labels["multicluster.x-k8s.io/decision-index"] == "0"
    assert labels["multicluster.x-k8s.io/decision-key"] == "deployment-web"


def test_past_100_clusters_the_decision_is_sliced_with_one_key() -> None:
    names = [f"c{i:03d}" for i in range(230)]
    slices = documents(rendered(names)["kep-5313/prod/deployment-web.yaml"])
    assert [len(s["decisions"]) for s in slices] == [100, 100, 30]
    assert [s["metadata"]["name"] for s in slices] == [
        "deployment-web",
        "deployment-web-1",
        "deployment-web-2",
    ]
    keys = {s["metadata"]["labels"]["multicluster.x-k8s.io/decision-key"] for s in slices}
    assert len(keys) == 1
    indexes = [s["metadata"]["labels"]["multicluster.x-k8s.io/decision-index"] for s in slices]
    assert indexes == ["0", "1", "2"]
    chosen = [d["clusterProfileRef"]["name"] for s in slices for d in s["decisions"]]
    assert chosen == names
    for piece in slices:
        jsonschema.validate(piece, KEP_5313_SHAPE)


def test_long_names_keep_labels_within_63_characters() -> None:
    tree = rendered(["a"], workload_name="w" * 200)
    (path,) = [p for p in tree if p.startswith("kep-5313/")]
    (decision,) = documents(tree[path])
    for value in decision["metadata"]["labels"].values():
        assert len(value) <= LABEL_VALUE, value


def test_a_cluster_scoped_object_is_decided_in_default_and_unschedulable_lists_none() -> None:
    decision = Decision(
        key=ResourceKey("", "Namespace", "", "shop"),
        api_version="v1",
        policy=None,
        clusters=(),
        unschedulable="0/1 clusters are available",
    )
    (kep,) = decisionout.placement_decisions(decision)
    assert kep["metadata"]["namespace"] == "default"
    assert kep["decisions"] == []
    argo = decisionout.cluster_decision(decision)
    assert argo["metadata"]["name"] == "namespace-shop"
    assert argo["status"]["decisions"] == []


def test_reasons_name_the_default_placement_when_no_policy_matched() -> None:
    decision = Decision(
        key=ResourceKey("", "ConfigMap", "prod", "c"),
        api_version="v1",
        policy=None,
        clusters=(Placed("a", None),),
    )
    assert decisionout.reason(decision, None) == "placed by the default placement in dro.yaml"


def test_cluster_profiles_are_referred_to_in_the_configured_namespace() -> None:
    decision = Decision(
        key=ResourceKey("apps", "Deployment", "shop", "web"),
        api_version="apps/v1",
        policy=None,
        clusters=(Placed("a", 1),),
    )
    (kep,) = decisionout.placement_decisions(decision, "fleet-system")
    assert kep["decisions"][0]["clusterProfileRef"] == {"name": "a", "namespace": "fleet-system"}
    jsonschema.validate(kep, KEP_5313_SHAPE)
    (plain,) = decisionout.placement_decisions(decision)
    assert plain["decisions"][0]["clusterProfileRef"] == {"name": "a"}
