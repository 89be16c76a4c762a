"""Kustomize and Helm workload sources: folders under `workloads/` that a tool builds.

A folder under `workloads/` holding a `kustomization.yaml` (or `kustomization.yml`,
`Kustomization`) is built with kustomize: the `kustomize` binary (`kustomize build`), else
`kubectl kustomize`. A folder holding `Chart.yaml` and `values.yaml` is built with `helm
template`, its release name and namespace read from the `dro-helm.yaml` beside them (a
`HelmRelease`, which `validate` checks against schemas/helmrelease.json), for the Kubernetes
version `dro.yaml` names. Only the top-most
such folder is built; the folders inside it (a kustomize base, a chart's `charts/`) are its
inputs, and no file inside it is read as a plain manifest.

`expand` replaces a folder's files by one generated file, `workloads/shop/ (kustomize)` or
`workloads/web/ (helm)`, holding the tool's output: the objects are workloads like any other,
and a problem with one is located in that file. A tool that fails is a `Problem` naming the
folder and the tool's own message (stderr, trimmed, the temporary path removed, secrets
redacted), at the template's line when helm names one.

The tools run on a copy of the source files in a temporary folder (the source is a git tree),
with no network: helm renders local charts only (a dependency must be vendored in `charts/`),
kustomize runs without `--enable-helm`, exec or alpha plugins, and remote or out-of-tree
`resources:` are refused before it runs. Each run has a timeout and a cap on its output; HOME
and the tools' config, cache and plugin folders point into the temporary folder. The source's
symbolic links are never copied (`validate` reports each). The same files give the same
objects: a build is cached by the hash of the files it can read.

Called by `load`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reconciler import redact, yamlio
from reconciler.domain import CLUSTER_SCOPED_KINDS, Source, SourceFile, group_of
from reconciler.errors import Problem

WORKLOADS = "workloads/"
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
CHART, VALUES, HELM_RELEASE = "Chart.yaml", "values.yaml", "dro-helm.yaml"
TIMEOUT = 60.0
"""Seconds one tool run may take."""
MAX_OUTPUT = yamlio.MAX_FILE_BYTES
"""Bytes of output one build may write: what dro parses from one file."""
INSTALL = {
    "kustomize": "install kustomize v5 (https://kubectl.docs.kubernetes.io/installation/"
    "kustomize/) or kubectl, or run `make tools` in a dro checkout",
    "helm": "install helm v3 (https://helm.sh/docs/intro/install/), or run `make tools` in "
    "a dro checkout",
}
_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)")
_HELM_AT = re.compile(r"(?:\(|template: )([^():\s]+/[^():\s]+):(\d+)")
"""Where helm names a template line: `parse error at (web/templates/x.yaml:9)` or
`template: web/templates/x.yaml:7:8: executing …`, the path starting with the chart's name."""
_NOISE = ("Use --debug flag to render out invalid YAML", "Error: ")
_QUOTED = re.compile(r"'([^'\s]+)'")
_CACHE: dict[str, tuple[bytes | None, Problem | None]] = {}


@dataclass(frozen=True, slots=True)
class Folder:
    """One folder a tool builds: its repo-relative path (no slash) and the tool."""

    path: str
    tool: str

    @property
    def label(self) -> str:
        """The generated file's path, which names the folder and the tool."""
        return f"{self.path}/ ({self.tool})"


def folders(paths: Iterable[str]) -> tuple[Folder, ...]:
    """The top-most kustomize and Helm folders among the repo-relative file paths."""
    present = set(paths)
    found: dict[str, str] = {}
    for path in sorted(present):
        if not path.startswith(WORKLOADS):
            continue
        folder, _, name = path.rpartition("/")
        if name in KUSTOMIZATIONS:
            found.setdefault(folder, "kustomize")
        elif name == CHART and f"{folder}/{VALUES}" in present:
            found.setdefault(folder, "helm")
    top = [f for f in sorted(found) if not any(f.startswith(o + "/") for o in found)]
    return tuple(Folder(f, found[f]) for f in top)


def inside(path: str, built: Iterable[Folder]) -> Folder | None:
    """The built folder that holds `path`, if any."""
    return next((f for f in built if path.startswith(f.path + "/")), None)


