"""Overrides cannot break or hijack an object: `dro validate` tries every override on every
cluster it targets, and reports each failure at the operation's own line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE

from reconciler import cli

POLICY = "policies/bad.yaml"
DRO = (
    "apiVersion: multicluster.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: o}\n"
    "spec:\n  resourceSelector: {apiVersion: apps/v1, kind: Deployment, namespace: shop, "
    "name: cart}\n  overrides:\n"
)
KARMADA = (
    "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\n"
    "metadata: {name: o, namespace: shop}\nspec:\n"
    "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: cart}]\n"
    "  overrideRules:\n    - overriders:\n"
)
SECRET = (
    "apiVersion: multicluster.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: s}\n"
    "spec:\n  resourceSelector: {apiVersion: v1, kind: Secret, namespace: payments}\n"
    "  overrides:\n    - fieldPatches:\n"
)


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str]:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / POLICY).write_text(text)
    code = cli.main(["validate", str(repo)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out + captured.err


CASES = [
    (
        "field-patch-renames",
        DRO + "    - fieldPatches:\n        - {path: metadata.name, value: coredns}\n",
        8,
        "would change metadata.name",
    ),
    (
        "field-patch-moves-namespace",
        DRO + "    - fieldPatches:\n        - {path: metadata.namespace, value: kube-system}\n",
        8,
        "would change metadata.namespace",
    ),
    (
        "field-patch-changes-kind",
        DRO + "    - fieldPatches:\n        - {path: kind, value: DaemonSet}\n",
        8,
        "would change kind",
    ),
    (
        "plaintext-replaces-metadata",
        KARMADA + "        plaintext:\n          - path: /metadata\n            operator: replace\n"
        "            value: {name: coredns, namespace: kube-system}\n",
        9,
        "would change metadata.name",
    ),
    (
        "plaintext-replaces-the-api-version",
        KARMADA
        + "        plaintext:\n          - {path: /apiVersion, operator: replace, value: x/v1}\n",
        9,
        "would change apiVersion",
    ),
    (
        "labels-overrider-drops-dro-label",
        KARMADA + "        labelsOverrider:\n          - operator: remove\n"
        "            value: {app.kubernetes.io/managed-by: dro}\n",
        9,
        "would change metadata.labels.app.kubernetes.io/managed-by",
    ),
    (
        "field-patch-wrong-type",
        DRO + "    - fieldPatches:\n        - {path: metadata.labels.x, value: 1}\n"
        "        - path: spec.replicas\n          value: many\n",
        9,
        "invalid at /spec/replicas: 'many' is not of type 'integer'",
    ),
    (
        "field-patch-unknown-field",
        DRO + "    - fieldPatches:\n        - {path: spec.template.spec.containerz, value: []}\n",
        8,
        "unknown field 'containerz'",
    ),
    (
        "plaintext-breaks-the-schema",
        KARMADA
        + "        plaintext:\n          - {path: /spec/paused, operator: add, value: maybe}\n",
        9,
        "invalid at /spec/paused",
    ),
    (
        "fails-on-one-cluster-only",
        DRO + "    - clusterSelector: {names: [us-east-1]}\n      fieldPatches:\n"
        "        - {path: metadata.name, value: ok}\n"
        "    - clusterSelector: {names: [eu-west-1]}\n      fieldPatches:\n"
        "        - {path: 'spec.template.spec.containers[7].image', value: x}\n",
        12,
        "no list item [7] (on cluster eu-west-1)",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_override_fails_validate_at_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, fragment: str
) -> None:
    code, out = validate(tmp_path, capsys, text)
    assert code == 1
    rows = [row for row in out.splitlines() if row.startswith(f"{POLICY}:{line}: ")]
    assert rows, out
    assert any(fragment in row for row in rows), out


def test_every_failing_operation_is_reported_not_only_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = validate(
        tmp_path,
        capsys,
        DRO + "    - fieldPatches:\n        - {path: 'spec.template.spec.containers[3].image', "
        "value: x}\n        - {path: metadata.name, value: y}\n"
        "        - {path: spec.replicas, value: many}\n",
    )
    assert code == 1
    assert f"{POLICY}:8: " in out
    assert f"{POLICY}:9: " in out
    assert f"{POLICY}:10: " in out


def test_an_override_on_a_secret_never_shows_its_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = "planted-secret-value-4242"
    code, out = validate(
        tmp_path,
        capsys,
        SECRET + f"        - {{path: stringData.POSTGRES_PASSWORD, value: {{v: {planted}}}}}\n"
        f"        - {{path: data.TOKEN, value: {planted}}}\n",
    )
    assert code == 1
    assert f"{POLICY}:8: " in out
    assert "the value is not shown" in out
    assert planted not in out
    assert "example-only-not-a-real-password" not in out


def test_valid_overrides_of_the_example_still_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = validate(
        tmp_path, capsys, DRO + "    - fieldPatches:\n        - {path: spec.replicas, value: 2}\n"
    )
    assert code == 0, out


ROLE = (
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n"
    "metadata: {name: reader, namespace: shop}\n"
    "rules:\n  - {apiGroups: [''], resources: [configmaps], verbs: [get, list]}\n"
)
WIDEN = (
    "apiVersion: multicluster.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: w}\n"
    "spec:\n  resourceSelector: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, "
    "namespace: shop}\n  overrides:\n    - fieldPatches:\n"
    "        - {path: 'rules[0].verbs[1]', value: '*'}\n"
)


def test_an_override_cannot_put_in_what_the_guard_denies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guard checks the source's objects; an override that turns a Role's verb into `*`
    on some cluster is caught at the operation's line, not applied."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / "workloads" / "shop" / "role.yaml").write_text(ROLE)
    (repo / POLICY).write_text(WIDEN)
    code = cli.main(["validate", str(repo)])
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert "Traceback" not in output
    assert code == 1
    assert f"{POLICY}:8: /spec/overrides/0/fieldPatches/0" in output
    assert "'*' in a Role's verbs" in output
    assert "role.yaml" not in output, "the source Role itself is allowed"
