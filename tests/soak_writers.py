"""The soak test's checks of who wrote and what is left (see `tests/soak.py`).

- `double_writes`: every write a cluster emulator received was sent by the process that held
  the Lease when it arrived (the Lease emulator's log of holders). One allowance, the limit of
  any check made by the writer itself: a write that had passed its fence when its process was
  stopped arrives when it is continued; at most the first write per cluster, within a moment
  of SIGCONT, is counted as such and reported, never a second.
- `orphans`: every object on every cluster that carries dro's label is in the final rendered
  tree (dro's inventory excepted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tests.soak_analysis import rendered_objects
from tests.soak_parts import INVENTORY_NAME, INVENTORY_NAMESPACE, Instance, RecordingAPI, Written

IN_FLIGHT_SECONDS = 1.0
"""How soon after SIGCONT a write that passed its fence before SIGSTOP may arrive."""
MANAGED_BY = ("app.kubernetes.io/managed-by", "dro")
KINDS = (("", "v1", "namespaces"), ("apps", "v1", "deployments"), ("", "v1", "configmaps"))


def holder_at(holders: Sequence[tuple[float, str]], moment: float) -> str:
    """Who held the Lease at `moment` ("" before anyone did, or after a release)."""
    found = ""
    for stamp, holder in holders:
        if stamp > moment:
            break
        found = holder
    return found


def double_writes(
    written: Sequence[Written],
    holders: Sequence[tuple[float, str]],
    instances: Sequence[Instance],
) -> tuple[list[str], list[Written]]:
    """(writes sent by a process that did not hold the Lease, described; writes allowed as
    in flight when their sender was stopped)."""
    stops = {instance.name: instance.stops for instance in instances}
    problems: list[str] = []
    in_flight: list[Written] = []
    resumed: set[tuple[str, str, float]] = set()
    for write in sorted(written, key=lambda w: w.at):
        holder = holder_at(holders, write.at)
        if holder == write.user:
            continue
        after = [c for _, c in stops.get(write.user, ()) if c <= write.at < c + IN_FLIGHT_SECONDS]
        key = (write.user, write.cluster, after[-1] if after else 0.0)
        if after and key not in resumed:
            resumed.add(key)
            in_flight.append(write)
            continue
        problems.append(
            f"{write.method} {write.path} on {write.cluster} by {write.user} at "
            f"{write.at:.3f}, while the Lease was held by {holder or 'nobody'}"
        )
    return problems, in_flight


def orphans(apis: Mapping[str, RecordingAPI], tree: Mapping[str, str]) -> list[str]:
    """Objects carrying dro's label on a cluster that the final tree does not render there."""
    found = []
    for cluster, api in sorted(apis.items()):
        rendered = rendered_objects(tree, cluster)
        for group, version, plural in KINDS:
            for obj in api.objects.list(group, version, plural):
                metadata = obj.get("metadata") or {}
                if (metadata.get("labels") or {}).get(MANAGED_BY[0]) != MANAGED_BY[1]:
                    continue
                namespace, name = metadata.get("namespace") or "", metadata.get("name", "")
                if (namespace, name) == (INVENTORY_NAMESPACE, INVENTORY_NAME):
                    continue
                kind = plural.removesuffix("s")
                if (kind, namespace, name) not in rendered:
                    found.append(f"{cluster}: {kind} {namespace}/{name}")
    return found
