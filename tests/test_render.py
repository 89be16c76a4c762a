"""Render: golden output for the example repo, stacking order, and shared renders."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, ROOT

from reconciler import load, render, schedule, validate, yamlio
from reconciler.branch import paths
from reconciler.domain import ResourceKey

GOLDEN = ROOT / "tests" / "golden" / "example"
UPDATE = os.environ.get("DRO_UPDATE_GOLDEN") == "1"


def example_tree() -> dict[str, bytes]:
    spec = validate.spec(load.from_directory(EXAMPLE))
    return render.tree(spec, schedule.place(spec))


def test_example_render_matches_golden_files() -> None:
    tree = example_tree()
    if UPDATE:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for relative, data in tree.items():
            (GOLDEN / relative).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / relative).write_bytes(data)
    on_disk = {
        p.relative_to(GOLDEN).as_posix(): p.read_bytes() for p in GOLDEN.rglob("*") if p.is_file()
    }
    assert sorted(on_disk) == sorted(tree), "refresh with DRO_UPDATE_GOLDEN=1 and review the diff"
    different = [path for path in tree if tree[path] != on_disk[path]]
    assert different == []


def test_render_ignores_decision_order() -> None:
    spec = validate.spec(load.from_directory(EXAMPLE))
    decisions = list(schedule.place(spec))
    shuffled = decisions[:]
    random.Random(7).shuffle(shuffled)
    assert render.tree(spec, shuffled) == render.tree(spec, decisions)


def test_overrides_stack_cluster_wide_then_namespaced() -> None:
    tree = example_tree()
    eu = yamlio.parse_documents("x", tree["clusters/eu-west-1/shop/deployment-frontend.yaml"])
    body = eu[0].body
    container = body["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "eu.registry.example.com/shop/frontend:3.4.1"
    assert body["metadata"]["labels"]["data-residency"] == "eu"
    assert body["metadata"]["annotations"]["shop.example.com/cdn"] == "eu-edge"
    assert body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dro"
    assert (
        body["metadata"]["annotations"]["multicluster.io/placement"]
        == "apps/Deployment/shop/frontend"
    )
    us = yamlio.parse_documents("x", tree["clusters/us-east-1/shop/deployment-frontend.yaml"])
    assert us[0].body["spec"]["replicas"] == 5  # the override of spec.replicas wins
    ap = yamlio.parse_documents("x", tree["clusters/ap-south-1/shop/deployment-frontend.yaml"])
    ap_body = ap[0].body
    assert (
        ap_body["spec"]["template"]["spec"]["containers"][0]["image"]
        == "ap.registry.example.com/shop/frontend:3.4.1"
    )
    assert ap_body["metadata"]["labels"]["mirror"] == "ap-south"
    assert ap_body["spec"]["template"]["spec"]["priorityClassName"] == "regional-standard"


def test_kustomization_lists_every_file_of_its_cluster() -> None:
    tree = example_tree()
    for cluster in ("eu-west-1", "us-east-gpu"):
        listed = yamlio.parse_documents("k", tree[f"clusters/{cluster}/kustomization.yaml"])
        resources = listed[0].body["resources"]
        present = sorted(
            p.split("/", 2)[2]
            for p in tree
            if p.startswith(f"clusters/{cluster}/") and not p.endswith("kustomization.yaml")
        )
        assert resources == present


def test_secret_is_rendered_as_written() -> None:
    tree = example_tree()
    secret = yamlio.parse_documents(
        "s", tree["clusters/us-east-1/payments/secret-ledger-db-credentials.yaml"]
    )[0].body
    assert secret["stringData"]["POSTGRES_USER"] == "ledger"


@pytest.mark.parametrize(
    ("cluster", "key_group", "expected"),
    [
        ("c1", ("apps", "Deployment", "prod", "web"), "clusters/c1/prod/deployment-web.yaml"),
        ("c1", ("", "Namespace", "", "prod"), "clusters/c1/_cluster/namespace-prod.yaml"),
        (
            "c1",
            ("networking.k8s.io", "Ingress", "prod", "web"),
            "clusters/c1/prod/ingress.networking.k8s.io-web.yaml",
        ),
        (
            "c1",
            ("", "ConfigMap", "prod", "Web-Config"),
            "clusters/c1/prod/configmap-web-config.yaml",
        ),
    ],
)
def test_object_paths(cluster: str, key_group: tuple[str, str, str, str], expected: str) -> None:
    assert paths.object_path(cluster, ResourceKey(*key_group)) == expected


def test_golden_folder_exists() -> None:
    assert GOLDEN.is_dir(), "run DRO_UPDATE_GOLDEN=1 pytest tests/test_render.py once"
    assert Path(GOLDEN / "README.md").read_text().startswith("# Rendered by dro")


def test_a_frontend_and_backend_split_across_clusters_get_mcs_objects() -> None:
    spec = validate.spec(load.from_directory(ROOT / "example-repo"))
    decisions = schedule.place(spec)
    tree = render.tree(spec, decisions)
    where = {str(d.key): [p.cluster for p in d.clusters] for d in decisions}
    (front,) = where["analytics/Deployment.apps/storefront-api"]
    (back,) = where["analytics/Deployment.apps/orders-backend"]
    assert front != back
    export = f"clusters/{back}/analytics/serviceexport.multicluster.x-k8s.io-orders-backend.yaml"
    imported = f"clusters/{front}/analytics/serviceimport.multicluster.x-k8s.io-orders-backend.yaml"
    assert b"kind: ServiceExport" in tree[export]
    assert b"port: 8080" in tree[imported]
    assert (
        b"serviceimport.multicluster.x-k8s.io-orders-backend.yaml"
        in tree[f"clusters/{front}/kustomization.yaml"]
    )
    assert b"orders-backend.analytics.svc.clusterset.local" in tree["README.md"]
    assert not any("serviceimport" in p for p in tree if p.startswith(f"clusters/{back}/"))
