"""The guard at validate: what a repo may place, the operator's ceiling, and dro.yaml's
narrowing. Each case runs `dro validate` (and one `dro plan`) as a user would, and expects
its error at the exact line that breaks the rule."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from reconciler import cli
from reconciler.cli import run as cli_run
from reconciler.errors import ValidationFailed
from reconciler.validate import guard
from tests.conftest import git, make_source_repo
from tests.livefleet import DRO, cluster_file, source_files

W = "workloads/extra.yaml"
COREDNS = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
spec:
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      containers: [{name: coredns, image: "evil:1"}]
"""
KUBE_PUBLIC = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-public\n"
STAR_ROLE = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: everything}
rules:
  - apiGroups: ["*"]
    resources: [pods]
    verbs:
      - get
      - "*"
  - apiGroups: [""]
    resources: ["*"]
    verbs: [get]
"""
GROUPS_ONLY_ROLE = """apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: shop}
rules:
  - {apiGroups: ["*"], resources: [deployments], verbs: [get, list]}
"""
NAMED = """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: named}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: shop}]
  targetClusters:
    - selectorType: name
      values:
        - a
        - b
  placement: {replicaScheduling: {type: Duplicated}}
"""


def narrowed(guard_yaml: str) -> str:
    """The fleet's dro.yaml with a `spec.guard` (indented under spec)."""
    return DRO + "  guard:\n" + "".join(f"    {line}\n" for line in guard_yaml.splitlines())


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in (source_files() | files).items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], *flags: str
) -> tuple[int, list[str]]:
    repo = write(tmp_path / "repo", files)
    code = cli.main(["validate", str(repo), *flags])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err.splitlines()


CASES = [
    ("kube-system", {W: COREDNS}, [(W, 5, "/metadata/namespace", "'kube-system' is denied")]),
    ("namespace-object", {W: KUBE_PUBLIC}, [(W, 4, "/metadata/name", "'kube-public' is denied")]),
    (
        "rbac-star",
        {W: STAR_ROLE},
        [
            (W, 9, "/rules/0/verbs/1", "'*' in a ClusterRole's verbs"),
            (W, 11, "/rules/1/resources/0", "'*' in a ClusterRole's resources"),
        ],
    ),
    (
        "dro-yaml-cannot-widen-namespaces",
        {"dro.yaml": narrowed("namespaces:\n  allow: [shop, kube-system]")},
        [
            (
                "dro.yaml",
                12,
                "/spec/guard/namespaces/allow/1",
                "cannot allow namespace 'kube-system'",
            )
        ],
    ),
    (
        "dro-yaml-cannot-allow-wildcards",
        {"dro.yaml": narrowed("rbacWildcards: Allow")},
        [("dro.yaml", 11, "/spec/guard/rbacWildcards", "cannot allow '*' in RBAC rules")],
    ),
    (
        "dro-yaml-narrows-namespaces",
        {"dro.yaml": narrowed("namespaces: {deny: [shop]}")},
        [
            (
                "workloads/web.yaml",
                3,
                "/metadata/name",
                "'shop' is denied by dro.yaml's spec.guard (dro.yaml:10)",
            )
        ],
    ),
    (
        "dro-yaml-denies-a-cluster-by-name-and-by-label",
        {"dro.yaml": narrowed("clusters: {deny: [b]}"), "policies/named.yaml": NAMED},
        [
            ("policies/named.yaml", 10, "/spec/targetClusters/0/values/1", "selects cluster b,"),
            ("policies/divided.yaml", 7, "/spec/targetClusters/0/values/0", "selects cluster b,"),
            ("dro.yaml", 7, "/spec/defaultPlacement/targetClusters/0/values/0", "cluster b,"),
        ],
    ),
    (
        "a-renamed-cluster-keeps-its-denied-context",
        {
            "dro.yaml": narrowed("clusters: {deny: [c]}"),
            "clusters/sneaky.yaml": cluster_file("sneaky").replace("context: sneaky", "context: c"),
        },
        [("policies/divided.yaml", 7, "/spec/targetClusters/0/values/0", "cluster c, sneaky,")],
    ),
]


