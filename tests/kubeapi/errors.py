"""API errors rendered as `kind: Status` documents with the codes a real apiserver uses."""

from __future__ import annotations

from typing import Any

REASON_BY_CODE: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def resource_label(plural: str, group: str) -> str:
    """Name a resource the way apiserver messages do: `deployments.apps` or `pods`."""
    return f"{plural}.{group}" if group else plural


class ApiError(Exception):
    """A failed request: HTTP status code, Status reason, message and optional details."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASON_BY_CODE.get(code, "Unknown")
        self.details = details

    def status_body(self) -> dict[str, Any]:
        """Return the `kind: Status` document sent as the response body."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def object_details(plural: str, group: str, name: str) -> dict[str, Any]:
    """Build the `details` block naming one object (`kind` holds the plural, as upstream)."""
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return details


def not_found(plural: str, group: str, name: str) -> ApiError:
    """Return the 404 for a missing object."""
    label = resource_label(plural, group)
    return ApiError(404, f'{label} "{name}" not found', details=object_details(plural, group, name))


def already_exists(plural: str, group: str, name: str) -> ApiError:
    """Return the 409 AlreadyExists for a create whose name is taken."""
    label = resource_label(plural, group)
    return ApiError(
        409,
        f'{label} "{name}" already exists',
        reason="AlreadyExists",
        details=object_details(plural, group, name),
    )


def stale_conflict(plural: str, group: str, name: str) -> ApiError:
    """Return the 409 Conflict for a write that carried an outdated resourceVersion."""
    label = resource_label(plural, group)
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {label} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        details=object_details(plural, group, name),
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """Return the 422 Invalid listing `(field, message)` causes."""
    text = "; ".join(f"{field}: {message}" for field, message in causes)
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [
            {"reason": "FieldValueInvalid", "message": message, "field": field}
            for field, message in causes
        ],
    }
    if group:
        details["group"] = group
    return ApiError(422, f'{kind} "{name}" is invalid: {text}', details=details)


def bad_request(message: str) -> ApiError:
    """Return a 400 BadRequest."""
    return ApiError(400, message)


def no_such_route() -> ApiError:
    """Return the 404 a real apiserver gives for an unknown path or resource."""
    return ApiError(404, "the server could not find the requested resource", details={"causes": []})


def method_not_allowed(method: str) -> ApiError:
    """Return a 405 for a verb the addressed path does not support."""
    return ApiError(
        405, f"the server does not allow this method on the requested resource: {method}"
    )
