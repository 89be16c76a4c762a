"""`kind: List` and typed lists (`ConfigMapList`, `RoleList` …) are expanded into their items:
validated at each item's line, masked, planned and applied like any object."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, git, make_source_repo
from livefleet import running_fleet

from reconciler import cli

PLANTED = "planted-list-secret-31337"
LISTS = f"""apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {{name: listed-a, namespace: shop}}
    data: {{a: "1"}}
  - apiVersion: v1
    kind: Secret
    metadata: {{name: listed-secret, namespace: shop}}
    stringData: {{password: {PLANTED}}}
---
apiVersion: v1
kind: ConfigMapList
items:
  - metadata: {{name: listed-b, namespace: shop}}
    data: {{b: "2"}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleList
items:
  - metadata: {{name: reader, namespace: shop}}
    rules: [{{apiGroups: [""], resources: [pods], verbs: [get]}}]
"""
BAD = f"""apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {{name: fine, namespace: shop}}
  - apiVersion: v1
    kind: Secret
    metadata: {{name: s2, namespace: shop}}
    stringData: {{password: [{PLANTED}]}}
    dataa: {{}}
---
apiVersion: v1
kind: ConfigMapList
items:
  - kind: Secret
    metadata: {{name: x, namespace: shop}}
---
apiVersion: v1
kind: List
items: nope
"""


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str]:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / "workloads/shop/lists.yaml").write_text(text)
    code = cli.main(["validate", str(repo)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_items_of_a_list_validate_and_are_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = validate(tmp_path, capsys, LISTS)
    assert code == 0, out
    assert "50 objects" in out, "46 of the example and the 4 items"


def test_a_bad_item_is_located_at_its_own_line_and_never_shows_a_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = validate(tmp_path, capsys, BAD)
    assert code == 1
    path = "workloads/shop/lists.yaml"
    assert (
        f"{path}:10: /items/1/stringData/password: must be of type 'string' or 'null' "
        "(the value is not shown)" in out
    )
    assert f"{path}:11: /items/1/dataa: unknown field 'dataa'" in out
    assert f"{path}:16: /items/0/kind: a ConfigMapList holds only ConfigMaps" in out
    assert f"{path}:21: /items: a List needs a list of items" in out
    assert PLANTED not in out
    assert "Traceback" not in out


def test_a_list_is_applied_item_by_item(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running_fleet(tmp_path) as fleet:
        fleet.repo.write({"workloads/lists.yaml": LISTS})
        fleet.repo.commit("a list")
        args = ["reconcile", "--once", "--repo", str(fleet.repo.bare)]
        args += ["--state-dir", str(fleet.settings.state_dir)]
        args += ["--kubeconfig", str(fleet.settings.kubeconfig), "--move-wait", "0s"]
        assert cli.main(args) == 0
        captured = capsys.readouterr()
        assert PLANTED not in captured.out + captured.err
        for api in fleet.apis.values():
            assert api.get("", "v1", "configmaps", "shop", "listed-a")["data"] == {"a": "1"}
            assert api.get("", "v1", "configmaps", "shop", "listed-b")["data"] == {"b": "2"}
            assert api.get("", "v1", "secrets", "shop", "listed-secret") is not None
            role = api.get("rbac.authorization.k8s.io", "v1", "roles", "shop", "reader")
            assert role["rules"][0]["verbs"] == ["get"]


def test_plan_shows_the_items_and_masks_a_listed_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src")
    git(repo.work, "checkout", "--quiet", "-b", "lists")
    repo.write({"workloads/shop/lists.yaml": LISTS})
    git(repo.work, "add", "--all")
    git(repo.work, "commit", "--quiet", "-m", "lists")
    capsys.readouterr()
    code = cli.main(
        ["plan", "--repo", str(repo.work), "--base", "main", "--head", "lists", "-o", "markdown"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "secret-listed-secret.yaml" in out
    assert "configmap-listed-b.yaml" in out
    assert "role.rbac.authorization.k8s.io-reader.yaml" in out
    assert PLANTED not in out
