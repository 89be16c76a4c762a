"""The README's Argo CD and Flux examples for `dro/rendered` are valid and fit the branch.

No network and no controller here, so each example is held to the CRD it names field by field:
FIELDS below is the part of each CRD's schema (Argo CD's `ApplicationSet`, Flux's source
controller `GitRepository` v1 and kustomize controller `Kustomization` v1) that these examples
may use, with the fields each CRD requires. Then the examples are run against the demo's
rendered tree: Argo CD's git directory generator over `clusters/*` and each Flux `path` must
find a cluster folder with its `kustomization.yaml`, one Application or Kustomization per cluster;
the clusterDecisionResource generator is run as Argo CD runs it over the `argocd/` folder the
Application syncs, and must make one Application per cluster of the workload's decision.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Syncing `dro/rendered`") :]
SECTION = SECTION[: SECTION.index("\n## ")]
DOCUMENTS: list[dict[str, Any]] = [
    document
    for block in re.findall(r"```yaml\n(.*?)```", SECTION, flags=re.DOTALL)
    for document in yaml.safe_load_all(block)
]
OUTPUT_BRANCH = "dro/rendered"
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# A field's type is a nested dict (an object: its known fields), [dict] (a list of objects),
# or a Python type. "!" after a field's name marks it required, as the CRD's schema does.
SOURCE = {
    "repoURL!": str,
    "targetRevision": str,
    "path": str,
    "chart": str,
    "ref": str,
    "name": str,
    "directory": dict,
    "kustomize": dict,
    "helm": dict,
    "plugin": dict,
}
APPLICATION_SPEC = {
    "project!": str,
    "source": SOURCE,
    "sources": [SOURCE],
    "destination!": {"server": str, "name": str, "namespace": str},
    "syncPolicy": {
        "automated": {"prune": bool, "selfHeal": bool, "allowEmpty": bool, "enabled": bool},
        "syncOptions": [str],
        "retry": dict,
        "managedNamespaceMetadata": dict,
    },
    "ignoreDifferences": [dict],
    "info": [dict],
    "revisionHistoryLimit": int,
}
METADATA = {"name!": str, "namespace": str, "labels": dict, "annotations": dict}
GIT_GENERATOR = {
    "repoURL!": str,
    "revision!": str,
    "directories": [{"path!": str, "exclude": bool}],
    "files": [{"path!": str, "exclude": bool}],
    "pathParamPrefix": str,
    "requeueAfterSeconds": int,
    "template": dict,
    "values": dict,
}
DECISION_GENERATOR = {
    "configMapRef!": str,
    "name": str,
    "labelSelector": dict,
    "requeueAfterSeconds": int,
    "template": dict,
    "values": dict,
}
SECRET_KEY_REFERENCE = {"name!": str, "key": str}
FIELDS: dict[tuple[str, str], dict[str, Any]] = {
    ("argoproj.io/v1alpha1", "ApplicationSet"): {
        "goTemplate": bool,
        "goTemplateOptions": [str],
        "generators!": [
            {
                "git": GIT_GENERATOR,
                "clusterDecisionResource": DECISION_GENERATOR,
                "list": dict,
                "clusters": dict,
                "matrix": dict,
            }
        ],
        "template!": {
            "metadata!": {"name": str, "namespace": str, "labels": dict, "annotations": dict},
            "spec!": APPLICATION_SPEC,
        },
        "syncPolicy": dict,
        "strategy": dict,
        "preservedFields": dict,
        "ignoreApplicationDifferences": [dict],
        "templatePatch": str,
    },
    ("argoproj.io/v1alpha1", "Application"): APPLICATION_SPEC,
    ("source.toolkit.fluxcd.io/v1", "GitRepository"): {
        "url!": str,
        "interval!": str,
        "ref": {"branch": str, "tag": str, "semver": str, "name": str, "commit": str},
        "secretRef": {"name!": str},
        "provider": str,
        "timeout": str,
        "verify": dict,
        "proxySecretRef": {"name!": str},
        "ignore": str,
        "suspend": bool,
        "recurseSubmodules": bool,
        "include": [dict],
        "sparseCheckout": [str],
    },
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"): {
        "interval!": str,
        "prune!": bool,
        "sourceRef!": {"kind!": str, "name!": str, "namespace": str, "apiVersion": str},
        "path": str,
        "targetNamespace": str,
        "kubeConfig": {"secretRef": SECRET_KEY_REFERENCE, "configMapRef": {"name!": str}},
        "serviceAccountName": str,
        "dependsOn": [dict],
        "wait": bool,
        "timeout": str,
        "retryInterval": str,
        "force": bool,
        "suspend": bool,
        "healthChecks": [dict],
        "patches": [dict],
        "images": [dict],
        "postBuild": dict,
        "decryption": dict,
        "commonMetadata": dict,
        "components": [str],
        "namePrefix": str,
        "nameSuffix": str,
        "deletionPolicy": str,
    },
}
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")  # the CRDs' pattern for intervals


def problems(value: Any, shape: Any, pointer: str) -> list[str]:
    """Every field of `value` the `shape` does not know, lacks or types differently."""
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{pointer}: a list expected"]
        return [
            p for i, item in enumerate(value) for p in problems(item, shape[0], f"{pointer}/{i}")
        ]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [f"{pointer}: an object expected"]
        known = {name.rstrip("!"): field for name, field in shape.items()}
        found = [f"{pointer}/{name}: not a field of the CRD" for name in value if name not in known]
        found += [
            f"{pointer}/{name[:-1]}: required"
            for name in shape
            if name.endswith("!") and name[:-1] not in value
        ]
        for name, item in value.items():
            if name in known:
                found += problems(item, known[name], f"{pointer}/{name}")
        return found
    return [] if isinstance(value, shape) else [f"{pointer}: {shape.__name__} expected"]


def of_kind(kind: str) -> list[dict[str, Any]]:
    """The README's examples of one kind."""
    return [document for document in DOCUMENTS if document["kind"] == kind]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """example-repo rendered as `make demo` commits it to dro/rendered."""
    out = tmp_path_factory.mktemp("gitops") / "rendered"
    dro = Path(sys.executable).parent / "dro"
    subprocess.run([str(dro), "render", str(EXAMPLE), "--out", str(out)], check=True)
    return out


