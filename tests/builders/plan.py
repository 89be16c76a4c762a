"""The changes `dro plan` is tried on, one branch each, and a way to run it; shared by test_plan
and test_plan_notes (the repository itself is the `reviewed` fixture in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler import cli

if TYPE_CHECKING:  # conftest imports CASES from here
    from tests.conftest import SourceRepo

OLD_PASSWORD = "example-only-not-a-real-password"
NEW_PASSWORD = "rotated-7f3a9c-never-shown"


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(work: Path) -> None:
        text = (work / path).read_text()
        assert old in text, f"{path} no longer holds {old!r}"
        (work / path).write_text(text.replace(old, new, 1))

    return change


def _add_cluster(work: Path) -> None:
    """A new, nearly empty cluster in eu-west, priced like eu-west-2: re-balancing fills it."""
    text = (work / "clusters/eu-west-2.yaml").read_text()
    text = text.replace("name: eu-west-2", "name: eu-west-3").replace("eu-west-2b", "eu-west-3a")
    text = text.replace(
        'allocated: {cpu: "40", memory: 120Gi, pods: "310"}',
        'allocated: {cpu: "4", memory: 12Gi, pods: "30"}',
    )
    (work / "clusters/eu-west-3.yaml").write_text(
        text.replace("context: eu-west-2", "context: eu-west-3")
    )


def _policy_and_replicas(work: Path) -> None:
    _edit(
        "policies/shop.yaml",
        "{labels: {region: ap-south}, weight: 1}",
        "{labels: {region: ap-south}, weight: 3}",
    )(work)
    _edit("workloads/shop/frontend.yaml", "replicas: 6", "replicas: 9")(work)


def _readme(work: Path) -> None:
    (work / "README.md").write_text("# Fleet\n\nHow we run our clusters.\n")


CASES: dict[str, Callable[[Path], None]] = {
    "replicas-changed": _edit("workloads/shop/frontend.yaml", "replicas: 6", "replicas: 9"),
    "policy-moves-workloads": _edit(
        "policies/shop.yaml",
        "{labels: {region: ap-south}, weight: 1}",
        "{labels: {region: ap-south}, weight: 3}",
    ),
    "policy-and-replicas": _policy_and_replicas,
    "cluster-added": _add_cluster,
    "cluster-tainted": _edit(
        "clusters/eu-west-2.yaml",
        "  kubeconfig:",
        "  taints:\n    - {key: maintenance, value: kernel, effect: NoExecute}\n  kubeconfig:",
    ),
    "secret-changed": _edit("workloads/payments/ledger-db.yaml", OLD_PASSWORD, NEW_PASSWORD),
    "readme-only": _readme,
    "invalid-head": _edit("workloads/shop/cart.yaml", "replicas: 4", "replicas: four"),
}


def plan(repo: SourceRepo, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run `dro plan` on the work tree (opened in place); (exit code, stdout)."""
    capsys.readouterr()
    code = cli.main(["plan", "--repo", str(repo.work), "--base", "main", *args])
    return code, capsys.readouterr().out
