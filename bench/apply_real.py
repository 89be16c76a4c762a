"""The apply benchmark's real clusters (`bench/apply.py --real`): three Kubernetes v1.34 control
planes started by tests/e2e/controlplane.py (`make e2e-build` builds them), with kwok Nodes
enough to run every replica of the tree (10 Nodes of 32 CPUs and 110 pods each per cluster).

`RealFleet` has the emulator fleet's interface: `run(one)` runs `one` on every cluster's
`kube.Connection` in parallel and returns a `Pass`. The real servers also serve their own
controllers, so requests and writes are counted on the client side, at each connection's REST
layer (every request, discovery included; a write is a non-dry-run POST, PUT, PATCH or DELETE),
which is what the emulator counts for the only client it has. Changes are counted on the
server: the benchmark's objects (the team-* and dro-system Namespaces and their Deployments,
Services and ConfigMaps) whose resourceVersion moved during the pass, or that appeared or went.
Between passes, `settle()` waits (outside the timing) until every Deployment has all its
replicas available, so a steady pass meets a cluster whose controllers are quiet.

Called by
---------
bench/apply.py (`measure_real`).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kubernetes import client, config

from reconciler.kube import client as kube
from tests.e2e.controlplane import ClusterSpec, Fleet, missing_programs, start_fleet

SPECS = tuple(
    ClusterSpec(f"bench-{c}", nodes=10, cpu="32", memory="128Gi", pods=110) for c in range(3)
)
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SETTLE_TIMEOUT = 900.0
"""Seconds the pods of the first pass have to become available on all three clusters."""


class PassLike(Protocol):
    """What `RealFleet.run` fills in: bench/apply.py's `Pass`."""

    seconds: float
    writes: int
    requests: int
    changes: int
    reported_writes: int | None
    applied: int | None
    unchanged: int | None
    failed: int


P = TypeVar("P", bound=PassLike)


class Counter:
    """Requests and writes one connection sent, counted at its REST layer."""

    def __init__(self, connection: kube.Connection) -> None:
        self.requests = 0
        self.writes = 0
        self._lock = threading.Lock()
        rest = connection._api.rest_client  # the official client's urllib3 layer
        sent = rest.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.requests += 1
                if method.upper() in WRITES and "dryRun=" not in url:
                    self.writes += 1
            return sent(method, url, *args, **kwargs)

        rest.request = request

    def reset(self) -> None:
        """Start counting from zero."""
        with self._lock:
            self.requests = self.writes = 0


def versions(api: client.ApiClient) -> dict[tuple[str, str, str], str]:
    """The benchmark's objects on one cluster: (kind, namespace, name) -> resourceVersion."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    ours = {"dro-system"}
    found: dict[tuple[str, str, str], str] = {}
    for ns in core.list_namespace().items:
        if ns.metadata.name.startswith("team-") or ns.metadata.name in ours:
            found["Namespace", "", ns.metadata.name] = ns.metadata.resource_version
    namespaces = {name for _, _, name in found}
    listed: list[tuple[str, Any]] = [
        ("Deployment", apps.list_deployment_for_all_namespaces()),
        ("Service", core.list_service_for_all_namespaces()),
        ("ConfigMap", core.list_config_map_for_all_namespaces()),
    ]
    for kind, answer in listed:
        for item in answer.items:
            meta = item.metadata
            # kube-root-ca.crt: the controller manager's, in every namespace
            if meta.namespace in namespaces and meta.name != "kube-root-ca.crt":
                found[kind, meta.namespace, meta.name] = meta.resource_version
    return found


def moved(before: dict[Any, str], after: dict[Any, str]) -> int:
    """Objects that appeared, went, or have another resourceVersion."""
    return sum(before.get(key) != after.get(key) for key in before.keys() | after.keys())


class RealFleet:
    """Three real clusters, one kubeconfig with a context each, one dro connection each."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.admins = [
            config.new_client_from_config(config_file=str(fleet.kubeconfig), context=c.name)
            for c in fleet.clusters
        ]
        self.connections = [
            kube.connect(c.name, context=c.name, kubeconfig=fleet.kubeconfig, timeout=30.0)
            for c in fleet.clusters
        ]
        self.counters = [Counter(connection) for connection in self.connections]

    def run(self, one: Callable[[kube.Connection], PassLike | None], into: P) -> P:
        """Run `one` on every cluster in parallel; fill `into` with the time and the counts."""
        before = [versions(api) for api in self.admins]
        for counter in self.counters:
            counter.reset()
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(self.connections)) as pool:
            parts = list(pool.map(one, self.connections))
        into.seconds = time.perf_counter() - started
        into.requests = sum(c.requests for c in self.counters)
        into.writes = sum(c.writes for c in self.counters)
        into.changes = sum(moved(b, versions(a)) for b, a in zip(before, self.admins, strict=True))
        synced = [p for p in parts if p is not None]
        if synced:
            into.reported_writes = sum(p.reported_writes or 0 for p in synced)
            into.applied = sum(p.applied or 0 for p in synced)
            into.unchanged = sum(p.unchanged or 0 for p in synced)
            into.failed = sum(p.failed for p in synced)
        return into

    def settle(self, timeout: float = SETTLE_TIMEOUT) -> float:
        """Wait until every Deployment on every cluster has all its replicas available."""
        began = time.monotonic()
        waiting = list(self.admins)
        while waiting:
            waiting = [api for api in waiting if not _available(api)]
            if waiting and time.monotonic() - began > timeout:
                sys.exit(f"the clusters did not settle in {timeout:.0f} s")
            if waiting:
                time.sleep(2.0)
        return time.monotonic() - began

    def close(self) -> None:
        """Close every client."""
        for connection in self.connections:
            connection.close()
        for api in self.admins:
            api.close()


def _available(api: client.ApiClient) -> bool:
    for item in client.AppsV1Api(api).list_deployment_for_all_namespaces().items:
        status = item.status
        if (
            status.observed_generation != item.metadata.generation
            or (status.available_replicas or 0) != item.spec.replicas
            or (status.updated_replicas or 0) != item.spec.replicas
        ):
            return False
    return True


@contextlib.contextmanager
def started(label: str) -> Iterator[RealFleet]:
    """Three fresh real clusters for one side of the benchmark; stopped when the block exits."""
    missing = missing_programs()
    if missing:
        sys.exit(f"bench/apply.py --real: run `make e2e-build` first; missing {missing}")
    with (
        tempfile.TemporaryDirectory(prefix=f"dro-bench-real-{label}-") as tmp,
        start_fleet(SPECS, Path(tmp)) as fleet,
    ):
        print(f"  {label}: 3 real clusters ready in {fleet.started_in:.0f} s", file=sys.stderr)
        real = RealFleet(fleet)
        try:
            yield real
        finally:
            real.close()
