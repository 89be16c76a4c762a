"""Who may see the web view: the REST API's tokens, from a header or a cookie, with read scope.

When `dro run` has API keys (`--api-jwks-file` or `--api-jwt-key-file`), every page needs a
token the API would accept (`service.api.auth`), sent as `Authorization: Bearer <token>` or
in the `dro_token` cookie, with the scope `fleet:read` or `policies:read`. A browser gets the
cookie from the login form (`POST /login`): the token is verified before the cookie is set,
and the cookie is `HttpOnly`, `SameSite=Strict`, `Path=/`, and `Secure` over TLS. Without API
keys the view is open, as the probes are (dro run refuses plain HTTP off loopback when keys are
given, `service.listener`).

A refusal is 401 (no token, or one that does not verify) or 403 (no read scope). Neither the
answer nor a log holds the token.

Called by `web.pages`.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from reconciler.service.api import auth

COOKIE = "dro_token"
RESOURCE = "fleet"
"""The scope resource: `fleet:read` (or `policies:read`, which reads everything)."""
COOKIE_SECONDS = 8 * 3600
"""How long the browser keeps the cookie (the token's own `exp` still applies)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a request may not see the page: status, message, `WWW-Authenticate`."""

    status: int
    message: str
    challenge: str


class Gate:
    """Checks each request against the API's authenticator (None: the view is open)."""

    def __init__(self, authenticator: auth.Authenticator | None) -> None:
        self.authenticator = authenticator

    @property
    def enabled(self) -> bool:
        """Whether a token is needed."""
        return self.authenticator is not None

    def check(self, request: Request) -> Refused | None:
        """None when the request may read; else why not."""
        if self.authenticator is None:
            return None
        header = request.headers.get("authorization")
        if not header:
            cookie = request.cookies.get(COOKIE)
            header = f"Bearer {cookie}" if cookie else None
        return self.check_token(header)

    def check_token(self, authorization: str | None) -> Refused | None:
        """`check` for an `Authorization` header's value."""
        if self.authenticator is None:
            return None
        try:
            caller = self.authenticator.authenticate(authorization)
            auth.require(caller, RESOURCE, "read")
        except auth.AuthError as error:
            return Refused(error.status, error.message, error.challenge)
        return None
