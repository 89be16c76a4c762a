"""Status: what a pass observed, as the output branch's `status/` files, and back.

- `status/clusters/<cluster>.yaml` holds a cluster's observation: capacity, used, the largest
  free node and the water level per resource, its reachability, the health of the workloads
  dro placed there, and when it was observed. `cluster_status` writes the `status` part from
  an `Observation`; `stale_observation` reads it back for a cluster that cannot be reached,
  marked stale, so the scheduler keeps using the last committed figures.
- `status/workloads/<namespace>/<kind>-<name>.yaml` holds one workload's health across its
  clusters, aggregated like Argo CD's (`health.workload`).
- `status/drift/<cluster>.yaml` lists the objects drifted on a cluster (`driftfiles`).
- Status files are committed at most once per `--status-interval` when only they changed,
  unless health, reachability or which fields drifted changed (`urgent`, `due`).

Amounts are written as Kubernetes quantities (`cpu: "96"`, `memory: 300Gi`) and read back in
base units (cores, bytes), as in an `Observation`; files of earlier versions, which held plain
numbers, read as well (`quantity.amounts`). Water levels are plain ratios. This module is pure.

Called by 11 modules, among them `branch.overview`, `laststate`, `live`, `load.history`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from reconciler import yamlio
from reconciler.branch import driftfiles, locations, outputtree, paths, statefiles
from reconciler.domain import (
    DRO_API_VERSION,
    Cluster,
    Decision,
    Observation,
    ResourceKey,
    clock,
    durations,
)
from reconciler.domain.forecast import ClusterSample
from reconciler.domain.paths import YAML
from reconciler.kube import health, inventory, quantity

OBSERVED = "observed"
_URGENT_KEYS = ("reachable", "stale", "suspended", "health", "phase")


def cluster_status(observation: Observation, *, suspended: bool = False) -> dict[str, Any]:
    """The `status` of a cluster's status file, from its observation this pass."""
    result: dict[str, Any] = {
        "source": OBSERVED,
        "observedAt": observation.observed_at,
        "reachable": not observation.unreachable_since and not suspended,
        "capacity": quantity.texts(observation.capacity),
        "used": quantity.texts(observation.used),
        "largestNodeFree": quantity.texts(observation.largest_node_free),
        "waterLevel": water_level(observation.capacity, observation.used),
    }
    if observation.stale:
        result["stale"] = True
    if suspended:
        result["suspended"] = True
    if observation.unreachable_since:
        result["unreachableSince"] = observation.unreachable_since
    states = [status for status, _ in observation.health.values()]
    if states:
        result["health"] = health.worst(health.Health(s) for s in states).status
        result["workloads"] = {s: states.count(s) for s in sorted(set(states))}
    if observation.pending:
        result["pending"] = [
            {"workload": _name(key), "pods": pods, "since": since}
            for key, (pods, since) in sorted(observation.pending.items())
        ]
    return result


def water_level(capacity: Mapping[str, float], used: Mapping[str, float]) -> dict[str, float]:
    """RWL = used / capacity per resource with a capacity, rounded to 4 places."""
    return {
        resource: round(used.get(resource, 0.0) / total, 4)
        for resource, total in sorted(capacity.items())
        if total > 0
    }


def stale_observation(
    cluster: Cluster,
    previous: Mapping[str, Any] | None,
    *,
    unreachable_since: str | None,
) -> Observation:
    """The last committed observation of a cluster not observed this pass, marked stale: its
    status file's figures when it was observed before, else its declared ones.
    `unreachable_since` is when its API first failed to list (None for a suspended cluster);
    an earlier time in the status file wins, so the clock of failover keeps running."""
    status = previous or {}
    if status.get("unreachableSince") and unreachable_since is not None:
        unreachable_since = str(status["unreachableSince"])
    if status.get("source") == OBSERVED:
        capacity = quantity.amounts(status.get("capacity"))
        used = quantity.amounts(status.get("used"))
        largest = quantity.amounts(status.get("largestNodeFree"))
        observed_at = status.get("observedAt")
    else:
        capacity, used = dict(cluster.capacity), dict(cluster.allocated)
        largest, observed_at = dict(cluster.largest_node_free), None
    return Observation(
        cluster=cluster.name,
        capacity=capacity,
        used=used,
        largest_node_free=largest,
        observed_at=str(observed_at) if observed_at else None,
        stale=True,
        unreachable_since=unreachable_since,
    )


