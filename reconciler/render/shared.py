"""The output-branch files made from every decision at once: each cluster's kustomization and
status file (with `placed`, the requests of dro's replicas there), the MCS objects of the
Services called across clusters, the Argo CD listing and the README.

Called by `render`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Any

from reconciler import yamlio
from reconciler.branch import paths, summary
from reconciler.domain import Decision, ResourceKey, Spec
from reconciler.domain.forecast import Forecasts
from reconciler.kube import demand
from reconciler.render import decisionout, memo, rolloutview, services
from reconciler.render.held import Held


def files(
    spec: Spec,
    decisions: Sequence[Decision],
    observations: Mapping[str, Mapping[str, Any]],
    filling: Collection[str],
    held: Held,
    forecasts: Forecasts,
    remembered: memo.Memo | None,
) -> dict[str, bytes]:
    """The shared files of `decisions` (in key order), made whole; each cluster's documents
    dumped through `remembered` when there is one."""
    per_cluster: dict[str, list[str]] = {c.name: [] for c in spec.clusters}
    for decision in decisions:
        listed_now = partial(listing, decision, held)
        listed = remembered.listed(decision.key, listed_now) if remembered else listed_now()
        for name, relative in listed:
            per_cluster[name].append(relative)
    made: dict[str, bytes] = {}
    crossing = services.cross_cluster(spec.workloads, decisions)
    for path, data in mcs_files(spec, crossing).items():
        made[path] = data
        mcs = in_cluster(path)
        per_cluster[mcs.cluster].append(mcs.relative)
    for name, resources in per_cluster.items():
        path = paths.kustomization_path(name)
        made[path] = memo.dumped(remembered, path, summary.kustomization(sorted(resources)))
    requests = placed_requests(spec, decisions)
    for cluster in spec.clusters:
        document = summary.observation(
            cluster,
            observations.get(cluster.name),
            filling=cluster.name in filling,
            placed=requests.get(cluster.name),
            forecast=forecasts.get(cluster.name),
        )
        path = paths.cluster_status_path(cluster.name)
        made[path] = memo.dumped(remembered, path, document, sealed=True)
    made.update(decisionout.shared_files(decisions))
    made[paths.README] = readme(spec, decisions, crossing)
    return made


def readme(
    spec: Spec, decisions: Sequence[Decision], crossing: Sequence[services.CrossCluster]
) -> bytes:
    """The output branch's README: placements, Services called across clusters, rollouts in
    progress, and the other tools' folders; `decisions` in key order."""
    return (
        summary.readme(spec, decisions, in_order=True)
        + services.readme_section(crossing)
        + rolloutview.readme_section(decisions)
        + decisionout.readme_section(spec.config.output.karmada)
    ).encode()


def listing(decision: Decision, held: Held) -> list[tuple[str, str]]:
    """(cluster, path in its folder) of each manifest the decision has on the branch."""
    listed = []
    for placed in decision.rendered():
        path = paths.object_path(placed.cluster, decision.key)
        kept = held.suspended(decision, placed.cluster) or held.gone(decision, placed.cluster)
        if kept and held.previous(path) is None:
            continue
        listed.append((placed.cluster, in_cluster(path).relative))
    return listed


def placed_requests(spec: Spec, decisions: Sequence[Decision]) -> dict[str, dict[str, float]]:
    """Cluster → resource → the requests of dro's replicas the decisions render there (the
    target plus retiring copies, the count that runs where an override sets it)."""
    needs = {w.key: demand.per_replica(w) for w in spec.workloads}
    result: dict[str, dict[str, float]] = {}
    for decision in decisions:
        need = needs.get(decision.key)
        if not need:
            continue
        for placed in decision.rendered():
            runs = decision.effective.get(placed.cluster, placed.replicas)
            if not runs:
                continue
            into = result.setdefault(placed.cluster, {})
            for resource, amount in need.items():
                into[resource] = into.get(resource, 0.0) + amount * runs
    return result


def in_cluster(path: str) -> paths.ClusterFile:
    """A rendered manifest's cluster folder and its path there (what the kustomization lists)."""
    placed = paths.cluster_file(path)
    assert placed is not None  # `paths.object_path` made the path
    return placed


def mcs_files(spec: Spec, crossing: Sequence[services.CrossCluster]) -> dict[str, bytes]:
    """ServiceExport where a called Service runs, ServiceImport where its callers run."""
    if not crossing:
        return {}
    manifests = {w.key: w.manifest for w in spec.workloads if w.key.kind == "Service"}
    files = {}
    for cluster, objects in services.mcs_objects(crossing, manifests).items():
        for obj in objects:
            files[paths.object_path(cluster, ResourceKey.of(obj))] = yamlio.dump(obj).encode()
    return files
