"""Rendered details: the placement annotation has no empty segment, status files hold
Kubernetes quantities, and `dro plan` names files by their path on the output branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE

from reconciler import cli, load, validate, yamlio
from reconciler.branch import statefiles, status
from reconciler.domain import Observation, ResourceKey
from reconciler.kube import inventory
from reconciler.live import observe

PLACEMENT = "multicluster.io/placement"
AT = "2026-01-01T00:00:00Z"


def _rendered(out: Path, relative: str) -> dict[str, Any]:
    body = yamlio.parse_documents(relative, (out / relative).read_bytes())[0].body
    assert isinstance(body, dict)
    return body


def test_the_placement_annotation_names_the_core_group_and_cluster_scope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli.main(["render", str(EXAMPLE), "--out", str(out)]) == 0
    capsys.readouterr()
    namespace = _rendered(out, "clusters/eu-west-1/_cluster/namespace-shop.yaml")
    assert namespace["metadata"]["annotations"][PLACEMENT] == "core/Namespace/_cluster/shop"
    service = _rendered(out, "clusters/eu-west-1/shop/service-frontend.yaml")
    assert service["metadata"]["annotations"][PLACEMENT] == "core/Service/shop/frontend"
    deployment = _rendered(out, "clusters/eu-west-1/shop/deployment-frontend.yaml")
    assert deployment["metadata"]["annotations"][PLACEMENT] == "apps/Deployment/shop/frontend"
    for path in out.rglob("*.yaml"):
        for line in path.read_text().splitlines():
            if PLACEMENT in line:
                value = line.split(": ", 1)[1]
                assert "//" not in value, (path, line)
                assert not value.startswith("/"), (path, line)


@pytest.mark.parametrize(
    ("annotation", "key"),
    [
        ("core/Pod/shop/web", ResourceKey("", "Pod", "shop", "web")),
        ("/Pod/shop/web", ResourceKey("", "Pod", "shop", "web")),  # written by earlier versions
        ("apps/Deployment/shop/web", ResourceKey("apps", "Deployment", "shop", "web")),
        ("example.com/Widget/_cluster/w", ResourceKey("example.com", "Widget", "", "w")),
        ("example.com/Widget//w", ResourceKey("example.com", "Widget", "", "w")),
    ],
)
def test_observe_traces_pending_pods_by_old_and_new_annotations(
    annotation: str, key: ResourceKey
) -> None:
    pod = {
        "metadata": {"name": "p", "annotations": {PLACEMENT: annotation}},
        "spec": {"containers": [{"name": "c"}]},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": AT,
                }
            ],
        },
    }
    assert observe.pending_pods([pod]) == {key: (1, AT)}


@pytest.mark.parametrize("value", ["", "apps/Deployment/shop", "apps//shop/web", "a/b/c/", 7])
def test_what_is_not_a_placement_name_is_not_read_as_one(value: object) -> None:
    assert inventory.parse_placement_name(value) is None


def test_placement_names_round_trip() -> None:
    for key in (
        ResourceKey("", "Namespace", "", "shop"),
        ResourceKey("", "Service", "shop", "web"),
        ResourceKey("rbac.authorization.k8s.io", "ClusterRole", "", "reader"),
    ):
        name = inventory.placement_name(key)
        assert "//" not in name
        assert not name.startswith("/")
        assert status._key(name) == key


def test_declared_status_files_hold_kubernetes_quantities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli.main(["render", str(EXAMPLE), "--out", str(out)]) == 0
    capsys.readouterr()
    text = (out / "status/clusters/eu-west-1.yaml").read_text()
    assert '    cpu: "96"\n    memory: 300Gi\n    pods: "700"\n' in text  # as declared
    assert "memory: 1Ti\n" in text
    assert ".0\n" not in text.split("waterLevel:")[0], "no float bytes or float cores"


def _status_file(cluster: str, body: dict[str, Any]) -> bytes:
    document = {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ClusterObservation",
        "metadata": {"name": cluster},
        "status": body,
    }
    return statefiles.seal(yamlio.dump(document).encode())


def test_observed_status_files_hold_quantities_and_read_back_as_before() -> None:
    seen = Observation(
        cluster="c1",
        capacity={"cpu": 16.0, "memory": 64 * 2**30, "pods": 220.0},
        used={"cpu": 0.1 + 0.2 + 4, "memory": 1.5 * 2**30, "pods": 3.0},
        largest_node_free={"cpu": 7.75, "memory": 1000.0},
        observed_at=AT,
    )
    written = status.cluster_status(seen)
    assert written["capacity"] == {"cpu": "16", "memory": "64Gi", "pods": "220"}
    assert written["used"] == {"cpu": "4300m", "memory": "1536Mi", "pods": "3"}
    assert written["largestNodeFree"] == {"cpu": "7750m", "memory": "1000"}
    old = {  # as earlier versions wrote it: plain numbers of base units
        **written,
        "capacity": {"cpu": 16, "memory": 68719476736, "pods": 220},
        "used": {"cpu": 4.3, "memory": 1610612736, "pods": 3},
        "largestNodeFree": {"cpu": 7.75, "memory": 1000},
    }
    clusters = validate.spec(load.from_directory(EXAMPLE)).clusters[:1]
    name = clusters[0].name
    for body in (written, old):
        files = {f"status/clusters/{name}.yaml": _status_file(name, {**body})}
        back = status.committed_observations(files, clusters)[name]
        assert back.capacity == {"cpu": 16.0, "memory": 64 * 2**30, "pods": 220.0}
        assert back.used == pytest.approx({"cpu": 4.3, "memory": 1.5 * 2**30, "pods": 3.0})
        assert back.largest_node_free == {"cpu": 7.75, "memory": 1000.0}
        stale = status.stale_observation(
            clusters[0], status.previous_statuses(files)[name], unreachable_since=None
        )
        assert stale.capacity == back.capacity


@pytest.mark.parametrize("amount", ["lots", "-1", "1e400", True, None, [1]])
def test_a_status_file_with_an_amount_dro_never_writes_is_distrusted(amount: object) -> None:
    data = _status_file("c1", {"source": "observed", "observedAt": AT, "used": {"cpu": amount}})
    with pytest.raises(statefiles.StateError, match="/status/used"):
        statefiles.status_of("status/clusters/c1.yaml", data)
