"""What the tools are given: kustomize's inputs checked, helm's arguments, helm's namespace.

Before kustomize runs, every kustomization in the folder is read: a `resources`, `components`
or `bases` entry that is remote, absolute or outside `workloads/` is refused at its line (no
network, nothing of the machine's). Helm's arguments come from the `dro-helm.yaml` beside the
chart (release name, namespace, more values files, CRDs, Kubernetes version, the last by
default `dro.yaml`'s); helm's objects that name no namespace get the release's, as `helm
install --namespace` creates them.

Called by `load` and `load.builds`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from reconciler import yamlio
from reconciler.domain import CLUSTER_SCOPED_KINDS, group_of
from reconciler.errors import Problem

WORKLOADS = "workloads/"
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
CHART, VALUES, HELM_RELEASE = "Chart.yaml", "values.yaml", "dro-helm.yaml"
_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)")


@dataclass(frozen=True, slots=True)
class Folder:
    """One folder a tool builds: its repo-relative path (no slash) and the tool."""

    path: str
    tool: str

    @property
    def label(self) -> str:
        """The generated file's path, which names the folder and the tool."""
        return f"{self.path}/ ({self.tool})"


def problem(folder: Folder, message: str, path: str | None = None, line: int = 1) -> Problem:
    """A problem of a folder's build, at `path` (the generated file's by default)."""
    return Problem(path=path or folder.label, line=line, message=message)


def remote_resources(folder: Folder, files: Mapping[str, bytes]) -> Problem | None:
    """Every kustomization inside the folder: a remote resource, or a path that leaves the
    source tree, is refused at its line before kustomize runs."""
    for path in sorted(files):
        if not path.startswith(folder.path + "/") or path.rpartition("/")[2] not in KUSTOMIZATIONS:
            continue
        try:
            documents = yamlio.parse_documents(path, files[path])
        except yamlio.YamlError as error:
            return replace(error.problem, message=f"kustomize: {error.problem.message}")
        for doc in documents:
            body = doc.body if isinstance(doc.body, Mapping) else {}
            for field in ("resources", "components", "bases"):
                entries = body.get(field)
                for index, entry in enumerate(entries if isinstance(entries, list) else ()):
                    reason = _refused(path, entry)
                    if reason is not None:
                        return Problem(
                            path=path,
                            line=doc.origin.line_of(f"/{field}/{index}"),
                            pointer=f"/{field}/{index}",
                            message=f"kustomize {field} entry {entry!r} {reason}",
                        )
    return None


def _refused(path: str, entry: object) -> str | None:
    if not isinstance(entry, str):
        return None
    if _REMOTE.match(entry) or "?ref=" in entry or "//" in entry:
        return "is remote: dro builds without network access; vendor it into the repository"
    if entry.startswith("/"):
        return "is an absolute path: only the repository's own files are built"
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), entry))
    if joined == ".." or joined.startswith("../") or not joined.startswith(WORKLOADS):
        return "leaves workloads/: only files under workloads/ are copied for the build"
    return None


def in_namespace(label: str, data: bytes, namespace: str) -> bytes:
    """Helm's output with the release namespace set on each namespaced object that names
    none, as `helm install --namespace` creates them; unchanged when none lacks one (or when
    it does not parse: `validate` reports where). Cluster-scoped kinds are the built-in ones
    and those of the CRDs the chart renders."""
    try:
        documents = yamlio.parse_documents(label, data)
    except yamlio.YamlError:
        return data
    bodies = [d.body for d in documents]
    scoped = {
        (str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")))
        for body in bodies
        if isinstance(body, Mapping)
        and body.get("kind") == "CustomResourceDefinition"
        and isinstance(spec := body.get("spec"), Mapping)
        and spec.get("scope") == "Cluster"
    }
    out = [_namespaced(body, namespace, scoped) for body in bodies]
    if out == bodies:
        return data
    return "---\n".join(yamlio.dump(body) for body in out).encode()


def _namespaced(body: Any, namespace: str, scoped: set[tuple[str, str]]) -> Any:
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    if not isinstance(meta, Mapping) or meta.get("namespace"):
        return body
    kind = (group_of(str(body.get("apiVersion", ""))), str(body.get("kind", "")))
    if kind in CLUSTER_SCOPED_KINDS or kind in scoped:
        return body
    return {**body, "metadata": {**meta, "namespace": namespace}}


def helm_namespace(folder: Folder, files: Mapping[str, bytes]) -> str:
    """The release namespace of a chart that was built (its `dro-helm.yaml` is valid)."""
    release = release_args(folder, files)
    assert isinstance(release, list)  # the build ran, so dro-helm.yaml was valid
    return release[release.index("--namespace") + 1]


def _fleet_version(files: Mapping[str, bytes]) -> str | None:
    """`dro.yaml`'s `spec.kubernetesVersion` ("1.32"), what a chart's
    `.Capabilities.KubeVersion` reports unless `dro-helm.yaml` says otherwise; None when it
    names none (or is invalid: `validate` reports it), and helm's own default applies."""
    try:
        documents = yamlio.parse_documents("dro.yaml", files.get("dro.yaml", b""))
    except yamlio.YamlError:
        return None
    body = documents[0].body if documents else None
    spec = body.get("spec") if isinstance(body, Mapping) else None
    version = spec.get("kubernetesVersion") if isinstance(spec, Mapping) else None
    return str(version) if isinstance(version, (str, int, float)) and version else None


def release_args(folder: Folder, files: Mapping[str, bytes]) -> list[str] | Problem | None:
    """`helm template` arguments from the folder's `dro-helm.yaml`: None when it is invalid
    (validate reports it), a Problem when it is missing."""
    path = f"{folder.path}/{HELM_RELEASE}"
    if path not in files:
        return problem(
            folder,
            f"the Helm chart {folder.path}/ needs a {HELM_RELEASE} beside Chart.yaml naming "
            "its spec.releaseName and spec.namespace (see schemas/helmrelease.json)",
            f"{folder.path}/{CHART}",
        )
    try:
        documents = yamlio.parse_documents(path, files[path])
    except yamlio.YamlError:
        return None
    body = documents[0].body if len(documents) == 1 else None
    spec = body.get("spec") if isinstance(body, Mapping) else None
    if not isinstance(spec, Mapping):
        return None
    release, namespace = spec.get("releaseName"), spec.get("namespace")
    values = spec.get("valuesFiles") or []
    if not (isinstance(release, str) and isinstance(namespace, str) and isinstance(values, list)):
        return None
    args = [release, folder.path, "--namespace", namespace]
    for index, name in enumerate(values):
        if not isinstance(name, str):
            return None
        if f"{folder.path}/{name}" not in files:
            pointer = f"/spec/valuesFiles/{index}"
            return Problem(
                path=path,
                line=documents[0].origin.line_of(pointer),
                pointer=pointer,
                message=f"values file {name!r} is not in {folder.path}/",
            )
        args += ["--values", f"{folder.path}/{name}"]
    if spec.get("includeCRDs") is True:
        args.append("--include-crds")
    kube = spec.get("kubeVersion", _fleet_version(files))
    if isinstance(kube, str):
        args += ["--kube-version", kube]
    return args
