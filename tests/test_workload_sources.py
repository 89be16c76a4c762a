"""kustomize and Helm workload sources (load.builds): built by the real tools, placed like
plain manifests, and every failure located at the folder with the tool's own message."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, build_tools, make_source_repo

from reconciler import cli, load, validate, yamlio
from reconciler.domain import ResourceKey, Spec, Workload
from reconciler.load import builds

EXAMPLE = ROOT / "examples" / "kustomize-helm"


@pytest.fixture(autouse=True)
def tools() -> Path:
    """The pinned tools, and no build cached from another test."""
    builds._CACHE.clear()
    return build_tools()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of examples/kustomize-helm to change."""
    target = tmp_path / "repo"
    shutil.copytree(EXAMPLE, target)
    return target


def _spec(path: Path) -> Spec:
    return validate.spec(load.from_directory(path))


def _workload(spec: Spec, kind: str, namespace: str, name: str) -> Workload:
    group = "apps" if kind == "Deployment" else ""
    key = ResourceKey(group=group, kind=kind, namespace=namespace, name=name)
    found = [w for w in spec.workloads if w.key == key]
    assert found, f"no {key} among {[str(w.key) for w in spec.workloads]}"
    return found[0]


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = cli.main(["validate", str(path)])
    return code, capsys.readouterr().err.splitlines()


def test_a_kustomize_folder_is_built_with_its_patch_and_generator(repo: Path) -> None:
    spec = _spec(repo)
    cart = _workload(spec, "Deployment", "shop", "cart")
    patch = yamlio.parse_documents("p", (repo / "workloads/shop/replicas.yaml").read_bytes())
    assert cart.replicas == patch[0].body["spec"]["replicas"] != 2
    assert cart.origin.path == "workloads/shop/ (kustomize)"
    labels = cart.manifest["metadata"]["labels"]
    assert labels["app.kubernetes.io/part-of"] == "shop"
    generated = [w for w in spec.workloads if w.key.name.startswith("cart-config-")]
    assert [w.key.namespace for w in generated] == ["shop"]  # the hashed generator's name
    # the patch (a partial Deployment) and the base are inputs, never plain manifests
    assert not any(f.path.startswith("workloads/shop/base") for f in spec.source.files)


def test_a_helm_chart_is_rendered_with_its_values_in_its_release_namespace(repo: Path) -> None:
    (repo / "workloads/web/values-prod.yaml").write_text("replicas: 7\n")
    helm = repo / "workloads/web/dro-helm.yaml"
    helm.write_text(helm.read_text() + "  valuesFiles: [values-prod.yaml]\n")
    spec = _spec(repo)
    front = _workload(spec, "Deployment", "web", "front")
    assert front.replicas == 7
    image = front.manifest["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.example.com/web/front:2.4.1"  # values.yaml still applies
    # the Service's template names no namespace: it is created in the release's, as helm does
    service = _workload(spec, "Service", "web", "front")
    assert service.origin.path == "workloads/web/ (helm)"
    assert "namespace" not in (repo / "workloads/web/templates/service.yaml").read_text()


def test_the_example_validates_and_renders_through_git_as_from_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_source_repo(tmp_path / "src", EXAMPLE)
    out_git, out_dir = tmp_path / "git", tmp_path / "dir"
    assert cli.main(["render", "--repo", str(source.bare), "--out", str(out_git)]) == 0
    assert cli.main(["render", str(EXAMPLE), "--out", str(out_dir)]) == 0
    capsys.readouterr()
    assert _tree(out_git) == _tree(out_dir)
    placed = _tree(out_dir)
    assert "clusters/us-east-1/web/deployment-front.yaml" in placed
    assert "clusters/eu-west-1/shop/deployment-cart.yaml" in placed


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".dro-render"
    }


