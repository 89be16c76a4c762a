"""Karmada's `spec.suspension` through `dro reconcile --once`: what a suspended dispatch keeps.

https://karmada.io/docs/userguide/scheduling/propagation-policy (Suspension): with
`dispatching: true` changes to the resource template stop reaching every member cluster, with
`dispatchingOnClusters.clusterNames` only the named ones; what already runs stays. Karmada
still schedules, creates the Work of a new cluster suspended (nothing reaches it), and deletes
the Work of a cluster that leaves the placement (binding controller, removeOrphanWorks).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, make_source_repo
from karmadarepo import write

from reconciler import cli, yamlio

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: nginx, labels: {app: nginx}}
spec:
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers: [{name: nginx, image: "nginx:{tag}"}]
"""
POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: nginx-propagation}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  placement:
    clusterAffinity: {clusterNames: [{clusters}]}
"""


def _files(tag: str, clusters: str, suspension: str = "") -> dict[str, str]:
    policy = POLICY.replace("{clusters}", clusters) + suspension
    return {
        "workloads/nginx.yaml": DEPLOYMENT.replace("{tag}", tag),
        "policies/nginx.yaml": policy,
    }


def _images(repo_bare: Path) -> dict[str, str]:
    """Cluster → the nginx image rendered on dro/rendered."""
    listing = git(repo_bare, "ls-tree", "-r", "--name-only", "dro/rendered")
    images = {}
    for path in listing.splitlines():
        if path.startswith("clusters/") and path.endswith("/deployment-nginx.yaml"):
            text = git(repo_bare, "show", f"dro/rendered:{path}")
            (doc,) = yamlio.parse_documents(path, text.encode())
            images[path.split("/")[1]] = doc.body["spec"]["template"]["spec"]["containers"][0][
                "image"
            ]
    return images


def _kustomized(repo_bare: Path, cluster: str) -> list[str]:
    text = git(repo_bare, "show", f"dro/rendered:clusters/{cluster}/kustomization.yaml")
    (doc,) = yamlio.parse_documents("k", text.encode())
    return list(doc.body.get("resources") or [])


def test_suspended_dispatching_keeps_what_each_cluster_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src", content=None)
    write(repo.work, _files("1.0", "member1, member2"))
    repo.commit("nginx 1.0 on member1 and member2")
    args = ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "s")]
    assert cli.main(args) == 0, capsys.readouterr()
    assert _images(repo.bare) == {"member1": "nginx:1.0", "member2": "nginx:1.0"}

    # dispatchingOnClusters: only member1 is held back
    on_member1 = "  suspension:\n    dispatchingOnClusters: {clusterNames: [member1]}\n"
    write(repo.work, _files("2.0", "member1, member2", on_member1))
    repo.commit("nginx 2.0, member1 suspended")
    assert cli.main(args) == 0, capsys.readouterr()
    assert _images(repo.bare) == {"member1": "nginx:1.0", "member2": "nginx:2.0"}

    # dispatching: every cluster is held back; a new cluster gets nothing, and one that
    # leaves the placement is pruned as Karmada deletes its Work
    everywhere = "  suspension:\n    dispatching: true\n"
    write(repo.work, _files("3.0", "member1, member3", everywhere))
    repo.commit("nginx 3.0, all suspended, member2 out, member3 in")
    assert cli.main(args) == 0, capsys.readouterr()
    assert _images(repo.bare) == {"member1": "nginx:1.0"}
    assert _kustomized(repo.bare, "member3") == []

    # resumed: the template as it is now reaches every cluster of the placement
    write(repo.work, _files("3.0", "member1, member3"))
    repo.commit("resume")
    assert cli.main(args) == 0, capsys.readouterr()
    assert _images(repo.bare) == {"member1": "nginx:3.0", "member3": "nginx:3.0"}


def test_dispatching_with_dispatching_on_clusters_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Karmada's webhook (validateSuspension): the two cannot co-exist."""
    both = (
        "  suspension:\n    dispatching: true\n"
        "    dispatchingOnClusters: {clusterNames: [member1]}\n"
    )
    root = write(tmp_path / "repo", _files("1.0", "member1", both))
    capsys.readouterr()
    assert cli.main(["validate", str(root)]) == 1
    err = capsys.readouterr()
    assert (
        "policies/nginx.yaml:8: /spec/suspension: suspension dispatching cannot co-exist "
        "with dispatchingOnClusters.clusterNames"
    ) in err.out + err.err