def sample(path: str, data: bytes, committed_at: float) -> tuple[str, ClusterSample] | None:
    """(cluster, what its status file recorded) for prediction's history, or None for a file
    that is not as dro wrote it, or whose figures are not this pass's (stale or unreachable:
    the last figures copied forward). The time is `observedAt` when observed, else the commit's
    time; `used` is the observed usage, or for a declared cluster its declared `allocated`."""
    cluster = paths.status_cluster(path)
    if cluster is None:
        return None
    try:
        status = statefiles.status_of(path, data)
        if status.get("stale") or status.get("unreachableSince"):
            return None
        at = committed_at
        if status.get("source") == OBSERVED and status.get("observedAt"):
            at = durations.epoch(str(status["observedAt"]))
        used = status.get("used") if status.get("source") == OBSERVED else status.get("allocated")
        found = ClusterSample(
            at=at,
            capacity=quantity.amounts(status.get("capacity")),
            used=quantity.amounts(used),
            placed=quantity.amounts(status.get("placed")),
        )
    except (yamlio.YamlError, statefiles.StateError, ValueError):
        return None
    return cluster, found


def forecast_levels(files: Mapping[str, bytes]) -> dict[str, dict[str, float]]:
    """Cluster → resource → the forecast water level its status file records: (forecast
    level of the background + `placed`) / capacity, rounded to 4 places; clusters without a
    forecast are left out."""
    found: dict[str, dict[str, float]] = {}
    for path, status in _statuses(files, paths.STATUS_CLUSTERS):
        cluster = paths.status_cluster(path)
        forecast = status.get("forecast")
        if cluster is None or not isinstance(forecast, Mapping):
            continue
        level = quantity.amounts(forecast.get("level"))
        placed = quantity.amounts(status.get("placed"))
        capacity = quantity.amounts(status.get("capacity"))
        found[cluster] = {
            r: round((v + placed.get(r, 0.0)) / capacity[r], 4)
            for r, v in sorted(level.items())
            if capacity.get(r, 0.0) > 0
        }
    return found


def previous_statuses(files: Mapping[str, bytes]) -> dict[str, dict[str, Any]]:
    """Cluster name → the `status` of its file on the output branch (unreadable ones skipped)."""
    found: dict[str, dict[str, Any]] = {}
    for path, status in _statuses(files, paths.STATUS_CLUSTERS):
        cluster = paths.status_cluster(path)
        if cluster is not None:
            found[cluster] = dict(status)
    return found


def _statuses(files: Mapping[str, bytes], folder: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, `status`) of every file under `folder` that is as dro wrote it, by path; the
    others are skipped (`statefiles`; `lastpass.phases` warns about them)."""
    for path, data in sorted(files.items()):
        if not path.startswith(folder) or not path.endswith(YAML):
            continue
        try:
            yield path, statefiles.status_of(path, data)
        except (yamlio.YamlError, statefiles.StateError):
            continue


def committed_observations(
    files: Mapping[str, bytes], clusters: Iterable[Cluster]
) -> dict[str, Observation]:
    """The observations the last pass committed (`status/` of the output branch), for the
    `clusters` that were observed then: figures, reachability, pending pods and the health
    of each workload. `dro plan` schedules both sides of a review from them."""
    statuses = previous_statuses(files)
    healths = _committed_health(files)
    result: dict[str, Observation] = {}
    for cluster in clusters:
        status = statuses.get(cluster.name)
        if status is None or status.get("source") != OBSERVED:
            continue
        since = status.get("unreachableSince")
        result[cluster.name] = Observation(
            cluster=cluster.name,
            capacity=quantity.amounts(status.get("capacity")),
            used=quantity.amounts(status.get("used")),
            largest_node_free=quantity.amounts(status.get("largestNodeFree")),
            observed_at=str(status["observedAt"]) if status.get("observedAt") else None,
            stale=bool(status.get("stale")),
            unreachable_since=str(since) if since else None,
            pending=_pending(status.get("pending")),
            health=healths.get(cluster.name, {}),
        )
    return result


def committed_water_levels(status: Mapping[str, Any]) -> dict[str, float]:
    """The `waterLevel` of a cluster's committed status, per resource."""
    return _floats(status.get("waterLevel"))


def _pending(raw: Any) -> dict[ResourceKey, tuple[int, str]]:
    pending: dict[ResourceKey, tuple[int, str]] = {}
    for entry in raw if isinstance(raw, list) else ():
        key = _key(entry.get("workload")) if isinstance(entry, Mapping) else None
        if key is not None:
            pending[key] = (int(entry.get("pods") or 0), str(entry.get("since") or ""))
    return pending


def _committed_health(files: Mapping[str, bytes]) -> dict[str, dict[ResourceKey, tuple[str, str]]]:
    """Cluster → workload → (health, message), from the `status/workloads/` files."""
    result: dict[str, dict[ResourceKey, tuple[str, str]]] = {}
    for _, status in _statuses(files, paths.STATUS_WORKLOADS):
        key = _key(status.get("resource"))
        if key is None:
            continue
        for entry in status.get("clusters") or ():
            if isinstance(entry, Mapping) and entry.get("name"):
                state = (str(entry.get("health", "")), str(entry.get("message", "")))
                result.setdefault(str(entry["name"]), {})[key] = state
    return result