def test_each_example_uses_only_fields_its_crd_defines() -> None:
    kinds = {(d["apiVersion"], d["kind"]) for d in DOCUMENTS}
    assert kinds == set(FIELDS), "Application(Set)s, a GitRepository and Kustomizations"
    for document in DOCUMENTS:
        shape = {"apiVersion!": str, "kind!": str, "metadata!": METADATA}
        shape["spec!"] = FIELDS[(document["apiVersion"], document["kind"])]
        assert problems(document, shape, "") == [], document["metadata"]["name"]
        assert DNS1123_SUBDOMAIN.match(document["metadata"]["name"])


def application_name(template: str, path: str) -> str:
    """An Argo CD go template of the git directory generator, filled for one directory."""
    values = {".path.path": path, ".path.basename": Path(path).name}
    return re.sub(r"\{\{\s*(\.path\.\w+)\s*\}\}", lambda m: values[m[1]], template)


def test_the_applicationset_makes_one_application_per_rendered_cluster(rendered: Path) -> None:
    (appset,) = [a for a in of_kind("ApplicationSet") if "git" in a["spec"]["generators"][0]]
    spec = appset["spec"]
    assert spec["goTemplate"] is True, "the {{.path.…}} parameters are go templates"
    (generator,) = spec["generators"]
    git = generator["git"]
    source = spec["template"]["spec"]["source"]
    assert git["revision"] == source["targetRevision"] == OUTPUT_BRANCH
    assert git["repoURL"] == source["repoURL"]
    (directories,) = git["directories"]
    matched = sorted(
        path.relative_to(rendered).as_posix()
        for path in rendered.glob("*/*")
        if path.is_dir()
        and fnmatch.fnmatch(path.relative_to(rendered).as_posix(), directories["path"])
    )
    clusters = sorted(path.stem for path in (EXAMPLE / "clusters").glob("*.yaml"))
    assert matched == [f"clusters/{name}" for name in clusters]
    names = set()
    for path in matched:
        name = application_name(spec["template"]["metadata"]["name"], path)
        assert DNS1123_SUBDOMAIN.match(name), name
        assert len(name) <= 253, name
        names.add(name)
        folder = rendered / application_name(source["path"], path)
        assert (folder / "kustomization.yaml").is_file(), folder
        destination = spec["template"]["spec"]["destination"]
        assert application_name(destination["name"], path) == Path(path).name
    assert len(names) == len(clusters), "one Application per cluster"


def test_flux_follows_the_branch_with_one_kustomization_per_cluster(rendered: Path) -> None:
    (source,) = of_kind("GitRepository")
    assert source["spec"]["ref"] == {"branch": OUTPUT_BRANCH}
    assert DURATION.match(source["spec"]["interval"])
    kustomizations = of_kind("Kustomization")
    assert len(kustomizations) >= 2
    paths = set()
    for kustomization in kustomizations:
        spec = kustomization["spec"]
        assert spec["sourceRef"] == {"kind": "GitRepository", "name": source["metadata"]["name"]}
        assert kustomization["metadata"]["namespace"] == source["metadata"]["namespace"]
        assert DURATION.match(spec["interval"])
        assert DURATION.match(spec["timeout"])
        cluster = re.fullmatch(r"\./clusters/([a-z0-9.-]+)", spec["path"])
        assert cluster, spec["path"]
        assert (EXAMPLE / "clusters" / f"{cluster[1]}.yaml").is_file()
        assert (rendered / spec["path"] / "kustomization.yaml").is_file()
        assert cluster[1] in spec["kubeConfig"]["secretRef"]["name"]
        paths.add(spec["path"])
    assert len(paths) == len(kustomizations), "one Kustomization per cluster"