def test_the_same_tree_builds_the_same_bytes(repo: Path, tmp_path: Path) -> None:
    first = load.from_directory(repo)
    builds._CACHE.clear()
    moved = tmp_path / "elsewhere"
    shutil.copytree(repo, moved)
    second = load.from_directory(moved)
    built = [f for f in first.files if f.path.endswith(")")]
    assert [f.path for f in built] == ["workloads/shop/ (kustomize)", "workloads/web/ (helm)"]
    assert first.files == second.files


def test_a_broken_kustomization_is_located_with_kustomizes_message(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "workloads/shop/kustomization.yaml"
    lines = path.read_text().splitlines()
    number = lines.index("  - path: replicas.yaml") + 1
    lines[number - 1] = "  - path: replica.yaml"
    path.write_text("\n".join(lines) + "\n")
    code, err = _validate(repo, capsys)
    assert code == 1
    where = f"workloads/shop/kustomization.yaml:{number}: "
    found = [row for row in err if row.startswith(where)]
    assert found, err
    assert "kustomize could not build workloads/shop/" in found[0]
    assert "replica.yaml" in found[0]
    assert str(repo) not in found[0]
    assert "Traceback" not in "\n".join(err)


def test_a_broken_chart_is_located_at_the_template_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / "workloads/web/templates/deployment.yaml"
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if ".Values.replicas" in line)
    lines[number - 1] = lines[number - 1].replace(".Values.replicas", ".Values.replicas | nope")
    path.write_text("\n".join(lines) + "\n")
    code, err = _validate(repo, capsys)
    assert code == 1
    found = [r for r in err if r.startswith(f"workloads/web/templates/deployment.yaml:{number}: ")]
    assert found, err
    assert "helm could not build workloads/web/" in found[0]
    assert '"nope" not defined' in found[0]


def test_an_object_the_tool_builds_wrong_is_located_in_the_built_folder(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = repo / "workloads/web/values.yaml"
    values.write_text(values.read_text().replace("replicas: 3", "replicas: lots"))
    code, err = _validate(repo, capsys)
    assert code == 1
    assert any(r.startswith("workloads/web/ (helm):") and "/spec/replicas" in r for r in err), err


def test_a_chart_without_dro_helm_yaml_says_what_it_needs(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "workloads/web/dro-helm.yaml").unlink()
    code, err = _validate(repo, capsys)
    assert code == 1
    assert any(
        r.startswith("workloads/web/Chart.yaml:1: ") and "needs a dro-helm.yaml" in r for r in err
    ), err


def test_a_missing_tool_is_one_error_naming_it_and_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only = tmp_path / "bin"
    only.mkdir()
    (only / "kustomize").symlink_to(ROOT / "build/tools/bin/kustomize")
    monkeypatch.setenv("PATH", str(only))
    code, err = _validate(EXAMPLE, capsys)
    assert code == 1
    helm = [r for r in err if "helm is not on PATH" in r]
    assert len(helm) == 1, err
    assert helm[0].startswith("workloads/web/ (helm):1: ")
    assert "install helm v3" in helm[0]
    assert not any("kustomize" in r for r in err), err  # kustomize was there: built fine


def test_a_repo_without_either_folder_needs_neither_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main(["validate", str(ROOT / "example-repo")]) == 0
    assert "ok:" in capsys.readouterr().err


def test_kubectl_kustomize_builds_when_there_is_no_kustomize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    kubectl = bin_dir / "kubectl"  # stands in for kubectl: `kubectl kustomize DIR`
    kustomize = ROOT / "build/tools/bin/kustomize"
    kubectl.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {kustomize} build "$2"\n')
    kubectl.chmod(0o755)
    (bin_dir / "helm").symlink_to(ROOT / "build/tools/bin/helm")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    spec = _spec(EXAMPLE)
    assert calls.read_text().split() == ["kustomize", "workloads/shop"]
    assert _workload(spec, "Deployment", "shop", "cart").replicas == 6


def test_a_symbolic_link_leaving_the_tree_is_refused(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "outside.yaml"
    secret.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n")
    (repo / "workloads/shop/base/stolen.yaml").symlink_to(secret)
    base = repo / "workloads/shop/base/kustomization.yaml"
    base.write_text(base.read_text() + "  - stolen.yaml\n")
    code, err = _validate(repo, capsys)
    assert code == 1
    assert any(
        r.startswith("workloads/shop/base/stolen.yaml:1: ") and "symbolic link" in r for r in err
    ), err
    assert not any("stolen" in r and "ConfigMap" in r for r in err)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("https://github.com/example/shop//base?ref=v1", "is remote"),
        ("github.com/example/shop/base", "is remote"),
        ("../../../../etc", "leaves workloads/"),
        ("/etc", "absolute path"),
    ],
)
def test_remote_and_outside_resources_are_refused_before_kustomize_runs(
    repo: Path, capsys: pytest.CaptureFixture[str], entry: str, reason: str
) -> None:
    path = repo / "workloads/shop/kustomization.yaml"
    lines = path.read_text().splitlines()
    number = lines.index("  - base") + 1
    lines.insert(number, f"  - {entry}")
    path.write_text("\n".join(lines) + "\n")
    code, err = _validate(repo, capsys)
    assert code == 1
    found = [r for r in err if r.startswith(f"workloads/shop/kustomization.yaml:{number + 1}: ")]
    assert found, err
    assert reason in found[0]
    assert "/resources/1" in found[0]