def _key(name: Any) -> ResourceKey | None:
    """The `ResourceKey` of a placement name (`_name`), or None; earlier versions' names,
    with empty segments, read too."""
    return inventory.parse_placement_name(name)


def workload_files(
    decisions: Iterable[Decision],
    observations: Mapping[str, Observation],
    cities: Mapping[str, str] | None = None,
) -> dict[str, bytes]:
    """`status/workloads/...` for every workload with a rollout (`health.ROLLOUT_KINDS`)
    placed on an observed cluster: its health on each of those clusters (Unknown on a stale
    observation), and the worst of them; with `cities` (cluster → city code), also per
    location (`branch.locations`)."""
    files: dict[str, bytes] = {}
    if not observations:
        return files
    for decision in decisions:
        if not health.has_rollout(decision.key.group, decision.key.kind):
            continue
        per_cluster: dict[str, health.Health] = {}
        for placed in decision.rendered():
            seen = observations.get(placed.cluster)
            if seen is None:
                continue
            if seen.stale:
                per_cluster[placed.cluster] = health.Health(
                    health.UNKNOWN, f"not observed since {seen.observed_at or 'never'}"
                )
                continue
            state, message = seen.health.get(decision.key, (health.MISSING, "not found"))
            per_cluster[placed.cluster] = health.Health(state, message)
        if per_cluster:
            files[paths.workload_status_path(decision.key)] = statefiles.seal(
                yamlio.dump(
                    _workload_document(
                        decision.key,
                        per_cluster,
                        locations.entries(decision, per_cluster, cities or {}),
                    )
                ).encode()
            )
    return files


def urgent(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> bool:
    """Whether health, reachability or drift differ between two sets of `status/` files: such a
    change is committed at once, not held back by `--status-interval`."""
    found = {p for p in (*before, *after) if paths.is_status(p)}
    if any((p in before) != (p in after) for p in found):
        return True
    # a file whose bytes did not change cannot have changed its vitals: parse only the rest
    changed = (p for p in sorted(found) if before[p] != after[p])
    return any(_vital(p, before[p]) != _vital(p, after[p]) for p in changed)


def due(statuses: Iterable[Mapping[str, Any]], now: float, interval: float) -> bool:
    """Whether the last committed observation is at least `interval` seconds older than
    `now` (or there is none): a status-only change may then be committed. `statuses` are the
    clusters' last committed `status` (`previous_statuses`)."""
    times = [
        durations.epoch(str(status["observedAt"]))
        for status in statuses
        if status.get("observedAt") and status.get("source") == OBSERVED
    ]
    return not times or clock.elapsed(now, max(times), interval)


def _vital(path: str, data: bytes) -> Any:
    """What of one status file counts as health or reachability (None for a file that is not
    as dro wrote it, so that a fresh one replaces it at once)."""
    try:
        status = statefiles.status_of(path, data)
    except (yamlio.YamlError, statefiles.StateError):
        return None
    if path.startswith(paths.STATUS_WORKLOADS):
        return [(c.get("name"), c.get("health")) for c in status.get("clusters") or ()]
    if path.startswith(paths.STATUS_DRIFT):
        return driftfiles.vital(status)
    return [status.get(key) for key in _URGENT_KEYS]


def _workload_document(
    key: ResourceKey, per_cluster: Mapping[str, health.Health], by_location: list[Any]
) -> Any:
    overall = health.workload(per_cluster)
    document: dict[str, Any] = {
        "apiVersion": DRO_API_VERSION,
        "kind": "WorkloadHealth",
        "metadata": {"name": key.name, **({"namespace": key.namespace} if key.namespace else {})},
        "status": {
            "resource": _name(key),
            "health": overall.status,
            "message": overall.message,
            "clusters": [
                {"name": name, "health": h.status, "message": h.message}
                for name, h in sorted(per_cluster.items())
            ],
        },
    }
    if by_location:
        document["status"]["locations"] = by_location
    return document


def _name(key: ResourceKey) -> str:
    return inventory.placement_name(key)


def _floats(raw: Any) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float)}


def observations_digest(tree: Mapping[str, bytes]) -> str:
    """`Dro-Observations`: the sha256 of the cluster status files the decisions used."""
    hashed = hashlib.sha256()
    for path in outputtree.under(tree, paths.STATUS_CLUSTERS):
        hashed.update(path.encode() + b"\0" + tree[path] + b"\0")
    return hashed.hexdigest()
