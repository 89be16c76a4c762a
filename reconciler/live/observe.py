"""Observe: a cluster's live resources, measured from its Nodes and Pods.

`live` lists a cluster's Nodes and unfinished Pods through its `kube.Connection`; `measure`,
pure, turns them (plain dicts, as the API returns them) into an `Observation`, which the
scheduler uses in place of the cluster's declared `capacity`, `allocated` and
`largestNodeFree`.

- A node counts when it is Ready, not cordoned (`spec.unschedulable`) and has no NoSchedule or
  NoExecute taint: the room dro can place replicas in. `capacity` is the sum of the counted
  nodes' `status.allocatable`.
- `used` sums the requests of the pods that hold room: pods bound to a counted node and pods
  not bound yet (Karmada's "allocated" and "allocating"), except Succeeded and Failed ones. A
  pod's request is Kubernetes' rule, one `pods` slot included (`demand.pod_requests`).
- `largest_node_free` is, per resource, the most any one counted node has left: the draft's
  "single node maximum resource query".
- `health` (in `live`) is the rollout health of each Deployment, StatefulSet, DaemonSet and
  Job that dro applied, listed by its `managed-by` label.
- `synced` (in `live`) names those whose live object carries `multicluster.io/data-synced`,
  the signal a data-sync job (or a person) gives that a stateful move's data is in sync.
- `pending` names the workloads whose pods the Kubernetes scheduler could not place
  (`PodScheduled=False`, reason `Unschedulable`), with how many and since when. A pod is traced
  to its workload by the `multicluster.io/placement` annotation that dro renders.

Called by `live`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from reconciler.domain import Observation, ResourceKey, rollout
from reconciler.kube import demand, health, inventory, quantity
from reconciler.kube.client import Connection
from reconciler.kube.movehooks import DATA_SYNCED

PLACEMENT_ANNOTATION = inventory.PLACEMENT_ANNOTATION
_BLOCKING_TAINTS = frozenset({"NoSchedule", "NoExecute"})
_DONE = frozenset({"Succeeded", "Failed"})


def measure(
    cluster: str,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    *,
    observed_at: str,
) -> Observation:
    """The observation of `cluster` from its listed Nodes and Pods, taken at `observed_at`."""
    counted = {
        _name(node): _amounts(_status(node).get("allocatable"))
        for node in nodes
        if _schedulable(node)
    }
    capacity: dict[str, float] = {}
    for room in counted.values():
        _add(capacity, room)
    used: dict[str, float] = {}
    free = {name: dict(room) for name, room in counted.items()}
    for pod in pods:
        if _status(pod).get("phase") in _DONE:
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if node and node not in counted:
            continue  # on a node dro does not count: neither its room nor its load
        requests = demand.pod_requests(pod.get("spec") or {})
        _add(used, requests)
        if node:
            _add(free[node], {name: -amount for name, amount in requests.items()})
    largest: dict[str, float] = {}
    for room in free.values():
        for resource, amount in room.items():
            largest[resource] = max(largest.get(resource, 0.0), amount, 0.0)
    return Observation(
        cluster=cluster,
        capacity=dict(sorted(capacity.items())),
        used=dict(sorted(used.items())),
        largest_node_free=dict(sorted(largest.items())),
        observed_at=observed_at,
        pending=pending_pods(pods),
    )


def live(connection: Connection, *, observed_at: str) -> Observation:
    """Observe one reachable cluster: list its Nodes and its unfinished Pods, and measure.
    Raises `ClusterError` when it cannot be listed: the caller then keeps the cluster's last
    observation, marked stale, and counts it unreachable.

    The observation is a function of the listed items alone (and of `observed_at`, set
    last): a kept connection (`live.pool`) remembers the last one under the digests of the
    lists it came from (`Body.digest`), and the same lists give it again without parsing
    them (`OBSERVED`)."""
    nodes = connection.listing("v1", "Node")
    pods = connection.listing(
        "v1", "Pod", field_selector="status.phase!=Succeeded,status.phase!=Failed"
    )
    rolled = [
        (
            api_version,
            kind,
            connection.listing(
                api_version, kind, label_selector=inventory.MANAGED_BY_SELECTOR, shared=True
            ),
        )
        for api_version, kind in health.ROLLOUT_KINDS
    ]
    digests = (nodes.digest, pods.digest, *(body.digest for _, _, body in rolled))
    kept = connection.steady.get(OBSERVED)
    if isinstance(kept, tuple) and kept[0] == digests and isinstance(kept[1], Observation):
        return replace(kept[1], observed_at=observed_at)
    observed = measured(
        connection.cluster,
        nodes.items,
        pods.items,
        [{"apiVersion": v, "kind": k, **item} for v, k, body in rolled for item in body.items],
    )
    connection.steady[OBSERVED] = (digests, observed)
    return replace(observed, observed_at=observed_at)


OBSERVED = "observe"
"""Where a kept connection remembers its last observation (`Connection.steady`)."""


def measured(
    cluster: str,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    rolled: Sequence[Mapping[str, Any]],
) -> Observation:
    """The observation of `cluster` from its listed Nodes, Pods and the workloads dro
    applied (`rolled`, each with its apiVersion and kind), not yet timed."""
    observed = measure(cluster, nodes, pods, observed_at="")
    return replace(
        observed,
        health=workload_health(rolled),
        synced=data_synced(rolled),
        revisions=annotated(rolled, rollout.REVISION_ANNOTATION),
    )


def workload_health(objects: Iterable[Mapping[str, Any]]) -> dict[ResourceKey, tuple[str, str]]:
    """Workload → (health, message) of the live objects dro applied, traced by their
    `multicluster.io/placement` annotation. Each object carries its `apiVersion` and `kind`:
    listed items lack them, as real servers send them, and `live` gives them back from the
    list they came from."""
    result: dict[ResourceKey, tuple[str, str]] = {}
    for obj in objects:
        key = _workload_of(obj)
        if key is None:
            continue
        found = health.of(obj)
        result[key] = (found.status, found.message)
    return dict(sorted(result.items(), key=lambda item: item[0].sort_key))


def data_synced(objects: Iterable[Mapping[str, Any]]) -> dict[ResourceKey, str]:
    """Workload → the value of its live object's `multicluster.io/data-synced` annotation,
    for the objects dro applied that carry one."""
    return annotated(objects, DATA_SYNCED)


def annotated(objects: Iterable[Mapping[str, Any]], name: str) -> dict[ResourceKey, str]:
    """Workload → the value of the annotation `name` on its live object, for the objects dro
    applied that carry one (`multicluster.io/revision`: the template a rollout gave it)."""
    result: dict[ResourceKey, str] = {}
    for obj in objects:
        key = _workload_of(obj)
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(name)
        if key is not None and isinstance(value, str) and value:
            result[key] = value
    return dict(sorted(result.items(), key=lambda item: item[0].sort_key))


def pending_pods(pods: Iterable[Mapping[str, Any]]) -> dict[ResourceKey, tuple[int, str]]:
    """Workload → (pods the scheduler could not place, the earliest time one became so)."""
    result: dict[ResourceKey, tuple[int, str]] = {}
    for pod in pods:
        since = _unschedulable_since(pod)
        key = _workload_of(pod)
        if since is None or key is None:
            continue
        count, earliest = result.get(key, (0, since))
        result[key] = (count + 1, min(earliest, since))
    return dict(sorted(result.items(), key=lambda item: item[0].sort_key))


def _unschedulable_since(pod: Mapping[str, Any]) -> str | None:
    status = _status(pod)
    if status.get("phase") != "Pending":
        return None
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return str(condition.get("lastTransitionTime") or "")
    return None


def _workload_of(pod: Mapping[str, Any]) -> ResourceKey | None:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return inventory.parse_placement_name(annotations.get(PLACEMENT_ANNOTATION))


def _schedulable(node: Mapping[str, Any]) -> bool:
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    if any(taint.get("effect") in _BLOCKING_TAINTS for taint in spec.get("taints") or ()):
        return False
    ready = [c for c in _status(node).get("conditions") or () if c.get("type") == "Ready"]
    return all(c.get("status") == "True" for c in ready)


def _amounts(raw: Mapping[str, Any] | None) -> dict[str, float]:
    return {name: float(quantity.parse_quantity(value)) for name, value in (raw or {}).items()}


def _add(total: dict[str, float], amounts: Mapping[str, float]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0.0) + amount


def _name(item: Mapping[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("name", ""))


def _status(item: Mapping[str, Any]) -> Mapping[str, Any]:
    status = item.get("status")
    return status if isinstance(status, Mapping) else {}
