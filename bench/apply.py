"""Apply benchmark: `apply.sync` against a naive server-side-apply loop, on 3 emulated clusters.

Each cluster gets the same rendered tree of 1,000 objects: 10 Namespaces and, spread over them,
330 Deployments (pod template, resource requests), 330 Services and 330 ConfigMaps, all labelled
`app.kubernetes.io/managed-by: dro`. The clusters are `tests.kubeapi` emulators (real HTTP on
127.0.0.1, in this process), reached through one kubeconfig with 3 contexts and
`kube.connect`. The 3 clusters are synced in parallel, one worker thread per cluster, as dro does.

- `dro`: `apply.sync(connection, objects, prune=True)`: one LIST per kind of what dro
  manages; an object listed absent is applied at once, one that holds every rendered field
  with an unchanged manifest costs nothing, anything else gets a dry run; plus the inventory.
- `naive`: `connection.apply(obj)` for every object, no comparison, no inventory, on 3 fresh
  emulators.

Each runs a first pass (empty clusters) and a steady pass (the same objects again, on the same
connections). Writes are counted by the emulators (non-dry-run POST/PUT/PATCH/DELETE), and so are
changes (writes that changed stored state). A steady dro pass must write nothing: if it does, the
benchmark exits 1. All the servers and clients
share one Python process (and its GIL), so absolute figures are lower than against real clusters.

With `--real` the same four passes also run on real clusters (bench/apply_real.py: three
Kubernetes v1.34 control planes with kwok Nodes, started from tests/e2e/controlplane.py, fresh
ones for each side; `make e2e-build` builds them), and the table shows each pass on the
emulators beside the same pass on the real clusters. There, requests and writes are counted
by each client and changes are the objects whose resourceVersion moved; the first pass's pods
become available before the steady pass starts. `make bench-e2e` runs that.

Run: `.venv/bin/python bench/apply.py [--json] [--real]` from the repository root.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconciler.kube import client as kube
from reconciler.live import apply
from tests.kubeapi import KubeAPI

CLUSTERS = 3
NAMESPACES = 10
APPS = 330
MANAGED = {"app.kubernetes.io/managed-by": "dro"}

Obj = dict[str, Any]


def deployment(i: int, namespace: str) -> Obj:
    labels = {"app.kubernetes.io/name": f"app{i:03d}", **MANAGED}
    selector = {"app.kubernetes.io/name": f"app{i:03d}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"app{i:03d}", "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1 + i % 5,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": f"registry.example/app{i:03d}:1.{i % 7}.0",
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "env": [{"name": "CONFIG", "value": f"app{i:03d}-config"}],
                            "resources": {
                                "requests": {"cpu": ("100m", "250m", "500m")[i % 3]},
                                "limits": {"memory": ("128Mi", "256Mi", "512Mi")[i % 3]},
                            },
                        }
                    ]
                },
            },
        },
    }


def service(i: int, namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"app{i:03d}", "namespace": namespace, "labels": dict(MANAGED)},
        "spec": {
            "selector": {"app.kubernetes.io/name": f"app{i:03d}"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        },
    }


def configmap(i: int, namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"app{i:03d}-config",
            "namespace": namespace,
            "labels": dict(MANAGED),
        },
        "data": {"LOG_LEVEL": "info", "FEATURE_FLAGS": f"flag-{i}", "REPLICA": str(i % 5)},
    }


def tree() -> list[Obj]:
    """One cluster's rendered objects, Namespaces first (the naive loop needs that order)."""
    names = [f"team-{n:02d}" for n in range(NAMESPACES)]
    out: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": dict(MANAGED)}}
        for n in names
    ]
    for i in range(APPS):
        namespace = names[i % NAMESPACES]
        out += [configmap(i, namespace), service(i, namespace), deployment(i, namespace)]
    return out


@dataclass
class Pass:
    """One pass over the 3 clusters: wall time, what the emulators saw, what sync reported."""

    seconds: float
    writes: int
    requests: int
    changes: int = 0
    reported_writes: int | None = None
    applied: int | None = None
    unchanged: int | None = None
    failed: int = 0
    ready: float | None = None
    """Real clusters, first pass: seconds from its start until every replica was available."""

    def per_second(self, objects: int) -> float:
        """Objects handled per second of wall time."""
        return objects / self.seconds


