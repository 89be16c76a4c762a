"""https credentials for git, as a value: read from a file by `load.credentials_from` or from
`DRO_GIT_*` by `settings.git_credentials`, and sent by `git.gitrepo`.

Called by 7 modules, among them `commit`, `git.gitrepo`, `load`, `review`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler import redact


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """https credentials; `token` is sent as the password with username `x-access-token`.
    Its `repr` names the fields that are set, never their values (a token may stand in the
    username of a URL too): a logged or crashed pass shows `Credentials(token=<redacted>)`."""

    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        names = ("username", "password", "token")
        shown = (f"{name}={redact.HIDDEN}" for name in names if getattr(self, name) is not None)
        return f"Credentials({', '.join(shown)})"

    __str__ = __repr__
