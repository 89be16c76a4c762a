"""Real-world manifests from Karmada's samples and documentation, through the CLI.

Each test is built from a documented example (cited in its docstring) and checks the result
that the documentation gives.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from karmadarepo import NGINX_SAMPLE, deployment, placed, render, schedule, write

from reconciler import cli, yamlio


def test_a_karmada_policy_beside_its_workload_is_read_as_a_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Karmada's samples/nginx (deployment.yaml and propagationpolicy.yaml, README: "nginx
    is propagated to member1 and member2"), kept in one file under workloads/ as the
    quickstart (https://karmada.io/docs/get-started/nginx-example) applies them together:
    1 + 1 on member1 and member2, not the defaultPlacement's 2 on every member, and the
    policy itself is never rendered into a member cluster."""
    root = write(tmp_path / "repo", {"workloads/nginx.yaml": NGINX_SAMPLE})
    decision = schedule(root, capsys)["Deployment/nginx"]
    assert decision["policy"]["name"] == "nginx-propagation"
    assert placed(decision) == {"member1": 1, "member2": 1}
    out = render(root, tmp_path / "out", capsys)
    rendered = sorted(p.name for p in (out / "clusters").rglob("*.yaml"))
    assert not [name for name in rendered if "propagationpolicy" in name], rendered


def test_dro_policy_kinds_under_workloads_are_policies_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rpp = textwrap.dedent("""\
        apiVersion: multicluster.io/v1alpha1
        kind: ResourcePlacementPolicy
        metadata: {name: only-member3}
        spec:
          resourceSelector: {apiVersion: apps/v1, kind: Deployment, name: nginx}
          targetClusters: [{selectorType: name, values: [member3]}]
        """)
    deployment = NGINX_SAMPLE.split("---", maxsplit=1)[0]
    root = write(tmp_path / "repo", {"workloads/nginx.yaml": deployment + "---\n" + rpp})
    decision = schedule(root, capsys)["Deployment/nginx"]
    assert decision["policy"]["name"] == "only-member3"
    assert placed(decision) == {"member3": 2}


def test_an_unsupported_karmada_policy_kind_under_workloads_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Karmada control-plane kind (here ClusterTaintPolicy) is never sent to members."""
    taint_policy = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\n"
        "metadata: {name: not-ready}\nspec: {}\n"
    )
    root = write(tmp_path / "repo", {"workloads/policy.yaml": taint_policy})
    assert cli.main(["validate", str(root)]) == 1
    err = capsys.readouterr()
    assert "workloads/policy.yaml:2: /kind: unknown policy kind" in err.out + err.err


def test_yaml_value_type_reads_as_the_string(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """prometheus-operator's AlertmanagerConfig CRD writes `enum: ['!=', =, =~, '!~']`:
    `=` is YAML 1.1's "value" type, which Kubernetes reads as the string "="."""
    crd = textwrap.dedent("""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: matchers.example.com}
        spec:
          group: example.com
          names: {kind: Matcher, plural: matchers, singular: matcher, listKind: MatcherList}
          scope: Namespaced
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
                      properties:
                        matchType:
                          enum: ['!=', =, =~, '!~']
                          type: string
        """)
    matcher = (
        "apiVersion: example.com/v1\nkind: Matcher\nmetadata: {name: m, namespace: default}\n"
        "spec:\n  matchType: =\n"
    )
    (doc,) = yamlio.parse_documents("crd.yaml", crd.encode())
    enum = doc.body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert enum["properties"]["matchType"]["enum"] == ["!=", "=", "=~", "!~"]
    assert yamlio.parse_documents("m.yaml", yamlio.dump({"a": "="}).encode())[0].body == {"a": "="}
    root = write(tmp_path / "repo", {"workloads/crd.yaml": crd, "workloads/m.yaml": matcher})
    assert cli.main(["validate", str(root)]) == 0, capsys.readouterr()


POD_WITH_OVERRIDES = """\
apiVersion: v1
kind: Pod
metadata:
  name: myapp
spec:
  containers:
    - name: myapp
      image: docker.io/library/myapp:1.0.0
      args: ["--port=80"]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: myapp
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: Pod, name: myapp}
  placement:
    clusterAffinity: {clusterNames: [member1]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: myapp
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: Pod, name: myapp}
  overrideRules:
    - targetCluster: {clusterNames: [member1]}
      overriders:
        imageOverrider:
          - {component: Tag, operator: replace,
             value: "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"}
        commandOverrider:
          - {containerName: myapp, operator: add, value: [/bin/myapp]}
        argsOverrider:
          - {containerName: myapp, operator: add, value: ["--verbose"]}
"""