def keep(files: Mapping[str, bytes], is_source_path: Callable[[str], bool]) -> dict[str, bytes]:
    """The files a source holds: `is_source_path` ones, and every file of a built folder
    (templates, patches, `.tpl` helpers) that is not hidden."""
    built = folders(files)
    return {
        path: data
        for path, data in files.items()
        if is_source_path(path)
        or (inside(path, built) and not any(p.startswith(".") for p in path.split("/")))
    }


def expand(source: Source) -> Source:
    """`source` with each built folder's files replaced by the tool's output (`dro-helm.yaml`
    stays, for `validate`), and a Problem for each folder that could not be built."""
    built = folders(f.path for f in source.files)
    if not built:
        return source
    files = {f.path: f.data for f in source.files}
    out = [f for f in source.files if not (inside(f.path, built) and not _kept(f.path))]
    problems = list(source.problems)
    tools = {tool: _tool(tool) for tool in sorted({folder.tool for folder in built})}
    for tool, command in tools.items():
        if command is None:
            problems.append(_missing(tool, [f for f in built if f.tool == tool]))
    with tempfile.TemporaryDirectory(prefix="dro-build-") as scratch:
        tree = Path(scratch) / "tree"
        for folder in built:
            command = tools[folder.tool]
            if command is None:
                continue
            data, problem = _build(folder, files, tree, command)
            if problem is not None:
                problems.append(problem)
            if data is not None and folder.tool == "helm":
                data = in_namespace(folder.label, data, _namespace(folder, files))
            if data is not None:
                out.append(SourceFile(path=folder.label, data=data))
    return replace(source, files=tuple(sorted(out, key=lambda f: f.path)), problems=tuple(problems))


def _kept(path: str) -> bool:
    return path.rpartition("/")[2] == HELM_RELEASE


def _tool(tool: str) -> list[str] | None:
    if tool == "helm":
        found = shutil.which("helm")
        return None if found is None else [found, "template"]
    found = shutil.which("kustomize")
    if found is not None:
        return [found, "build", "--load-restrictor", "LoadRestrictionsRootOnly"]
    kubectl = shutil.which("kubectl")
    return None if kubectl is None else [kubectl, "kustomize"]


def _missing(tool: str, needing: list[Folder]) -> Problem:
    """One problem for a tool that is not on PATH, at the first folder that needs it."""
    name = "kustomize (or kubectl)" if tool == "kustomize" else "helm"
    listed = ", ".join(f"{f.path}/" for f in needing)
    return _problem(needing[0], f"{name} is not on PATH, and {listed} needs it: {INSTALL[tool]}")


def _write_tree(tree: Path, files: Mapping[str, bytes]) -> None:
    for path, data in files.items():
        if not path.startswith(WORKLOADS):
            continue
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _problem(folder: Folder, message: str, path: str | None = None, line: int = 1) -> Problem:
    return Problem(path=path or folder.label, line=line, message=message)


def _build(
    folder: Folder, files: Mapping[str, bytes], tree: Path, command: list[str]
) -> tuple[bytes | None, Problem | None]:
    if folder.tool == "kustomize":
        refused = _remote_resources(folder, files)
        if refused is not None:
            return None, refused
        args = [folder.path]
    else:
        release = _release(folder, files)
        if isinstance(release, Problem):
            return None, release
        if release is None:  # dro-helm.yaml is invalid: validate reports where
            return None, None
        args = release
    key = _cache_key(command, args, files)
    if key in _CACHE:
        return _CACHE[key]
    if not tree.exists():  # the first build of this source that is not cached
        _write_tree(tree, files)
    data, problem, settled = _run(folder, command + args, tree, files)
    if settled:  # what these files give every time: not a timeout, not a failed start
        if len(_CACHE) >= 64:
            _CACHE.clear()
        _CACHE[key] = (data, problem)
    return data, problem


