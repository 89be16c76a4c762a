"""The REST API's audit event: one structlog event `api_audit` per request that tries to change
state (POST, PATCH, DELETE), whatever its outcome, refusals by authentication included.

It says who (the token's `sub`, or "anonymous" when no token verified), what (method, path,
resource, name), the outcome (HTTP status and error code, null on success) and the commit sha
(null when nothing was committed). It never holds the body, the token or another claim. The
durable trail is git's: each write is a commit with the caller as author (`dro audit`).

Called by `service.api.routes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

log = structlog.get_logger("dro")

WRITES = frozenset({"POST", "PATCH", "DELETE"})
"""The methods that try to change state: each such request is audited."""

ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Record:
    """One audited request."""

    who: str
    method: str
    path: str
    resource: str | None
    name: str | None
    status: int
    code: str | None
    commit: str | None


def emit(record: Record) -> None:
    """Log the record as the `api_audit` event (info: warnings are for the service's own
    trouble, not a client's refused request)."""
    log.info(
        "api_audit",
        who=record.who,
        method=record.method,
        path=record.path,
        resource=record.resource,
        name=record.name,
        status=record.status,
        code=record.code,
        commit=record.commit,
    )
