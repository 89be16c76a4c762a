"""A cluster's phase in its status file, and which clusters come back to be filled.

Each pass writes `status.phase` in `status/clusters/<name>.yaml` when a cluster is not simply
in service, the first that applies:

- `Filling`: re-balancing is moving replicas into it (added or recovered, below);
- `Suspended`: `spec.suspend: true` (dro neither observes nor applies it);
- `Draining`: `spec.drain: true` (re-balancing empties it);
- `Cordoned`: `spec.cordon: true` (it takes no new replicas);
- `Unreachable`: its API could not be listed (`unreachableSince`).

The next pass reads the phases back (`lastpass.phases`) to see a cluster come back. A cluster
is filled this pass (`filling`) when it is in service now (not suspended, draining or cordoned)
and, after the last pass, it was still `Filling`, was out of service (any phase above), or had
no status file while others had one: added, or its file restored after a pass without it. A
cluster still unreachable is skipped by the fill step, so it stays `Unreachable` until a pass
reaches it. A first pass (no status at all) fills nothing.

Called by `branch.statefiles`, `branch.summary` and `pipeline`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.domain import Cluster

FILLING = "Filling"
"""A cluster that re-balancing is still filling (added or recovered)."""
SUSPENDED = "Suspended"
DRAINING = "Draining"
CORDONED = "Cordoned"
UNREACHABLE = "Unreachable"
"""A cluster whose observation says it could not be listed; the first pass that reaches it
again fills it."""

OUT_OF_SERVICE = (SUSPENDED, DRAINING, CORDONED, UNREACHABLE)
"""The phases a cluster comes back from, in the order the first that applies is written."""
KNOWN = frozenset({FILLING, *OUT_OF_SERVICE})
"""Every phase a status file may hold."""


def of(cluster: Cluster, observed: Mapping[str, Any] | None, *, filling: bool) -> str | None:
    """The phase to write for `cluster` (None: in service), given its observation."""
    if filling:
        return FILLING
    if cluster.suspend:
        return SUSPENDED
    if cluster.drain:
        return DRAINING
    if cluster.cordon:
        return CORDONED
    if observed is not None and observed.get("unreachableSince"):
        return UNREACHABLE
    return None


def in_service(cluster: Cluster) -> bool:
    """Whether the spec lets re-balancing fill it: not suspended, draining or cordoned."""
    return not (cluster.suspend or cluster.drain or cluster.cordon)


def filling(clusters: Iterable[Cluster], before: Mapping[str, str]) -> set[str]:
    """The clusters re-balancing fills this pass, from the phases `before` of the last pass
    (cluster → phase, "" when in service; empty when the last pass wrote no status)."""
    return {
        c.name
        for c in clusters
        if in_service(c)
        and (before.get(c.name) in KNOWN or (bool(before) and c.name not in before))
    }
