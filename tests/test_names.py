"""Names, namespaces, kinds and API groups follow Kubernetes' own rules, checked at their line.

Every bad case goes through `dro reconcile --once` against a real git repository: exit 1, the
error at the name's file and line, and no commit. Every good case is a name the API server
accepts, and `dro validate` must accept it too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, make_source_repo

from reconciler import cli

W = "workloads/shop/names.yaml"


def _object(api_version: str, kind: str, name: str, extra: str = "") -> str:
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n{extra}"


def _cm(name: str, namespace: str = "shop") -> str:
    return _object("v1", "ConfigMap", name, f"  namespace: {namespace}\n")


def _crd(name: str, plural: str = "widgets", group: str = "example.com") -> str:
    return _object(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        name,
        f"spec:\n  group: {group}\n  scope: Namespaced\n"
        f"  names: {{plural: {plural}, singular: widget, kind: Widget, listKind: WidgetList}}\n"
        "  versions:\n  - name: v1\n    served: true\n    storage: true\n"
        "    schema:\n      openAPIV3Schema:\n"
        "        {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    )


SERVICE_SPEC = "  namespace: shop\nspec:\n  ports: [{port: 80}]\n"

BAD: list[tuple[str, str, int, str]] = [
    ("kind-escapes", _object("example.com/v1", "../../../../x", "evil"), 2, "kind '../../../../x'"),
    ("kind-with-slash", _object("example.com/v1", "a/b", "x"), 2, "DNS-1035 label"),
    ("kind-starts-with-digit", _object("example.com/v1", "1Widget", "x"), 2, "DNS-1035"),
    ("api-version-two-slashes", _object("a/b/v1", "Widget", "x"), 1, "one '/' at most"),
    ("api-group-escapes", _object("../x/v1", "Widget", "x"), 1, "one '/' at most"),
    ("api-group-uppercase", _object("Example.com/v1", "Widget", "x"), 1, "group 'Example.com'"),
    ("api-group-dot-dot", _object("a..b/v1", "Widget", "x"), 1, "RFC 1123 subdomain"),
    ("api-version-empty-version", _object("example.com/", "Widget", "x"), 1, "version ''"),
    ("name-uppercase", _cm("Web"), 4, "RFC 1123 subdomain"),
    ("name-underscore", _cm("web_config"), 4, "RFC 1123 subdomain"),
    ("name-too-long", _cm("a" * 254), 4, "no more than 253 characters"),
    ("name-percent", _cm("'a%2fb'"), 4, "may not contain '%'"),
    ("name-newline", _cm('"a\\nb"'), 4, "control characters"),
    ("name-tab", _cm('"a\\tb"'), 4, "control characters"),
    ("name-backslash", _cm("'a\\b'"), 4, "may not contain '\\'"),
    ("name-dot", _cm("'.'"), 4, "may not be '.'"),
    ("name-dot-git", _cm(".git"), 4, "RFC 1123 subdomain"),
    ("name-empty", _cm("''"), 4, "may not be empty"),
    ("namespace-with-dot", _cm("x", "shop.prod"), 5, "RFC 1123 label"),
    ("namespace-too-long", _cm("x", "n" * 64), 5, "no more than 63 characters"),
    ("namespace-newline", _cm("x", '"shop\\n"'), 5, "control characters"),
    ("namespace-object-dotted", _object("v1", "Namespace", "a.b"), 4, "RFC 1123 label"),
    ("service-starts-with-digit", _object("v1", "Service", "1web", SERVICE_SPEC), 4, "RFC 1035"),
    ("service-dotted", _object("v1", "Service", "web.v2", SERVICE_SPEC), 4, "RFC 1035 label"),
    (
        "cronjob-over-52",
        _object("batch/v1", "CronJob", "c" * 53, "  namespace: shop\n"),
        4,
        "no more than 52 characters",
    ),
    ("rbac-dot-dot", _object("rbac.authorization.k8s.io/v1", "ClusterRole", "'..'"), 4, "'..'"),
    ("rbac-slash", _object("rbac.authorization.k8s.io/v1", "ClusterRole", "a/b"), 4, "'/'"),
    ("crd-name-not-plural-group", _crd("widget.example.com"), 4, "'widgets.example.com'"),
    (
        "apiservice-name",
        _object(
            "apiregistration.k8s.io/v1",
            "APIService",
            "metrics",
            "spec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 100, "
            "versionPriority: 100}\n",
        ),
        4,
        "'v1beta1.metrics.k8s.io'",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [case[1:] for case in BAD], ids=[case[0] for case in BAD]
)
def test_a_bad_name_is_an_error_at_its_line_and_nothing_is_committed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, fragment: str
) -> None:
    repo = make_source_repo(tmp_path / "src")
    repo.write({W: text})
    repo.commit("bad name")
    code = cli.main(
        ["reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "st")]
    )
    out = capsys.readouterr().err
    assert code == 1
    matching = [row for row in out.splitlines() if row.startswith(f"{W}:{line}: ")]
    assert any(fragment in row for row in matching), out
    assert repo.branch_sha("dro/rendered") is None


GOOD: list[tuple[str, str]] = [
    (
        "rbac-colon",
        _object("rbac.authorization.k8s.io/v1", "ClusterRole", "system:aggregate-to-admin"),
    ),
    ("rbac-capitals", _object("rbac.authorization.k8s.io/v1", "ClusterRole", "Admin:Team A")),
    ("rbac-dot-git", _object("rbac.authorization.k8s.io/v1", "ClusterRole", ".git")),
    (
        "rolebinding-colon",
        _object(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            "system:controller:x",
            "  namespace: shop\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, "
            "name: view}\n",
        ),
    ),
    ("configmap-dotted", _cm("app.config.v2")),
    ("configmap-253", _cm("a" * 253)),
    ("configmap-digit-first", _cm("1st")),
    (
        "cronjob-52",
        _object(
            "batch/v1",
            "CronJob",
            "c" * 52,
            "  namespace: shop\n"
            "spec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n"
            "      template:\n        spec:\n          restartPolicy: Never\n"
            "          containers: [{name: c, image: busybox}]\n",
        ),
    ),
    ("namespace-63", _object("v1", "Namespace", "n" * 63)),
    ("crd-plural-group", _crd("widgets.example.com")),
    (
        "apiservice-version-group",
        _object(
            "apiregistration.k8s.io/v1",
            "APIService",
            "v1beta1.metrics.k8s.io",
            "spec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 100, "
            "versionPriority: 100}\n",
        ),
    ),
    ("empty-namespace-is-default", _cm("x", "''")),
]


@pytest.mark.parametrize("text", [case[1] for case in GOOD], ids=[case[0] for case in GOOD])
def test_a_name_kubernetes_accepts_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    (source / W).write_text(text)
    code = cli.main(["validate", str(source)])
    out = capsys.readouterr().out
    assert code == 0, out


def test_two_objects_that_would_share_a_file_are_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`v1 Deployment` has no schema (a warning only), but its file would be apps' one."""
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    (source / W).write_text(
        "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: frontend\n  namespace: shop\n"
    )
    code = cli.main(["validate", str(source)])
    out = capsys.readouterr().err
    assert code == 1
    assert f"{W}:4: /metadata/name: shop/Deployment/frontend would be written to the same " in out
    assert "shop/deployment-frontend.yaml" in out
