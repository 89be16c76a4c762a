"""The values the REST API's parts share: a caller, a policy as served, a write's result, the
errors with the draft's `{code, message, details}` shape, and the store's interface.

Called by 7 modules, among them `service.api.auth`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

KINDS: Mapping[str, str] = {
    "propagationpolicies": "PropagationPolicy",
    "resourceplacementpolicies": "ResourcePlacementPolicy",
    "clusteroverridepolicies": "ClusterOverridePolicy",
}
"""Each resource of the API (its plural, as in the paths) and the policy kind it stores."""

INVALID_BODY = "INVALID_BODY"
POLICY_NOT_FOUND = "POLICY_NOT_FOUND"
POLICY_CONFLICT = "POLICY_CONFLICT"
PRECONDITION_FAILED = "PRECONDITION_FAILED"
VALIDATION_FAILED = "VALIDATION_FAILED"
SOURCE_UNAVAILABLE = "SOURCE_UNAVAILABLE"


@dataclass(frozen=True)
class Caller:
    """Who makes a request, from the verified JWT: the commit author of a write."""

    subject: str
    name: str
    email: str
    scopes: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Problem:
    """One validation problem, located as `dro validate` prints it."""

    file: str
    line: int
    pointer: str
    message: str

    def as_json(self) -> dict[str, Any]:
        """The problem as one entry of a 422 answer's `details.problems`."""
        return {
            "file": self.file,
            "line": self.line,
            "pointer": self.pointer,
            "message": self.message,
        }


class ApiError(Exception):
    """A request the API refuses: an HTTP status and the draft's `{code, message, details}`."""

    def __init__(
        self, status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details: Mapping[str, Any] = details or {}

    def as_json(self) -> dict[str, Any]:
        """The answer's body."""
        return {"code": self.code, "message": self.message, "details": dict(self.details)}


@dataclass(frozen=True)
class Policy:
    """One policy at the tip of the source branch, as the API serves it."""

    resource: str
    name: str
    document: Mapping[str, Any]
    etag: str
    path: str


@dataclass(frozen=True)
class Written:
    """A write that was committed and pushed."""

    sha: str
    branch: str
    policy: Policy | None


class PolicyStore(Protocol):
    """What the routes need of the store; `store.GitPolicyStore` is the implementation."""

    def list(self, resource: str) -> list[Policy]:
        """Every policy of one resource at the tip, sorted by name."""
        ...

    def get(self, resource: str, name: str) -> Policy:
        """One policy at the tip, or ApiError 404 POLICY_NOT_FOUND."""
        ...

    def create(self, resource: str, body: Mapping[str, Any], caller: Caller) -> Written:
        """A new policy: 400, 409 when the name exists, 422, or the commit."""
        ...

    def patch(
        self,
        resource: str,
        name: str,
        merge_patch: Mapping[str, Any],
        caller: Caller,
        if_match: str | None,
    ) -> Written:
        """An RFC 7396 merge patch of one policy: 400, 404, 412, 422, or the commit."""
        ...

    def delete(self, resource: str, name: str, caller: Caller, if_match: str | None) -> Written:
        """One policy removed: 404, 412, 422 (another file still needs it), or the commit."""
        ...
