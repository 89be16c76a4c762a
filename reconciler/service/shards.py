"""Which member of `dro run` owns which cluster: consistent hashing with bounded loads.

The scheme is the one Argo CD's `consistent-hashing` sharding algorithm uses, after Mirrokni,
Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads" (2018): each member is put
on a hash ring at `VIRTUAL_NODES` points; a cluster goes to the first member clockwise from the
cluster's own hash whose load is still under the bound `ceil(LOAD_FACTOR × clusters /
members)`, and a member at the bound is passed over. The bound keeps every member within 25 %
of the average (plain consistent hashing leaves some members with several times it), and the
ring keeps the assignment stable: a member joining or leaving moves about `1/N` of the clusters,
where modulo hashing would move nearly all of them.

Everything is a pure function of the member and cluster names: the hash is BLAKE2b (not
Python's `hash`, which is salted per process), clusters are placed in a fixed order (by their
ring position, then name), so every replica that sees the same live members computes the same
assignment without talking to the others.

Called by `service.sharding`.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Iterable, Mapping

VIRTUAL_NODES = 100
"""Points per member on the ring: enough that each member's share of the ring is within a few
per cent of `1/N` for a handful of members."""
LOAD_FACTOR = 1.25
"""A member may own at most this many times the average number of clusters (rounded up)."""


def point(text: str) -> int:
    """`text`'s position on the ring: the first 8 bytes of its BLAKE2b digest."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def bound(clusters: int, members: int, load_factor: float = LOAD_FACTOR) -> int:
    """The most clusters one member may own: `ceil(load_factor × clusters / members)`."""
    if members < 1:
        raise ValueError("a bound needs at least one member")
    return math.ceil(load_factor * clusters / members)


class Ring:
    """The hash ring of a set of members, `VIRTUAL_NODES` points each."""

    def __init__(self, members: Iterable[str], virtual_nodes: int = VIRTUAL_NODES) -> None:
        self.members = tuple(sorted(set(members)))
        if not self.members:
            raise ValueError("a ring needs at least one member")
        # ties between two members' points (astronomically rare) go to the smaller name
        nodes = sorted(
            (point(f"{member}#{index}"), member)
            for member in self.members
            for index in range(virtual_nodes)
        )
        self._points = [p for p, _ in nodes]
        self._owners = [m for _, m in nodes]

    def clockwise(self, key: str) -> Iterable[str]:
        """The members in the order met walking clockwise from `key`'s point, each once."""
        start = bisect.bisect_right(self._points, point(key))
        seen: set[str] = set()
        total = len(self._owners)
        for step in range(total):
            owner = self._owners[(start + step) % total]
            if owner not in seen:
                seen.add(owner)
                yield owner
                if len(seen) == len(self.members):
                    return


def assign(
    clusters: Iterable[str],
    members: Iterable[str],
    *,
    load_factor: float = LOAD_FACTOR,
    virtual_nodes: int = VIRTUAL_NODES,
) -> dict[str, str]:
    """Cluster → the member that owns it, for the live `members`; empty without members.

    Each cluster, in the order of its ring position (then name), goes to the first member
    clockwise whose load is under `bound`; as the bounds add up to at least the number of
    clusters, one always is."""
    names = sorted(set(clusters))
    alive = sorted(set(members))
    if not alive or not names:
        return {}
    ring = Ring(alive, virtual_nodes)
    limit = bound(len(names), len(alive), load_factor)
    loads = dict.fromkeys(alive, 0)
    owners: dict[str, str] = {}
    for cluster in sorted(names, key=lambda name: (point(name), name)):
        for member in ring.clockwise(cluster):
            if loads[member] < limit:
                owners[cluster] = member
                loads[member] += 1
                break
    return dict(sorted(owners.items()))


def owned_by(owners: Mapping[str, str], member: str) -> frozenset[str]:
    """The clusters `member` owns in an assignment."""
    return frozenset(cluster for cluster, owner in owners.items() if owner == member)
