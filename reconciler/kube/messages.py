"""How a failed request to a cluster is told: the network's reason in a few words, the API
server's own message without a Secret's values, and the object it was about.

Called by `kube.client`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from reconciler import redact

_ERRNO = re.compile(r"\[Errno -?[0-9]+\] ([^\"')(]+)")


def network_reason(error: BaseException) -> str:
    """urllib3's retry error in a few words: `127.0.0.1:6443: Connection refused`, not the
    three nested reprs its own message holds."""
    reason = getattr(error, "reason", None)
    cause = reason if isinstance(reason, BaseException) else error
    pool: Any = getattr(error, "pool", None) or getattr(cause, "pool", None)
    host, port = getattr(pool, "host", None), getattr(pool, "port", None)
    where = f"{host}:{port}: " if host else ""
    found = _ERRNO.search(str(cause))
    if found:
        return where + found.group(1).strip()
    if isinstance(cause, OSError) and cause.strerror:
        return where + cause.strerror
    return redact.urls(str(cause))


def server_message(error: Any, obj: Mapping[str, Any]) -> str:
    """The `message` of the API's Status body, one line, without any value of a Secret."""
    try:
        body = json.loads(getattr(error, "body", None) or "{}")
    except (TypeError, ValueError):
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str):
        return ""
    message = " ".join(message.split())[:500]
    if obj.get("kind") == "Secret":
        for field in ("data", "stringData"):
            for value in (obj.get(field) or {}).values():
                if isinstance(value, str) and value:
                    message = message.replace(value, "(hidden)")
    return message


def describe(obj: Mapping[str, Any]) -> str:
    """`Deployment shop/web`: the kind and the namespaced name of what a request was about."""
    metadata = obj.get("metadata") or {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    where = f"{namespace}/{name}" if namespace and name else (name or namespace or "")
    return f"{obj.get('kind', '')} {where}".strip()