def test_the_readmes_name_only_files_that_exist() -> None:
    prefixes = ("example-repo/", "scripts/", "deploy/", "tests/", "bench/", "schemas/")
    for readme, base in ((README, ROOT), ((EXAMPLE / "README.md").read_text(), EXAMPLE)):
        named = set(re.findall(r"`([\w./-]+)`", readme)) | set(
            re.findall(r"\]\(([\w./-]+)\)", readme)
        )
        for path in named:
            if base == ROOT and not path.startswith(prefixes):
                continue
            if base == EXAMPLE and not path.startswith(
                ("clusters/", "datasets/", "workloads/", "policies/", "dro.yaml", "topology.yaml")
            ):
                continue
            assert (base / path).exists(), f"{path} named in {base.name}/README.md"


def rendered_documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def test_the_decision_generator_follows_the_rendered_cluster_decision(rendered: Path) -> None:
    (sync,) = of_kind("Application")
    (appset,) = [
        a
        for a in of_kind("ApplicationSet")
        if "clusterDecisionResource" in a["spec"]["generators"][0]
    ]
    namespace = appset["metadata"]["namespace"]
    # The Application syncs argocd/ of the branch into the Argo CD namespace, by kustomize.
    assert sync["spec"]["source"]["targetRevision"] == OUTPUT_BRANCH
    assert sync["spec"]["destination"]["namespace"] == namespace
    folder = rendered / sync["spec"]["source"]["path"]
    listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
    synced = [d for name in listed for d in rendered_documents(folder / name)]
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.yaml"))
    assert sorted([*listed, "kustomization.yaml"]) == on_disk
    # The generator: the ConfigMap names the resource type, the resource lists the clusters.
    (generator,) = appset["spec"]["generators"]
    duck = generator["clusterDecisionResource"]
    (configmap,) = [
        d
        for d in synced
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == duck["configMapRef"]
    ]
    assert configmap["metadata"]["namespace"] == namespace
    data = configmap["data"]
    (crd,) = [d for d in synced if d["kind"] == "CustomResourceDefinition"]
    group, version = data["apiVersion"].split("/")
    assert crd["spec"]["group"] == group
    assert crd["spec"]["names"]["plural"] == data["kind"], "the ConfigMap names the resource"
    assert [v["name"] for v in crd["spec"]["versions"]] == [version]
    assert "subresources" not in crd["spec"]["versions"][0], "status must be applied from git"
    (resource,) = [
        d
        for d in synced
        if d["apiVersion"] == data["apiVersion"] and d["metadata"]["name"] == duck["name"]
    ]
    assert resource["kind"] == crd["spec"]["names"]["kind"]
    assert resource["metadata"]["namespace"] == namespace
    entries = resource["status"][data["statusListKey"]]
    clusters = [entry[data["matchKey"]] for entry in entries]
    placement = resource["metadata"]["annotations"]["multicluster.io/placement"]
    _, _, workload_namespace, name = placement.split("/")
    decision = yaml.safe_load(
        (rendered / "decisions" / workload_namespace / f"deployment-{name}.yaml").read_text()
    )
    assert clusters == [c["name"] for c in decision["status"]["clusters"]]
    assert len(clusters) >= 2
    # Argo CD's params per decision: name and server of the Argo CD cluster, then the entry.
    template = appset["spec"]["template"]
    names = set()
    for entry in entries:
        params = {".name": entry[data["matchKey"]], **{f".{k}": v for k, v in entry.items()}}

        def fill(text: str, params: dict[str, str] = params) -> str:
            return re.sub(r"\{\{\s*(\.\w+)\s*\}\}", lambda m: params[m[1]], text)

        app = fill(template["metadata"]["name"])
        assert DNS1123_SUBDOMAIN.match(app), app
        names.add(app)
        source = template["spec"]["source"]
        path = rendered / fill(source["path"]) / source["directory"]["include"]
        assert path.is_file(), path
        assert fill(template["spec"]["destination"]["name"]) == entry[data["matchKey"]]
    assert len(names) == len(entries), "one Application per cluster of the decision"
