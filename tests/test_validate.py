"""Validation: DESIGN.md's pinned documents, normalisation of every policy kind, precedence."""

from __future__ import annotations

import textwrap

import pytest

from reconciler import validate
from reconciler.domain import Source, SourceFile, claims
from reconciler.errors import Severity, ValidationFailed

CLUSTERS = {
    f"clusters/{name}.yaml": textwrap.dedent(f"""\
    apiVersion: multicluster.io/v1alpha1
    kind: Cluster
    metadata:
      name: {name}
      labels: {{region: {region}, zone: {region}-1a, provider: {provider}}}
    spec:
      capacity: {{cpu: "100", memory: 400Gi, pods: "1000"}}
      allocated: {{cpu: "10", memory: 40Gi, pods: "100"}}
    """)
    for name, region, provider in [
        ("eu-west-1", "eu-west", "aws"),
        ("us-east-1", "us-east", "aws"),
        ("us-east-2", "us-east", "gcp"),
    ]
}

PINNED = {
    "clusters/eu-west-1.yaml": """\
apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata:
  name: eu-west-1
  labels: {region: eu-west, zone: eu-west-1a, provider: aws, topology.datum.net/city-code: DUB}
spec:
  kubeconfig: {context: eu-west-1}          # how dro reaches it; optional (offline use)
  capacity:  {cpu: "256", memory: 1Ti, pods: "2200", nvidia.com/gpu: "8"}
  allocated: {cpu: "96", memory: 300Gi, pods: "700"}     # all usage
  largestNodeFree: {cpu: "30", memory: 100Gi, nvidia.com/gpu: "4"}   # optional
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  cost: {cpu: 0.031, memory: 0.004, nvidia.com/gpu: 2.5}  # per unit-hour, optional
""",
    "policies/web.yaml": """\
apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: web}
spec:
  priority: 0
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, namespace: prod, name: web}
    - {apiVersion: v1, kind: Service, namespace: prod, labelSelector: {matchLabels: {app: web}}}
  targetClusters:
    - {selectorType: label, values: ["region=eu-west", "region=us-east"]}
  placement:
    replicaScheduling:
      type: Divided
      division: StaticWeight
      weights: [{clusters: [eu-west-1], weight: 2}, {labels: {region: us-east}, weight: 1}]
    waterLevelLimit: {cpu: 0.85, memory: 0.90}
    spread: [{by: region, minGroups: 2, maxGroups: 2}]
    tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
""",
    "policies/overrides.yaml": """\
apiVersion: multicluster.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: eu-replicas}
spec:
  resourceSelector: {apiVersion: apps/v1, kind: Deployment, namespace: prod}   # no name = all
  overrides:
    - clusterSelector: {names: [eu-west-1]}        # or {labels: {region: eu-west}}
      fieldPatches:
        - {path: spec.replicas, value: 3}
        - {path: "spec.template.spec.containers[0].image", value: "registry.example/web:2.1"}
        - {path: "metadata.labels.cluster", value: eu-west-1}
""",
    "datasets/clickstream.yaml": """\
apiVersion: multicluster.io/v1alpha1
kind: DataSet
metadata: {name: clickstream}
spec:
  size: 20Ti
  changeRate: 200Gi/d
  locations: [{cluster: eu-west-1, role: primary}, {cluster: us-east-1, role: replica}]
""",
    "policies/draft.yaml": """\
apiVersion: multicluster.io/v1alpha1
kind: PropagationPolicy
metadata: {name: cross-region-policy}
spec: {resourceType: Deployment, targetClusters: [eu-west-1, us-east-1]}
""",
}


def source(files: dict[str, str]) -> Source:
    merged = {**CLUSTERS, **files}
    return Source(
        files=tuple(SourceFile(path=p, data=t.encode()) for p, t in sorted(merged.items()))
    )


def test_pinned_documents_validate_exactly_as_written() -> None:
    result = validate.check(source(PINNED))
    assert [p for p in result.problems if p.severity is Severity.ERROR] == []
    assert result.spec is not None
    spec = result.spec
    eu = next(c for c in spec.clusters if c.name == "eu-west-1")
    assert eu.capacity["memory"] == 2**40
    assert eu.capacity["nvidia.com/gpu"] == 8
    assert eu.allocated["cpu"] == 96
    web = next(p for p in spec.placement_policies if p.ref.name == "web")
    assert web.placement.replicas.strategy == "StaticWeight"
    assert len(web.placement.targets) == 2
    assert web.placement.water_level_limit["memory"] == 0.9
    draft = next(p for p in spec.placement_policies if p.ref.name == "cross-region-policy")
    assert draft.placement.replicas.strategy == "Duplicated"
    assert draft.selectors[0].api_version == "apps/v1"


