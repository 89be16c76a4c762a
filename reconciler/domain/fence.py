"""Fencing: a replica of `dro run` writes only while it surely still holds the Lease.

Leader election alone does not stop a deposed leader: a replica paused (SIGSTOP, a long GC, a
frozen VM) past its Lease keeps running its pass when it resumes, beside the new leader. So
every write checks a `Fence` just before it is sent: a mutating request to a target cluster
without dryRun (`kube.connect(..., fence=)` checks it in the client, below every caller) and
the push of the output branch (`commit.publish`). Reads, dry runs and the Lease's own renewals
are not writes and are not fenced.

A leader's fence (`leader.LeaderLoop.check`) follows client-go's renew deadline: a write may be
sent only while `now < start of the last successful renewal + renew_deadline`, on the
monotonic clock, and `renew_deadline < lease_duration`; another replica can take the Lease only
after `renewTime + lease_duration`, so the difference covers the request's flight and clock
skew. A check that fails raises `Deposed`: the pass is abandoned there (`runner` logs it once),
and nothing after it is written. What no check made by the writer can exclude is a pause of
more than that margin between the check and the request leaving the process; the window is
the few microseconds from the check in the client to its socket write.

Called by 10 modules, among them `commit`, `kube.client`, `live`, `pipeline`.
"""

from __future__ import annotations

from typing import Protocol

from reconciler.errors import DroError


class Deposed(DroError):
    """This replica no longer holds the Lease (or cannot tell that it still does before its
    renew deadline): the write named in the message was not sent, and the pass stops."""


class Fence(Protocol):
    """Says whether this replica may write now."""

    def check(self, write: str) -> None:
        """Return when `write` (e.g. `PATCH /apis/apps/v1/...`) may be sent; raise `Deposed`
        when it must not."""


class _Unfenced:
    """The fence of a replica that runs alone (`--leader-elect=false`, `reconcile --once`)."""

    def check(self, write: str) -> None:
        """Every write may be sent."""
        return None


UNFENCED: Fence = _Unfenced()
"""No leader election: nothing to check."""

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_write(method: str, url: str) -> bool:
    """Whether a request to a cluster's API is a write: a mutating method without dryRun."""
    if method.upper() not in MUTATING_METHODS:
        return False
    query = url.partition("?")[2]
    return not any(item.startswith("dryRun=") for item in query.split("&"))
