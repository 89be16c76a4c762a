"""Real Kubernetes control planes on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok, built by `make e2e-build` into build/e2e/bin.

`start_fleet(specs, workdir)` starts one independent cluster per `ClusterSpec`, each with its
own etcd (own data directory), its own certificate authority, an API server with a serving
certificate for 127.0.0.1 and a service-account signing key (RBAC authorization; the admin is a
client certificate in `system:masters`), a controller manager, a scheduler and kwok, which plays
the kubelet of every Node annotated `kwok.x-k8s.io/node: fake`: it marks them Ready and runs the
pods scheduled to them. Each cluster gets `spec.nodes` such Nodes of `spec.cpu`, `spec.memory`
and `spec.pods` capacity. Every server binds to 127.0.0.1 on a port the kernel picked free.

It writes one kubeconfig with a context per cluster (named as the cluster) and returns once every
API server's /readyz says ok and every Node is Ready and schedulable, polling against a deadline.
Each process runs in a process group of its own and is stopped by its PID: SIGTERM to the group,
SIGKILL after a grace period, then a check that the group is gone; every etcd goes last. That
happens when the context exits, and when starting fails; and should the process that started
them die without that (SIGKILL), the kernel kills them (`PR_SET_PDEATHSIG`). Each component logs to
`<workdir>/<cluster>/<component>.log`.

`apiserver_stopped(cluster)` stops one cluster's kube-apiserver for the length of a block (an
outage of that cluster alone) and restarts it after, on the same port and etcd, waiting until
it is ready and its Nodes are Ready again.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "build" / "e2e" / "bin"
KWOK_STAGES = ROOT / "build" / "e2e" / "kwok.yaml"
PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
STOP_GRACE = 15.0
"""Seconds a process group has to exit after SIGTERM before it gets SIGKILL."""
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL", "--")
"""util-linux's setpriv sets PR_SET_PDEATHSIG and execs the server in its place: the kernel
sends it SIGKILL when the process that started it dies, so a test run killed by SIGKILL (or a
crashed pytest) leaves no server behind."""


@dataclass(frozen=True)
class ClusterSpec:
    """One cluster to start: its name (the kubeconfig context) and its kwok Nodes."""

    name: str
    nodes: int = 3
    cpu: str = "4"
    memory: str = "16Gi"
    pods: int = 110

    def node_names(self) -> list[str]:
        """The names of this cluster's Nodes."""
        return [f"{self.name}-node-{index}" for index in range(self.nodes)]


@dataclass
class Cluster:
    """A started cluster: where it listens, its files and its processes."""

    spec: ClusterSpec
    home: Path
    port: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    etcd_port: int = 0
    """etcd's client port, set when etcd starts; the API server reaches etcd there."""

    @property
    def name(self) -> str:
        """The cluster's name, which is also its kubeconfig context."""
        return self.spec.name

    @property
    def server(self) -> str:
        """The API server's URL."""
        return f"https://127.0.0.1:{self.port}"

    def pki(self, name: str) -> Path:
        """A file of the cluster's certificate authority folder."""
        return self.home / "pki" / name

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """Call the API server as the admin; return the status and the decoded body."""
        context = ssl.create_default_context(cafile=str(self.pki("ca.crt")))
        context.load_cert_chain(str(self.pki("admin.crt")), str(self.pki("admin.key")))
        data = None if body is None else json.dumps(body).encode()
        call = urllib.request.Request(self.server + path, data=data, method=method)
        call.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(call, context=context, timeout=10) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        text = raw.decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def log_tail(self, component: str, lines: int = 15) -> str:
        """The last lines a component wrote."""
        path = self.home / f"{component}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Fleet:
    """The started clusters and the kubeconfig with one context per cluster."""

    clusters: list[Cluster]
    kubeconfig: Path
    started_in: float = 0.0
    """Seconds from the first process started to every Node Ready."""

    def __getitem__(self, name: str) -> Cluster:
        (found,) = [cluster for cluster in self.clusters if cluster.name == name]
        return found

    def pids(self) -> list[int]:
        """Every started process's PID."""
        return [p.pid for c in self.clusters for p in c.processes.values()]


class StartFailed(RuntimeError):
    """A component exited, or the fleet did not become ready before the deadline."""


def missing_programs() -> list[str]:
    """The binaries `make e2e-build` has not built yet."""
    wanted = [BIN / name for name in PROGRAMS] + [KWOK_STAGES]
    return [str(path) for path in wanted if not path.exists()]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Certificates ------------------------------------------------------------------------------------


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _ec_certificate(folder: Path, name: str, subject: str, *extensions: str) -> None:
    """A P-256 key and a 2-day certificate signed by the folder's ca.key (or self-signed)."""
    signer = (
        [] if name == "ca" else ["-CA", str(folder / "ca.crt"), "-CAkey", str(folder / "ca.key")]
    )
    added = [arg for extension in extensions for arg in ("-addext", extension)]
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-days", "2", "-subj", subject, "-keyout", str(folder / f"{name}.key"),
        "-out", str(folder / f"{name}.crt"), *signer, *added,
    )  # fmt: skip