def _cache_key(command: list[str], args: list[str], files: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256("\0".join(command + args).encode())
    for path in sorted(files):
        if path.startswith(WORKLOADS):
            digest.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    return digest.hexdigest()


def _environment(scratch: Path, tool: str) -> dict[str, str]:
    """The tool's whole environment: nothing of dro's (no credentials, no kubeconfig), a home
    of its own, and proxies that refuse every fetch. PATH is the tool's folder and the system
    default: neither tool starts another program for a local build."""
    env = {"PATH": os.pathsep.join((str(Path(tool).parent), os.defpath)), "LC_ALL": "C"}
    home = scratch / "home"
    for sub in ("config", "cache", "data", "plugins"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    dead = "http://127.0.0.1:9"  # nothing listens there: any fetch fails at once
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_DATA_HOME=str(home / "data"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_DATA_HOME=str(home / "data"),
        HELM_PLUGINS=str(home / "plugins"),
        KUSTOMIZE_PLUGIN_HOME=str(home / "plugins"),
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        http_proxy=dead,
        https_proxy=dead,
        NO_PROXY="",
        GIT_ALLOW_PROTOCOL="",
        GIT_TERMINAL_PROMPT="0",
        KUBECONFIG=str(home / "no-kubeconfig"),
    )
    return env


def _run(
    folder: Folder, argv: list[str], tree: Path, files: Mapping[str, bytes]
) -> tuple[bytes | None, Problem | None, bool]:
    """The tool's output or its failure, and whether the same files always give it (not a
    timeout, not a failed start). Its output is read through a pipe and the tool is stopped
    (its whole process group) past the cap or the timeout, so it never fills a disk."""
    tool = folder.tool
    with tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(
                argv,
                cwd=tree,
                env=_environment(tree.parent, argv[0]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        except OSError as error:
            return None, _problem(folder, f"{tool} could not be started: {error.strerror}"), False
        timer = threading.Timer(TIMEOUT, _stop, (process,))
        timer.start()
        data = b""
        try:
            data = _read(process, MAX_OUTPUT + 1)
        finally:
            if len(data) > MAX_OUTPUT:
                _stop(process)
            timer.cancel()
            code = process.wait()
        err.seek(0)
        stderr = err.read(64 * 1024).decode("utf-8", "replace")
    if len(data) > MAX_OUTPUT:
        too_big = f"{tool} wrote over {MAX_OUTPUT} bytes, the limit for one source"
        return None, _problem(folder, too_big), True
    if timer.finished.is_set() and code < 0:
        stopped = f"{tool} took over {TIMEOUT:g} s to build it; stopped"
        return None, _problem(folder, stopped), False
    if code != 0:
        message = stderr.replace(f"{tree}/", "").replace(str(tree), ".")
        return None, _failure(folder, message, files), True
    return data, None, True


def _read(process: subprocess.Popen[bytes], limit: int) -> bytes:
    """Up to `limit` bytes of the process's stdout, until it closes it."""
    assert process.stdout is not None
    chunks, size = [], 0
    with process.stdout:
        while size < limit and (chunk := os.read(process.stdout.fileno(), 65536)):
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the tool and anything it started (it leads its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _failure(folder: Folder, stderr: str, files: Mapping[str, bytes]) -> Problem:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " ".join(lines)
    for noise in _NOISE:
        text = text.replace(noise, "")
    text = redact.urls(text.strip()) or "(no message)"
    if len(text) > 600:
        text = text[:600] + " …"
    message = f"{folder.tool} could not build {folder.path}/: {text}"
    if folder.tool == "helm":
        at = _HELM_AT.search(text)
        if at is not None:  # (chart/templates/x.yaml:5): chart-relative, named by the chart
            relative = at[1].split("/", 1)[1]
            return _problem(folder, message, f"{folder.path}/{relative}", int(at[2]))
        return _problem(folder, message, f"{folder.path}/{CHART}")
    return _problem(folder, message, *_kustomize_line(folder, text, files))


def _kustomize_line(
    folder: Folder, text: str, files: Mapping[str, bytes]
) -> tuple[str | None, int]:
    """The folder's kustomization, at the first line naming a file the message quotes."""
    path = next(
        (f"{folder.path}/{n}" for n in KUSTOMIZATIONS if f"{folder.path}/{n}" in files), None
    )
    if path is None:
        return None, 1
    lines = files[path].decode("utf-8", "replace").splitlines()
    for name in _QUOTED.findall(text):
        short = name.rsplit("/", 1)[-1]
        for number, line in enumerate(lines, 1):
            if short in line and not line.lstrip().startswith("#"):
                return path, number
    return path, 1


def _remote_resources(folder: Folder, files: Mapping[str, bytes]) -> Problem | None:
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


def _namespace(folder: Folder, files: Mapping[str, bytes]) -> str:
    release = _release(folder, files)
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


def _release(folder: Folder, files: Mapping[str, bytes]) -> list[str] | Problem | None:
    """`helm template` arguments from the folder's `dro-helm.yaml`: None when it is invalid
    (validate reports it), a Problem when it is missing."""
    path = f"{folder.path}/{HELM_RELEASE}"
    if path not in files:
        return _problem(
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