class Fleet:
    """Three emulators, one kubeconfig with a context each, one connection each."""

    def __init__(self, tmp: Path, label: str) -> None:
        self.servers: list[KubeAPI] = []
        self.connections: list[kube.Connection] = []
        config = tmp / f"{label}.kubeconfig"
        for c in range(CLUSTERS):
            self.servers.append(KubeAPI().start())
            self.servers[-1].kubeconfig(config, context=f"{label}-{c}")
        for c in range(CLUSTERS):
            name = f"{label}-{c}"
            self.connections.append(kube.connect(name, context=name, kubeconfig=config))

    def run(self, one: Callable[[kube.Connection], Pass | None]) -> Pass:
        """Run `one` on every cluster in parallel; count the emulators' requests and writes."""
        for server in self.servers:
            server.reset_counters()
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=CLUSTERS) as pool:
            parts = list(pool.map(one, self.connections))
        seconds = time.perf_counter() - started
        total = Pass(
            seconds,
            writes=sum(len(s.writes) for s in self.servers),
            requests=sum(len(s.requests) for s in self.servers),
            changes=sum(len(s.changes) for s in self.servers),
        )
        synced = [p for p in parts if p is not None]
        if synced:
            total.reported_writes = sum(p.reported_writes or 0 for p in synced)
            total.applied = sum(p.applied or 0 for p in synced)
            total.unchanged = sum(p.unchanged or 0 for p in synced)
            total.failed = sum(p.failed for p in synced)
        return total

    def stop(self) -> None:
        """Close the connections and stop the emulators."""
        for connection in self.connections:
            connection.close()
        for server in self.servers:
            server.stop()


def dro_sync(objects: Sequence[Mapping[str, Any]]) -> Callable[[kube.Connection], Pass]:
    def one(connection: kube.Connection) -> Pass:
        result = apply.sync(connection, objects, prune=True)
        for line in result.failed:
            print(f"  {connection.cluster}: {line}", file=sys.stderr)
        return Pass(
            0.0,
            0,
            0,
            reported_writes=result.writes,
            applied=result.applied,
            unchanged=result.unchanged,
            failed=len(result.failed),
        )

    return one


def naive_apply(objects: Sequence[Mapping[str, Any]]) -> Callable[[kube.Connection], None]:
    def one(connection: kube.Connection) -> None:
        for obj in objects:
            connection.apply(obj)

    return one


def measure(objects: list[Obj]) -> dict[str, Pass]:
    """Both passes of dro, then both passes of the naive loop on fresh emulators."""
    fleets: list[Fleet] = []
    results: dict[str, Pass] = {}
    with tempfile.TemporaryDirectory(prefix="dro-bench-apply-") as tmp:
        try:
            fleets.append(Fleet(Path(tmp), "dro"))
            results["dro first"] = fleets[-1].run(dro_sync(objects))
            results["dro steady"] = fleets[-1].run(dro_sync(objects))
            fleets.append(Fleet(Path(tmp), "naive"))
            results["naive first"] = fleets[-1].run(naive_apply(objects))
            results["naive steady"] = fleets[-1].run(naive_apply(objects))
        finally:
            for fleet in fleets:
                fleet.stop()
    return results


def measure_real(objects: list[Obj]) -> tuple[dict[str, Pass], dict[str, float]]:
    """The same four passes on real clusters: three fresh ones for dro, three for the naive
    loop; each first pass's pods become available (settle) before its steady pass."""
    from bench import apply_real

    results: dict[str, Pass] = {}
    settled: dict[str, float] = {}
    for label, one in (("dro", dro_sync(objects)), ("naive", naive_apply(objects))):
        with apply_real.started(label) as fleet:
            first = results[f"{label} first"] = fleet.run(one, Pass(0.0, 0, 0))
            settled[label] = fleet.settle()
            first.ready = first.seconds + settled[label]
            results[f"{label} steady"] = fleet.run(one, Pass(0.0, 0, 0))
    return results, settled


def ratios(results: Mapping[str, Pass]) -> dict[str, float]:
    """dro against the naive loop."""
    dro_first, dro_steady = results["dro first"], results["dro steady"]
    naive_first, naive_steady = results["naive first"], results["naive steady"]
    found = {
        "first_pass_speed": naive_first.seconds / dro_first.seconds,
        "steady_pass_speed": naive_steady.seconds / dro_steady.seconds,
        "steady_writes": dro_steady.writes / naive_steady.writes,
        "steady_requests": dro_steady.requests / naive_steady.requests,
    }
    if dro_first.ready and naive_first.ready:
        found["first_pass_ready_speed"] = naive_first.ready / dro_first.ready
    return found