def write_pki(folder: Path, cluster: str) -> None:
    """A cluster's own CA, API serving certificate, admin client certificate and SA key."""
    folder.mkdir(parents=True)
    leaf = ("basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature")
    _ec_certificate(
        folder, "ca", f"/CN=dro-e2e-{cluster}-ca",
        "basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"]
    san = ",".join(["IP:127.0.0.1", "IP:10.96.0.1", *(f"DNS:{n}" for n in names)])
    _ec_certificate(
        folder, "apiserver", "/CN=kube-apiserver",
        f"subjectAltName={san}", "extendedKeyUsage=serverAuth", *leaf,
    )  # fmt: skip
    _ec_certificate(
        folder, "admin", "/O=system:masters/CN=dro-e2e-admin", "extendedKeyUsage=clientAuth", *leaf
    )
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
             "-out", str(folder / "sa.key"))  # fmt: skip
    _openssl("pkey", "-in", str(folder / "sa.key"), "-pubout", "-out", str(folder / "sa.pub"))


def kubeconfig(clusters: Sequence[Cluster]) -> dict[str, Any]:
    """A kubeconfig with one context per cluster, credentials embedded; the first is current."""

    def data(cluster: Cluster, name: str) -> str:
        return base64.b64encode(cluster.pki(name).read_bytes()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": c.name,
                "cluster": {"server": c.server, "certificate-authority-data": data(c, "ca.crt")},
            }
            for c in clusters
        ],
        "users": [
            {
                "name": f"{c.name}-admin",
                "user": {
                    "client-certificate-data": data(c, "admin.crt"),
                    "client-key-data": data(c, "admin.key"),
                },
            }
            for c in clusters
        ],
        "contexts": [
            {"name": c.name, "context": {"cluster": c.name, "user": f"{c.name}-admin"}}
            for c in clusters
        ],
        "current-context": clusters[0].name,
    }


# Processes ---------------------------------------------------------------------------------------


def _start(cluster: Cluster, component: str, args: list[str]) -> None:
    with (cluster.home / f"{component}.log").open("ab") as log:
        cluster.processes[component] = subprocess.Popen(
            [*DIE_WITH_PARENT, str(BIN / args[0]), *args[1:]],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cluster.home,
        )


def _start_storage_and_api(cluster: Cluster) -> None:
    home = cluster.home
    client, peer = free_port(), free_port()
    cluster.etcd_port = client
    _start(cluster, "etcd", [
        "etcd", f"--name={cluster.name}", f"--data-dir={home / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{client}",
        f"--advertise-client-urls=http://127.0.0.1:{client}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster={cluster.name}=http://127.0.0.1:{peer}",
        "--unsafe-no-fsync", "--log-level=warn",
    ])  # fmt: skip
    _start_apiserver(cluster)


def _start_apiserver(cluster: Cluster) -> None:
    home, pki = cluster.home, cluster.pki
    _start(cluster, "kube-apiserver", [
        "kube-apiserver", f"--etcd-servers=http://127.0.0.1:{cluster.etcd_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={cluster.port}", f"--cert-dir={home / 'apiserver'}",
        f"--tls-cert-file={pki('apiserver.crt')}", f"--tls-private-key-file={pki('apiserver.key')}",
        f"--client-ca-file={pki('ca.crt')}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki('sa.pub')}",
        f"--service-account-signing-key-file={pki('sa.key')}",
        "--service-cluster-ip-range=10.96.0.0/16", "--allow-privileged=true",
    ])  # fmt: skip


