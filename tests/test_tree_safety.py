"""No tree that git refuses is ever committed, and every path component fits 255 bytes.

The stress test pushes to a `git daemon` whose repository has `receive.fsckObjects=true`, as
GitHub and GitLab run it, with names at the edges of Kubernetes' rules: the longest names and
groups, dots, capitals, and RBAC names that spell `.git` or `.gitmodules`. Then the branch is
cloned and checked out, which fails on any component longer than the file system allows.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pygit2
import pytest
from conftest import Daemon, SourceRepo, git

from reconciler import cli
from reconciler.branch import paths as layout
from reconciler.domain import ResourceKey, paths
from reconciler.git import gitrepo

GROUP = ".".join(["g" * 61, "h" * 61, "i" * 61, "example"])  # 245 characters
LONG = "a" * 253
RBAC = "rbac.authorization.k8s.io/v1"


def _doc(api_version: str, kind: str, name: str, rest: str = "") -> str:
    return f"---\napiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: '{name}'\n{rest}"


STRESS = "".join(
    [
        _doc("v1", "ConfigMap", LONG, "  namespace: shop\ndata: {a: b}\n"),
        _doc("v1", "ConfigMap", "app.config.v2", "  namespace: shop\n"),
        _doc("v1", "Namespace", "n" * 63),
        _doc(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            f"widgets.{GROUP}",
            f"spec:\n  group: {GROUP}\n  scope: Namespaced\n"
            "  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}\n"
            "  versions:\n  - name: v1\n    served: true\n    storage: true\n"
            "    schema:\n      openAPIV3Schema:\n"
            "        {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
        ),
        _doc(f"{GROUP}/v1", "Widget", LONG, "  namespace: shop\n"),
        _doc(f"{GROUP}/v1", "Widget", LONG[:-1] + "b", "  namespace: shop\n"),
        _doc(RBAC, "ClusterRole", "system:aggregate-to-admin", "rules: []\n"),
        _doc(RBAC, "ClusterRole", ".GIT", "rules: []\n"),
        _doc(RBAC, "ClusterRole", "git~1", "rules: []\n"),
        _doc(RBAC, "ClusterRole", ".gitmodules", "rules: []\n"),
        _doc(RBAC, "ClusterRole", "..a", "rules: []\n"),
        _doc(RBAC, "ClusterRole", "Team A: Admins", "rules: []\n"),
        _doc(RBAC, "ClusterRole", "x" * 400, "rules: []\n"),
        _doc(RBAC, "Role", "a..", "  namespace: shop\nrules: []\n"),
    ]
)


def _fsck_served(served_repo: tuple[SourceRepo, str]) -> tuple[SourceRepo, str]:
    repo, url = served_repo
    git(repo.bare, "config", "receive.fsckObjects", "true")
    repo.write({"workloads/shop/stress.yaml": STRESS})
    repo.commit("names at the edges of the rules")
    return repo, url


def test_names_at_the_edges_push_to_a_strict_remote_and_check_out(
    served_repo: tuple[SourceRepo, str],
    git_daemon: Daemon,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, url = _fsck_served(served_repo)
    code = cli.main(["reconcile", "--once", "--repo", url, "--state-dir", str(tmp_path / "st")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "pushed to" in out
    assert repo.branch_sha("dro/rendered") is not None
    git(repo.bare, "fsck", "--strict", "--no-dangling")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "--quiet", "--branch", "dro/rendered", str(repo.bare), str(checkout))
    written = [p.relative_to(checkout) for p in checkout.rglob("*")]
    components = {part for p in written if p.parts[0] != ".git" for part in p.parts}
    assert max(len(part.encode()) for part in components) <= paths.MAX_COMPONENT_BYTES
    stem = ResourceKey(group="", kind="ConfigMap", namespace="shop", name=LONG).file_stem
    assert len(f"{stem}.yaml") == paths.MAX_COMPONENT_BYTES
    digest = hashlib.sha256(f"configmap-{LONG}".encode()).hexdigest()[: paths.HASH_DIGITS]
    assert stem == f"configmap-{LONG}"[: 255 - 5 - 17] + f"-{digest}"
    decision = (checkout / f"decisions/shop/{stem}.yaml").read_text()
    assert LONG in decision
    widgets = sorted(p.name for p in (checkout / "decisions/shop").glob("widget.*"))
    assert len(widgets) == 2
    assert (
        checkout / "decisions/_cluster/clusterrole.rbac.authorization.k8s.io-.git.yaml"
    ).exists()


def test_the_same_long_names_render_to_the_same_files(
    served_repo: tuple[SourceRepo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = _fsck_served(served_repo)
    first, second = tmp_path / "one", tmp_path / "two"
    assert cli.main(["render", str(repo.work), "--out", str(first)]) == 0
    assert cli.main(["render", str(repo.work), "--out", str(second)]) == 0
    capsys.readouterr()
    one = sorted(p.relative_to(first).as_posix() for p in first.rglob("*"))
    assert one == sorted(p.relative_to(second).as_posix() for p in second.rglob("*"))
    assert any(len(Path(p).name) == paths.MAX_COMPONENT_BYTES for p in one)


UNSAFE = [
    "a/../b.yaml",
    "../b.yaml",
    "./b.yaml",
    "a//b.yaml",
    "/a.yaml",
    "a/",
    ".git/config",
    "a/.GIT/config",
    "a/.git./x",
    "a/.git /x",
    "a/GIT~1/x",
    "a/.git::$INDEX_ALLOCATION/x",
    "a/.g\u200cit/x",
    "a/.gitmodules",
    "a/GITMOD~1",
    "a/b\x00c.yaml",
    "a/b\\c.yaml",
    "a/" + "x" * 256,
]


@pytest.mark.parametrize("path", UNSAFE, ids=[repr(p)[1:30] for p in UNSAFE])
def test_the_tree_writer_refuses_what_git_would_reject(tmp_path: Path, path: str) -> None:
    repo = pygit2.init_repository(str(tmp_path / "cache.git"), bare=True)
    before = sorted(p.name for p in (tmp_path / "cache.git/objects").rglob("*"))
    writer = gitrepo.TreeWriter(repo)
    with pytest.raises(ValueError, match="refusing to commit the path"):
        writer.write({"README.md": b"x", path: b"data"})
    assert sorted(p.name for p in (tmp_path / "cache.git/objects").rglob("*")) == before


def test_the_tree_writer_accepts_what_git_accepts(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "cache.git"), bare=True)
    files = {
        "decisions/_cluster/clusterrole.rbac.authorization.k8s.io-.git.yaml": b"a",
        "decisions/_cluster/clusterrole.rbac.authorization.k8s.io-team a: admins.yaml": b"b",
        "clusters/eu/shop/configmap-" + "a" * 240 + ".yaml": b"c",
        "a/.gitx/git~2/.git-foo/x": b"d",
    }
    tree = gitrepo.TreeWriter(repo).write(files)
    commit = repo.create_commit(
        "refs/heads/main", pygit2.Signature("t", "t@x"), pygit2.Signature("t", "t@x"), "m", tree, []
    )
    assert commit is not None
    done = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"],
        cwd=tmp_path / "cache.git",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_path_of_one_object_uses_the_same_short_stem() -> None:
    key = ResourceKey(group=GROUP, kind="Widget", namespace="n" * 63, name=LONG)
    stem = key.file_stem
    written = [
        layout.object_path("c" * 250, key),
        layout.decision_path(key),
        layout.workload_status_path(key),
    ]
    for path in written:
        assert all(len(part.encode()) <= paths.MAX_COMPONENT_BYTES for part in path.split("/"))
        assert path.endswith(f"/{stem}.yaml")
    assert stem.startswith(f"widget.{GROUP}-aaa")
    assert stem != ResourceKey(group=GROUP, kind="Widget", namespace="x", name=LONG[:-1]).file_stem