def test_image_command_and_args_overriders_rewrite_a_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """https://karmada.io/docs/userguide/scheduling/override-policy (imageOverrider,
    commandOverrider, argsOverrider) on a Pod, whose containers are `/spec/containers/N`;
    the Tag set to a digest is written `name@sha256:…` (Karmada's imageoverride_test.go)."""
    root = write(tmp_path / "repo", {"workloads/myapp.yaml": POD_WITH_OVERRIDES})
    out = render(root, tmp_path / "out", capsys)
    (pod,) = yamlio.parse_documents(
        "pod", (out / "clusters/member1/default/pod-myapp.yaml").read_bytes()
    )
    (container,) = pod.body["spec"]["containers"]
    assert container["image"] == (
        "docker.io/library/myapp@sha256:"
        "dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"
    )
    assert container["command"] == ["/bin/myapp"]
    assert container["args"] == ["--port=80", "--verbose"]


def test_an_api_removed_in_the_repos_kubernetes_version_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kubernetes' deprecated API migration guide: batch/v1beta1 CronJob is gone since 1.25,
    so on kubernetesVersion 1.34 the API server refuses it; validate says what to use."""
    cronjob = textwrap.dedent("""\
        apiVersion: batch/v1beta1
        kind: CronJob
        metadata: {name: hello}
        spec:
          schedule: "* * * * *"
          jobTemplate:
            spec:
              template:
                spec:
                  restartPolicy: OnFailure
                  containers: [{name: hello, image: busybox:1.28}]
        """)
    root = write(tmp_path / "repo", {"workloads/cronjob.yaml": cronjob})
    capsys.readouterr()
    assert cli.main(["validate", str(root)]) == 1
    err = capsys.readouterr()
    said = err.out + err.err
    assert (
        "workloads/cronjob.yaml:1: /apiVersion: batch/v1beta1 CronJob was removed in "
        "Kubernetes 1.25 and this repo's kubernetesVersion is 1.34; use apiVersion: batch/v1"
    ) in said
    assert "warning" not in said


def test_optional_karmada_fields_set_to_null_are_absent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API server prunes nulls of non-nullable custom-resource fields before defaulting
    (apiextensions.k8s.io/v1): an OverridePolicy written with `overrideRules:` and no value,
    as Karmada's override-policy page starts one, is accepted and overrides nothing."""
    override = textwrap.dedent("""\
        apiVersion: policy.karmada.io/v1alpha1
        kind: OverridePolicy
        metadata:
          name: nginx-override
        spec:
          resourceSelectors:
            - apiVersion: apps/v1
              kind: Deployment
              name: nginx
              labelSelector:
          overrideRules:
        """)
    propagation = NGINX_SAMPLE.split("---")[1].replace(
        "  placement:\n", "  failover:\n  suspension:\n  placement:\n    clusterTolerations:\n"
    )
    files = {
        "workloads/nginx.yaml": deployment(2),
        "policies/nginx.yaml": propagation + "---\n" + override,
    }
    root = write(tmp_path / "repo", files)
    capsys.readouterr()
    assert cli.main(["validate", str(root)]) == 0, capsys.readouterr()
    assert placed(schedule(root, capsys)["Deployment/nginx"]) == {"member1": 1, "member2": 1}


def test_messages_speak_yaml_not_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A null or a boolean where a string belongs is quoted as YAML writes it."""
    policy = NGINX_SAMPLE.split("---")[1].replace(
        "        - member2\n", "        - null\n        - true\n", 1
    )
    root = write(tmp_path / "repo", {"workloads/nginx.yaml": deployment(2) + "---" + policy})
    capsys.readouterr()
    assert cli.main(["validate", str(root)]) == 1
    err = capsys.readouterr()
    said = err.out + err.err
    assert "null is not of type 'string'" in said
    assert "true is not of type 'string'" in said
    assert "None" not in said
    assert "True" not in said


FIELD_OVERRIDE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: test1
data:
  test.yaml: |
    key:
      key1: value
  settings.json: '{"log":{"level":"info"},"replicas":1}'
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: test1
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: ConfigMap, name: test1}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: test1
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: ConfigMap, namespace: default, name: test1}
  overrideRules:
    - targetCluster: {clusterNames: [member1]}
      overriders:
        fieldOverrider:
          - fieldPath: /data/test.yaml
            yaml:
              - {subPath: /key/key1, operator: replace, value: updated_value}
              - {subPath: /key/key2, operator: add, value: [a, b]}
          - fieldPath: /data/settings.json
            json:
              - {subPath: /log/level, operator: replace, value: debug}
              - {subPath: /replicas, operator: remove}
"""