@pytest.mark.parametrize(("files", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_guard_reports_each_violation_at_its_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    expected: list[tuple[str, int, str, str]],
) -> None:
    code, lines = validate(tmp_path, capsys, files)
    assert code == 1
    for path, line, pointer, fragment in expected:
        matching = [row for row in lines if row.startswith(f"{path}:{line}: {pointer}: ")]
        assert any(fragment in row for row in matching), f"{path}:{line} {pointer}:\n" + "\n".join(
            lines
        )


def test_a_star_in_api_groups_alone_is_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = validate(tmp_path, capsys, {W: GROUPS_ONLY_ROLE})
    assert code == 0, lines


def test_the_operators_ceiling_may_widen_and_dro_yaml_may_narrow_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ceiling = tmp_path / "guard.yaml"
    ceiling.write_text("namespaces: {deny: []}\nrbacWildcards: Allow\n")
    code, lines = validate(
        tmp_path, capsys, {W: COREDNS + "---\n" + STAR_ROLE}, "--guard", str(ceiling)
    )
    assert code == 0, lines
    files = {
        W: COREDNS,
        "dro.yaml": narrowed("namespaces:\n  allow: [kube-system, shop]\n  deny: ['kube-*']"),
    }
    code, lines = validate(tmp_path / "2", capsys, files, "--guard", str(ceiling))
    assert code == 1
    assert lines == [
        f"{W}:5: /metadata/namespace: namespace 'kube-system' is denied by dro.yaml's "
        "spec.guard (dro.yaml:10)"
    ]


def test_the_operators_ceiling_denies_what_dro_yaml_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ceiling = tmp_path / "guard.yaml"
    ceiling.write_text("clusterKinds:\n  deny: ['ClusterRole.*']\n")
    monkeypatch.setenv("DRO_GUARD", str(ceiling))
    files = {
        W: STAR_ROLE.replace('"*"', "list").replace('["*"]', "[pods]"),
        "dro.yaml": narrowed("clusterKinds: {allow: [ClusterRole.rbac.authorization.k8s.io]}"),
    }
    code, lines = validate(tmp_path, capsys, files)
    assert code == 1
    kind = "cluster-scoped kind ClusterRole.rbac.authorization.k8s.io"
    assert f"{W}:2: /kind: {kind} is denied by the operator's guard ({ceiling})" in lines
    namespace = "cluster-scoped kind Namespace is denied by dro.yaml's spec.guard (dro.yaml:10)"
    assert f"workloads/web.yaml:2: /kind: {namespace}" in lines
    assert any(
        row.startswith("dro.yaml:11: /spec/guard/clusterKinds/allow/0: dro.yaml cannot allow")
        for row in lines
    ), lines


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "namespaces: [a]\nfoo: 1\n",
            ["guard.yaml:1: /namespaces: must be a mapping", "guard.yaml:2: /foo: unknown field"],
        ),
        ("rbacWildcards: yes\n", ["guard.yaml:1: /rbacWildcards: must be Allow or Deny"]),
        ("clusters: {allow: [a, '']}\n", ["guard.yaml:1: /clusters/allow: must be a list"]),
        ("- a\n", ["guard.yaml:1: /: a guard must be a mapping"]),
    ],
)
def test_a_bad_guard_file_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: list[str]
) -> None:
    (tmp_path / "guard.yaml").write_text(text)
    repo = write(tmp_path / "repo", {})
    code = cli.main(["validate", str(repo), "--guard", str(tmp_path / "guard.yaml")])
    out = capsys.readouterr().err.splitlines()
    assert code == 1
    rows = [row.replace(str(tmp_path) + "/", "") for row in out]
    for fragment in expected:
        assert any(row.startswith(fragment) for row in rows), rows


def test_a_missing_guard_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "repo", {})
    assert cli.main(["validate", str(repo), "--guard", str(tmp_path / "nope.yaml")]) == 1
    err = capsys.readouterr().err
    assert "--guard" in err
    assert "No such file" in err


def test_dro_run_takes_the_guard_from_its_config_file(tmp_path: Path) -> None:
    args = argparse.Namespace(**{o.dest: None for o in cli_run.OPTIONS})
    inline = cli_run.resolve(args, {}, {"guard": {"namespaces": {"deny": ["secret-*"]}}})
    assert inline["guard"].namespaces.permits("kube-system")
    assert not inline["guard"].namespaces.permits("secret-1")
    assert not inline["guard"].rbac_wildcards
    path = tmp_path / "guard.yaml"
    path.write_text("rbacWildcards: Allow\n")
    from_file = cli_run.resolve(args, {"DRO_GUARD": str(path)}, {})
    assert from_file["guard"].rbac_wildcards
    assert not from_file["guard"].namespaces.permits("kube-system"), "built-in section kept"
    with pytest.raises(ValidationFailed):
        cli_run.resolve(args, {}, {"guard": {"namespaces": "all"}})
    assert cli_run.resolve(args, {}, {})["guard"] is None  # the built-in default applies


def test_plan_reports_a_head_that_breaks_the_operators_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_source_repo(tmp_path / "src", None)
    repo.write(source_files())
    repo.commit("base")
    git(repo.work, "branch", "base")
    repo.write({W: COREDNS.replace("kube-system", "platform")})
    repo.commit("head")
    ceiling = tmp_path / "guard.yaml"
    ceiling.write_text("namespaces: {allow: [shop]}\n")
    code = cli.main(
        [
            "plan",
            "--repo",
            str(repo.work),
            "--base",
            "base",
            "--head",
            "main",
            "-o",
            "json",
            "--state-dir",
            str(tmp_path / "state"),
            "--guard",
            str(ceiling),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert f"{W}:5" in out
    assert "namespace 'platform' is denied by the operator's guard" in out


def test_the_builtin_guard_matches_its_documentation() -> None:
    assert guard.BUILTIN.namespaces.deny == ("kube-system", "kube-public", "kube-node-lease")
    assert guard.BUILTIN.cluster_kinds.permits("ClusterRole.rbac.authorization.k8s.io")
    assert not guard.BUILTIN.rbac_wildcards