def _start_controllers(cluster: Cluster) -> None:
    home, pki = cluster.home, cluster.pki
    admin = str(home / "admin.kubeconfig")
    kubeconfigs = [
        f"--kubeconfig={admin}",
        f"--authentication-kubeconfig={admin}",
        f"--authorization-kubeconfig={admin}",
    ]
    _start(cluster, "kube-controller-manager", [
        "kube-controller-manager", *kubeconfigs, "--bind-address=127.0.0.1",
        f"--secure-port={free_port()}", f"--cert-dir={home / 'controller-manager'}",
        "--leader-elect=false", f"--cluster-name={cluster.name}",
        f"--service-account-private-key-file={pki('sa.key')}", f"--root-ca-file={pki('ca.crt')}",
    ])  # fmt: skip
    _start(cluster, "kube-scheduler", [
        "kube-scheduler", *kubeconfigs, "--bind-address=127.0.0.1",
        f"--secure-port={free_port()}", f"--cert-dir={home / 'scheduler'}", "--leader-elect=false",
    ])  # fmt: skip
    _start(cluster, "kwok", [
        "kwok", f"--kubeconfig={admin}", f"--config={KWOK_STAGES}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
        "--cidr=10.244.0.0/16", "--node-ip=10.0.0.1", "--node-lease-duration-seconds=40",
    ])  # fmt: skip


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> list[int]:
    """Stop each process's group: SIGTERM, SIGKILL after STOP_GRACE; return the groups left."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_GRACE)
    left = []
    for process in processes:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            continue
        left.append(process.pid)
    return left


# Readiness ---------------------------------------------------------------------------------------


def _wait(
    what: str, done: Callable[[], bool], clusters: Sequence[Cluster], deadline: float
) -> None:
    """Poll `done` until it holds; fail early when a component exits, or at the deadline."""
    while True:
        for cluster in clusters:
            for component, process in cluster.processes.items():
                if process.poll() is not None:
                    raise StartFailed(
                        f"{cluster.name}: {component} exited with {process.returncode} while "
                        f"waiting for {what}:\n{cluster.log_tail(component)}"
                    )
        if done():
            return
        if time.monotonic() > deadline:
            tails = "\n".join(
                f"--- {c.name} {name}:\n{c.log_tail(name, 5)}"
                for c in clusters
                for name in c.processes
            )
            raise StartFailed(f"timed out waiting for {what}\n{tails}")
        time.sleep(0.2)


def _ready(cluster: Cluster) -> bool:
    try:
        status, body = cluster.request("GET", "/readyz")
    except OSError:
        return False
    return status == 200 and body == "ok"


def node_body(spec: ClusterSpec, name: str) -> dict[str, Any]:
    """A Node kwok manages, with the spec's capacity (allocatable equal to it)."""
    resources = {"cpu": spec.cpu, "memory": spec.memory, "pods": str(spec.pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "status": {"capacity": resources, "allocatable": resources},
    }


def _nodes_ready(cluster: Cluster) -> bool:
    status, body = cluster.request("GET", "/api/v1/nodes")
    if status != 200:
        return False
    ready = set()
    for node in body["items"]:
        conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
        taints = node.get("spec", {}).get("taints") or []
        if conditions.get("Ready") == "True" and not taints:
            ready.add(node["metadata"]["name"])
    return ready >= set(cluster.spec.node_names())


@contextlib.contextmanager
def start_fleet(
    specs: Sequence[ClusterSpec], workdir: Path, timeout: float = 240.0
) -> Iterator[Fleet]:
    """Start one cluster per spec under `workdir`; stop them all when the context exits."""
    missing = missing_programs()
    if missing:
        raise StartFailed(f"not built (run `make e2e-build`): {', '.join(missing)}")
    clusters = [Cluster(spec, workdir / spec.name, free_port()) for spec in specs]
    fleet = Fleet(clusters, workdir / "kubeconfig")
    try:
        for cluster in clusters:
            write_pki(cluster.home / "pki", cluster.name)
            config = kubeconfig([cluster])
            (cluster.home / "admin.kubeconfig").write_text(yaml.safe_dump(config, sort_keys=False))
        fleet.kubeconfig.write_text(yaml.safe_dump(kubeconfig(clusters), sort_keys=False))
        began = time.monotonic()
        deadline = began + timeout
        for cluster in clusters:
            _start_storage_and_api(cluster)
        for cluster in clusters:
            _wait(f"{cluster.name} /readyz", lambda c=cluster: _ready(c), clusters, deadline)
            _start_controllers(cluster)
            for name in cluster.spec.node_names():
                status, body = cluster.request(
                    "POST", "/api/v1/nodes", node_body(cluster.spec, name)
                )
                if status != 201:
                    raise StartFailed(f"{cluster.name}: creating Node {name}: {status} {body}")
        for cluster in clusters:
            _wait(
                f"{cluster.name} Nodes Ready", lambda c=cluster: _nodes_ready(c), clusters, deadline
            )
        fleet.started_in = time.monotonic() - began
        yield fleet
    finally:
        # etcd last: an API server whose etcd is gone waits 20 s to remove its endpoints
        tiers = [[p for c in clusters for n, p in c.processes.items() if (n == "etcd") == last]
                 for last in (False, True)]  # fmt: skip
        left = [pid for tier in tiers for pid in stop(tier)]
        if left:
            raise StartFailed(f"process groups still alive after SIGKILL: {left}")


# One API server down -----------------------------------------------------------------------------


def stop_apiserver(cluster: Cluster) -> None:
    """Stop one cluster's kube-apiserver (its process group, by PID); etcd and the rest run on."""
    process = cluster.processes.pop("kube-apiserver")
    left = stop([process])
    if left:
        raise StartFailed(f"{cluster.name}: kube-apiserver group {left} alive after SIGKILL")


def restart_apiserver(cluster: Cluster, timeout: float = 120.0) -> float:
    """Start a stopped kube-apiserver again on its port and etcd; return once /readyz says ok
    and every Node is Ready again (the seconds that took). The controllers, scheduler and kwok
    kept running and reconnect; `_wait` fails if one of them exited meanwhile."""
    began = time.monotonic()
    _start_apiserver(cluster)
    deadline = began + timeout
    _wait(f"{cluster.name} /readyz after a restart", lambda: _ready(cluster), [cluster], deadline)
    _wait(f"{cluster.name} Nodes Ready after a restart", lambda: _nodes_ready(cluster),
          [cluster], deadline)  # fmt: skip
    return time.monotonic() - began


@contextlib.contextmanager
def apiserver_stopped(cluster: Cluster) -> Iterator[None]:
    """One cluster's API server stopped inside the block, and restarted (ready) after it."""
    stop_apiserver(cluster)
    try:
        yield
    finally:
        restart_apiserver(cluster)
