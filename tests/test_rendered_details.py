"""Rendered details: the placement annotation has no empty segment, status files hold
Kubernetes quantities, and `dro plan` names files by their path on the output branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE

from reconciler import cli, inventory, observe, status, yamlio
from reconciler.domain import ResourceKey

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
                assert "//" not in value and not value.startswith("/"), (path, line)


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
        name = inventory.placement_name(key.group, key.kind, key.namespace, key.name)
        assert "//" not in name and not name.startswith("/")
        assert status._key(name) == key