KARMADA = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: k, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]
  placement:
{placement}
"""


@pytest.mark.parametrize(
    ("placement", "strategy", "weights"),
    [
        ("    clusterAffinity: {clusterNames: [eu-west-1]}", "Duplicated", 0),
        ("    replicaScheduling: {replicaSchedulingType: Divided}", "StaticWeight", 0),
        (
            "    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: "
            "Aggregated}",
            "Aggregated",
            0,
        ),
        (
            "    replicaScheduling:\n      replicaSchedulingType: Divided\n      weightPreference: "
            "{dynamicWeight: AvailableReplicas, staticWeightList: [{targetCluster: {clusterNames: "
            "[eu-west-1]}, weight: 2}]}",
            "DynamicWeight",
            0,
        ),
        (
            "    replicaScheduling:\n      replicaSchedulingType: Divided\n"
            "      weightPreference:\n"
            "        staticWeightList:\n          - {targetCluster: {clusterNames: [eu-west-1]}, "
            "weight: 2}\n          - {targetCluster: {labelSelector: {matchLabels: {region: "
            "us-east}}}, weight: 1}",
            "StaticWeight",
            2,
        ),
    ],
)
def test_karmada_defaults(placement: str, strategy: str, weights: int) -> None:
    spec = validate.spec(source({"policies/k.yaml": KARMADA.format(placement=placement)}))
    (policy,) = spec.placement_policies
    assert policy.placement.replicas.strategy == strategy
    assert len(policy.placement.replicas.static_weights) == weights
    assert policy.namespaced
    assert policy.selectors[0].namespace == "shop"
    assert policy.dro_extensions is False


DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"""


def rpp(name: str, selector: str, namespace: str | None = None, priority: int = 0) -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return (
        f"apiVersion: multicluster.io/v1alpha1\nkind: ResourcePlacementPolicy\n"
        f"metadata: {{name: {name}{ns}}}\nspec:\n  priority: {priority}\n"
        f"  resourceSelector: {selector}\n"
    )


BY_NAME = "{apiVersion: apps/v1, kind: Deployment, name: web}"
BY_LABEL = "{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: web}}}"
BY_KIND = "{apiVersion: apps/v1, kind: Deployment}"


@pytest.mark.parametrize(
    ("policies", "winner"),
    [
        ({"a": rpp("a", BY_KIND, "shop"), "b": rpp("b", BY_NAME, priority=100)}, "a"),
        ({"a": rpp("a", BY_NAME), "b": rpp("b", BY_KIND, priority=1)}, "b"),
        ({"a": rpp("a", BY_KIND), "b": rpp("b", BY_LABEL)}, "b"),
        ({"a": rpp("a", BY_NAME), "b": rpp("b", BY_LABEL)}, "a"),
    ],
)
def test_precedence_namespaced_then_priority_then_specificity(
    policies: dict[str, str], winner: str
) -> None:
    files = {f"policies/{n}.yaml": text for n, text in policies.items()}
    spec = validate.spec(source({"workloads/web.yaml": DEPLOY, **files}))
    claim = claims.claim(spec.placement_policies, spec.workloads[0])
    assert claim.policy is not None
    assert claim.policy.ref.name == winner
    assert claim.tied_with == ()


def test_tie_names_both_files() -> None:
    files = {"policies/a.yaml": rpp("a", BY_LABEL), "policies/b.yaml": rpp("b", BY_LABEL)}
    with pytest.raises(ValidationFailed) as failed:
        validate.spec(source({"workloads/web.yaml": DEPLOY, **files}))
    (problem,) = failed.value.problems
    assert problem.path == "policies/b.yaml"
    assert "policies/a.yaml:1" in problem.message
    assert "shop/Deployment.apps/web" in problem.message


def test_all_errors_are_reported_in_one_pass() -> None:
    files = {
        "workloads/a.yaml": "a: [\n",
        "workloads/b.yaml": "x: 1\nx: 2\n",
        "clusters/us-east-1.yaml": "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\n"
        "metadata: {name: us-east-1}\nspec: {capacity: {cpu: x}}\n",
    }
    with pytest.raises(ValidationFailed) as failed:
        validate.spec(source(files))
    paths = [p.path for p in failed.value.problems]
    assert paths == ["clusters/us-east-1.yaml", "workloads/a.yaml", "workloads/b.yaml"]


def test_custom_resource_without_crd_is_a_warning() -> None:
    text = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\n"
    result = validate.check(source({"workloads/w.yaml": text}))
    assert result.spec is not None
    (warning,) = result.problems
    assert warning.severity is Severity.WARNING
    assert warning.line == 2


def test_custom_resource_is_checked_against_its_crd() -> None:
    crd = textwrap.dedent("""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: widgets.example.com}
        spec:
          group: example.com
          scope: Namespaced
          names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
          versions:
            - name: v1
              served: true
              storage: true
              schema:
                openAPIV3Schema:
                  type: object
                  properties:
                    spec:
                      type: object
                      properties: {size: {type: integer}}
        """)
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  size: big\n"
    with pytest.raises(ValidationFailed) as failed:
        validate.spec(source({"workloads/crd.yaml": crd, "workloads/w.yaml": widget}))
    (problem,) = failed.value.problems
    assert (problem.path, problem.line, problem.pointer) == ("workloads/w.yaml", 5, "/spec/size")
