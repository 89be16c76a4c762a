"""Redaction: what keeps credentials out of every message, log line and file dro writes.

`urls(text)` removes the user information (`user:token@`) from every URL in a text, as git
itself does when it prints a remote: for messages that quote a URL or a library error. (A YAML
error is described without quoting its line by `yamlio.plain`.)

`scrub_event` is the structlog processor built from it: the last step before an event is
rendered, so no event, and no traceback in one, carries a URL's credentials. Tracebacks in
events carry no frame locals either (`report.configure_logging`). This module is pure.

Called by 10 modules, among them `cli`, `domain.credentials`, `git.gitrepo`, `kube.client`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any
from urllib.parse import unquote

HIDDEN = "<redacted>"
"""What a credential shows instead of itself (a `repr`, a message)."""

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")
"""`scheme://user:password@`: the user information of a URL (RFC 3986), up to its last `@`
before the host (a password with an unencoded `@` in it is still all removed)."""


def urls(text: str) -> str:
    """`text` with the user information of every URL in it removed:
    `https://user:token@host/repo` becomes `https://host/repo`."""
    return _USERINFO.sub(r"\g<scheme>", text) if "@" in text else text


def userinfo(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without user information, the user name, the password); None where absent.
    Both are percent-decoded, as git decodes them."""
    match = _USERINFO.match(url)
    if match is None:
        return url, None, None
    info = url[match.end("scheme") : match.end() - 1]
    user, sep, password = info.partition(":")
    return (
        url[: match.end("scheme")] + url[match.end() :],
        unquote(user) if user else None,
        unquote(password) if sep else None,
    )


def scrub(value: Any) -> Any:
    """`value` with URL credentials removed from every string in it, however nested."""
    if isinstance(value, str):
        return urls(value)
    if isinstance(value, Mapping):
        return {key: scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub(item) for item in value)
    return value


def scrub_event(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """structlog processor: URL credentials removed from every field of an event, the
    rendered traceback included. Place it after the traceback renderer."""
    return {key: scrub(value) for key, value in event.items()}
