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
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from reconciler import redact, yamlio
from reconciler.domain import Source, SourceFile
from reconciler.errors import Problem
from reconciler.load.buildargs import (
    CHART,
    HELM_RELEASE,
    KUSTOMIZATIONS,
    VALUES,
    WORKLOADS,
    Folder,
    helm_namespace,
    in_namespace,
    problem,
    release_args,
    remote_resources,
)

TIMEOUT = 60.0
"""Seconds one tool run may take."""
MAX_OUTPUT = yamlio.MAX_FILE_BYTES
"""Bytes of output one build may write: what dro parses from one file."""
INSTALL = {
    "kustomize": "install kustomize v5 (https://kubectl.docs.kubernetes.io/installation/"
    "kustomize/) or kubectl, or in a dro checkout run `make tools` and put build/tools/bin "
    "on PATH",
    "helm": "install helm v3 (https://helm.sh/docs/intro/install/), or in a dro checkout run "
    "`make tools` and put build/tools/bin on PATH",
}
_HELM_AT = re.compile(r"(?:\(|template: )([^():\s]+/[^():\s]+):(\d+)")
"""Where helm names a template line: `parse error at (web/templates/x.yaml:9)` or
`template: web/templates/x.yaml:7:8: executing …`, the path starting with the chart's name."""
_NOISE = ("Use --debug flag to render out invalid YAML", "Error: ")
_QUOTED = re.compile(r"'([^'\s]+)'")
_CACHE: dict[str, tuple[bytes | None, Problem | None]] = {}


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
                data = in_namespace(folder.label, data, helm_namespace(folder, files))
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
    return problem(needing[0], f"{name} is not on PATH, and {listed} needs it: {INSTALL[tool]}")


def _write_tree(tree: Path, files: Mapping[str, bytes]) -> None:
    for path, data in files.items():
        if not path.startswith(WORKLOADS):
            continue
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _build(
    folder: Folder, files: Mapping[str, bytes], tree: Path, command: list[str]
) -> tuple[bytes | None, Problem | None]:
    if folder.tool == "kustomize":
        refused = remote_resources(folder, files)
        if refused is not None:
            return None, refused
        args = [folder.path]
    else:
        release = release_args(folder, files)
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
            return None, problem(folder, f"{tool} could not be started: {error.strerror}"), False
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
        return None, problem(folder, too_big), True
    if timer.finished.is_set() and code < 0:
        stopped = f"{tool} took over {TIMEOUT:g} s to build it; stopped"
        return None, problem(folder, stopped), False
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
            return problem(folder, message, f"{folder.path}/{relative}", int(at[2]))
        return problem(folder, message, f"{folder.path}/{CHART}")
    return problem(folder, message, *_kustomize_line(folder, text, files))


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