def summary(name: str, r: Mapping[str, float]) -> str:
    """The ratios in one line."""
    ready = r.get("first_pass_ready_speed")
    return (
        f"{name}: dro against the naive loop: first pass {r['first_pass_speed']:.2f}× its "
        f"objects/s"
        + ("" if ready is None else f" ({ready:.2f}× to every replica available)")
        + f"; steady pass {r['steady_pass_speed']:.2f}× its objects/s, "
        f"{r['steady_writes']:.0%} of its writes, {r['steady_requests']:.3f}× its requests"
    )


def figures(results: Mapping[str, Pass], total: int) -> dict[str, Any]:
    """The passes as JSON."""
    return {name: asdict(p) | {"objects_per_s": p.per_second(total)} for name, p in results.items()}


def check(where: str, results: Mapping[str, Pass]) -> None:
    """Exit 1 when sync failed, or when a steady dro pass wrote."""
    dro_first, dro_steady = results["dro first"], results["dro steady"]
    if dro_first.failed or dro_steady.failed:
        sys.exit(f"{where}: apply.sync reported failures")
    if dro_steady.writes or dro_steady.reported_writes:
        sys.exit(
            f"{where}: a steady dro pass wrote {dro_steady.writes} times: it must write nothing"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--real",
        action="store_true",
        help="also on three real clusters (make e2e-build first), printed beside the emulators",
    )
    args = parser.parse_args()
    objects = tree()
    total = len(objects) * CLUSTERS
    results = measure(objects)
    real, settled = measure_real(objects) if args.real else ({}, {})
    if args.json:
        out: dict[str, Any] = {
            "objects": total,
            "passes": figures(results, total),
            "ratios": ratios(results),
        }
        if real:
            out["real"] = {
                "passes": figures(real, total),
                "ratios": ratios(real),
                "settle_seconds": settled,
            }
        print(json.dumps(out, indent=2))
    elif real:
        print_side_by_side(results, real, len(objects), total)
    else:
        print(f"apply benchmark: {CLUSTERS} clusters × {len(objects)} objects = {total} objects")
        print(
            f"{'pass':<14}{'seconds':>9}{'objects/s':>11}{'writes':>8}{'changes':>9}"
            f"{'requests':>10}  sync says"
        )
        for name, p in results.items():
            says = (
                f"applied {p.applied}, unchanged {p.unchanged}, writes {p.reported_writes}"
                if p.applied is not None
                else "-"
            )
            print(
                f"{name:<14}{p.seconds:>9.2f}{p.per_second(total):>11.0f}{p.writes:>8}"
                f"{p.changes:>9}{p.requests:>10}  {says}"
            )
        print(summary("emulators", ratios(results)))
    check("emulators", results)
    if real:
        check("real clusters", real)


def print_side_by_side(
    emulated: Mapping[str, Pass], real: Mapping[str, Pass], objects: int, total: int
) -> None:
    """One row per pass: the emulators' figures, then the real clusters'."""
    print(
        f"apply benchmark: {CLUSTERS} clusters × {objects} objects = {total} objects, "
        "on emulators | on real clusters (Kubernetes v1.34.4, kwok)"
    )
    half = f"{'seconds':>9}{'objects/s':>11}{'writes':>8}{'changes':>9}{'requests':>10}"
    print(f"{'pass':<14}{half} |{half}{'ready s':>9}")

    def cells(p: Pass) -> str:
        return (
            f"{p.seconds:>9.2f}{p.per_second(total):>11.0f}{p.writes:>8}{p.changes:>9}"
            f"{p.requests:>10}"
        )

    for name, p in emulated.items():
        ready = "-" if real[name].ready is None else f"{real[name].ready:.1f}"
        print(f"{name:<14}{cells(p)} |{cells(real[name])}{ready:>9}")
    print(
        "ready s: from the start of a first pass on the real clusters until every Deployment's "
        "replicas were available (their controllers, scheduler and kwok at work)"
    )
    print(summary("emulators", ratios(emulated)))
    print(summary("real clusters", ratios(real)))


if __name__ == "__main__":
    main()
