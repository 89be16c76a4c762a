"""A Secret's drift on real API servers, which (unlike the emulator) turn `stringData` into
`data`: written with `stringData`, it is no drift; its live value changed by hand is reported
in `status/drift/` with the values masked, left changed under `Report` and put back under
`Correct`; and neither value appears in any output, log or file dro wrote, but the rendered
Secret manifest itself (`tests/leaks.py`).

The emulator version is tests/test_drift_live.py's `test_a_drifted_secret_never_shows_its_values`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from reconciler import cli
from tests import leaks
from tests.e2e.controlplane import Fleet
from tests.e2e.reconcilefleet import NAMESPACE, DroFleet, dro_on_fleet

CLUSTER = "e2e-a"
POLICY = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {{name: secrets}}
spec:
  resourceSelectors: [{{apiVersion: v1, kind: Secret, namespace: shop}}]
  targetClusters: [{{selectorType: label, values: ["env=prod"]}}]
  placement:
    replicaScheduling: {{type: Duplicated}}
    apply: {{drift: {rule}}}
"""


def secret(value: str) -> str:
    return f"""apiVersion: v1
kind: Secret
metadata: {{name: api-token, namespace: shop}}
type: Opaque
stringData: {{token: "{value}"}}
"""


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def live_token(dro: DroFleet) -> str:
    found = dro.core(CLUSTER).read_namespaced_secret("api-token", NAMESPACE)
    return base64.b64decode(found.data["token"]).decode()


def test_a_hand_edited_secret_is_reported_masked_and_put_back_under_correct(
    dro: DroFleet, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered, edited = leaks.plant("rendered-token"), leaks.plant("edited-token")
    hunt = leaks.Hunt([rendered, edited])
    dro.repo.write(
        {
            "workloads/secret.yaml": secret(rendered.value),
            "policies/secrets.yaml": POLICY.format(rule="Report"),
        }
    )
    dro.repo.commit("a Secret written with stringData, its drift reported")
    first = dro.reconcile()
    assert first.applied is not None
    assert first.applied.ok
    assert live_token(dro) == rendered.value, "the API server turned stringData into data"
    settings = dro.settings
    diff = ["diff", "--repo", str(settings.repo), "--state-dir", str(settings.state_dir)]
    diff += ["--kubeconfig", str(settings.kubeconfig), "-o", "json"]
    hunt.text("reconcile", capsys.readouterr().out)
    assert cli.main(diff) == 0, "stringData against the live data is no difference"
    hunt.text("dro diff, no drift", capsys.readouterr().out)

    dro.core(CLUSTER).patch_namespaced_secret(
        "api-token", NAMESPACE, {"data": {"token": edited.base64}}, field_manager="kubectl-edit"
    )
    assert cli.main(diff) == 2
    printed = capsys.readouterr()
    hunt.text("dro diff -o json", printed.out)
    hunt.text("dro diff stderr", printed.err)
    (changes,) = [
        obj["changes"]
        for cluster in json.loads(printed.out)["clusters"]
        for obj in cluster["objects"]
        if obj["kind"] == "Secret"
    ]
    assert [c["pointer"] for c in changes] == ["/data/token"]
    assert cli.main(diff[:-2]) == 2
    printed = capsys.readouterr()
    hunt.text("dro diff (text)", printed.out + printed.err)
    assert "api-token" in printed.out

    reported = dro.reconcile()
    assert reported.applied is not None
    by_cluster = {s.cluster: s.reported for s in reported.applied.clusters}
    assert by_cluster[CLUSTER] == ["Secret shop/api-token: .data.token"]
    assert live_token(dro) == edited.value, "Report leaves the edit"
    (entry,) = dro.committed(f"status/drift/{CLUSTER}.yaml")["status"]["objects"]
    assert (entry["resource"], entry["rule"]) == ("core/Secret/shop/api-token", "Report")
    assert entry["fields"] == [
        {
            "pointer": "/data/token",
            "live": "<redacted: live value>",
            "rendered": "<redacted: rendered value>",
        }
    ]

    dro.repo.write({"policies/secrets.yaml": POLICY.format(rule="Correct")})
    dro.repo.commit("correct drift of the Secrets")
    corrected = dro.reconcile()
    assert corrected.applied is not None
    assert corrected.applied.ok
    assert live_token(dro) == rendered.value, "Correct puts the value back"
    hunt.text("reconcile passes", "\n".join(capsys.readouterr()))

    assert settings.repo is not None
    hunt.git(Path(settings.repo), source_refs=("refs/heads/main",))
    caches = sorted(p.parent for p in settings.state_dir.rglob("HEAD") if p.parent.name != "logs")
    assert caches, "dro's git caches are searched too"
    for cache in caches:
        hunt.git(cache, source_refs=("refs/remotes/origin/main", "refs/heads/main"))
    hunt.folder(
        settings.state_dir,
        allowed=lambda path, data: any(p.endswith(".git") or p == ".git" for p in path.parts),
    )
    hunt.assert_clean()