def test_a_tool_that_hangs_is_stopped(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kustomize").write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / "kustomize").chmod(0o755)
    (bin_dir / "helm").symlink_to(ROOT / "build/tools/bin/helm")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr(builds, "TIMEOUT", 0.5)
    problems = load.from_directory(repo).problems
    assert [(p.path, p.message) for p in problems] == [
        ("workloads/shop/ (kustomize)", "kustomize took over 0.5 s to build it; stopped")
    ]


def test_output_over_the_cap_is_refused(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builds, "MAX_OUTPUT", 100)
    problems = load.from_directory(repo).problems
    assert {p.path for p in problems} == {"workloads/shop/ (kustomize)", "workloads/web/ (helm)"}
    assert all("wrote over 100 bytes" in p.message for p in problems)


def test_the_image_bundles_the_versions_the_tests_pin() -> None:
    script = (ROOT / "scripts/tools-build.sh").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    for name in ("KUSTOMIZE_VERSION", "HELM_VERSION"):
        pinned = re.search(rf"^{name}=(v[0-9.]+)$", script, re.MULTILINE)
        bundled = re.search(rf"^ARG {name}=(v[0-9.]+)$", dockerfile, re.MULTILINE)
        assert pinned is not None, name
        assert bundled is not None, name
        assert bundled[1] == pinned[1]
    assert "COPY --from=tools /out/kustomize /out/helm /usr/local/bin/" in dockerfile


def test_the_tool_sees_neither_the_environments_secrets_nor_the_home(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "env"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kustomize = ROOT / "build/tools/bin/kustomize"
    (bin_dir / "kustomize").write_text(f'#!/bin/sh\nenv > {seen}\nexec {kustomize} "$@"\n')
    (bin_dir / "kustomize").chmod(0o755)
    (bin_dir / "helm").symlink_to(ROOT / "build/tools/bin/helm")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("DRO_GIT_TOKEN", "hunter2")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert not load.from_directory(repo).problems
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert "hunter2" not in seen.read_text()
    assert not env["HOME"].startswith(str(tmp_path))
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:9"  # any fetch fails at once


def test_a_chart_sees_the_kubernetes_version_dro_yaml_names(repo: Path) -> None:
    template = repo / "workloads/web/templates/version.yaml"
    template.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: version}\n"
        "data: {kube: '{{ .Capabilities.KubeVersion.Version }}'}\n"
    )
    dro = yamlio.parse_documents("dro.yaml", (repo / "dro.yaml").read_bytes())[0].body
    seen = _workload(_spec(repo), "ConfigMap", "web", "version").manifest["data"]["kube"]
    wanted = dro["spec"]["kubernetesVersion"].split(".")
    assert seen.removeprefix("v").split(".")[:2] == wanted