def test_field_overrider_patches_yaml_and_json_inside_a_configmap_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """https://karmada.io/docs/userguide/scheduling/override-policy (FieldOverrider, v1.12)
    and Karmada's overridemanager_test.go `ApplyFieldOverriderPolicies_YAML`: replacing
    /key/key1 in the ConfigMap key test.yaml gives "key:\\n  key1: updated_value\\n"; JSON text
    is patched the same way; member2, not targeted, keeps the text as written."""
    root = write(tmp_path / "repo", {"workloads/config.yaml": FIELD_OVERRIDE})
    out = render(root, tmp_path / "out", capsys)

    def data(member: str) -> dict[str, str]:
        path = out / "clusters" / member / "default" / "configmap-test1.yaml"
        (doc,) = yamlio.parse_documents("cm", path.read_bytes())
        return dict(doc.body["data"])

    assert data("member1") == {
        "test.yaml": "key:\n  key1: updated_value\n  key2:\n    - a\n    - b\n",
        "settings.json": '{"log":{"level":"debug"}}',
    }
    assert data("member2") == {
        "test.yaml": "key:\n  key1: value\n",
        "settings.json": '{"log":{"level":"info"},"replicas":1}',
    }


@pytest.mark.parametrize(
    ("overrider", "fragment"),
    [
        ("{fieldPath: /data/missing, yaml: [{subPath: /a, operator: remove}]}", "no such field"),
        ("{fieldPath: /metadata, yaml: [{subPath: /a, operator: remove}]}", "not a string"),
        ("{fieldPath: /data/test.yaml}", "must have either json or yaml"),
        (
            "{fieldPath: /data/test.yaml, yaml: [{subPath: /key/key1, operator: replace}]}",
            "a value is required for replace",
        ),
        (
            "{fieldPath: /data/settings.json, json: [{subPath: /nope/x, operator: replace,"
            " value: 1}]}",
            "do not apply",
        ),
    ],
)
def test_a_field_overrider_that_cannot_apply_fails_validate_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrider: str, fragment: str
) -> None:
    start = FIELD_OVERRIDE.index("        fieldOverrider:")
    text = FIELD_OVERRIDE[:start] + f"        fieldOverrider:\n          - {overrider}\n"
    root = write(tmp_path / "repo", {"workloads/config.yaml": text})
    capsys.readouterr()
    assert cli.main(["validate", str(root)]) == 1
    err = capsys.readouterr()
    said = err.out + err.err
    line = text[: text.index("          - {fieldPath")].count("\n") + 1
    assert f"workloads/config.yaml:{line}: " in said, said
    assert fragment in said, said


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        (
            "spec",
            "schedulePriority",
            "{priorityClassSource: KubePriorityClass, priorityClassName: x}",
        ),
        ("placement", "workloadAffinity", "{affinity: {groupByLabelKey: app}}"),
    ],
)
def test_karmada_fields_dro_does_not_implement_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, field: str, value: str
) -> None:
    """schedulePriority (Karmada v1.15+) and placement.workloadAffinity (v1.17+) are
    Karmada's API: dro names them as not supported, not as unknown fields."""
    policy = NGINX_SAMPLE.split("---")[1]
    anchor = "  placement:\n" if where == "spec" else "    clusterAffinity:\n"
    indent = "  " if where == "spec" else "    "
    policy = policy.replace(anchor, f"{indent}{field}: {value}\n{anchor}", 1)
    text = deployment(2) + "---" + policy
    root = write(tmp_path / "repo", {"workloads/nginx.yaml": text})
    capsys.readouterr()
    assert cli.main(["validate", str(root)]) == 1
    err = capsys.readouterr()
    said = err.out + err.err
    line = text[: text.index(f"{field}:")].count("\n") + 1
    assert f"nginx.yaml:{line}: " in said, said
    assert f"Karmada field {field} is not supported by dro" in said, said
    assert "unknown field" not in said
