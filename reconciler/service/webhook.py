"""Webhook: check a GitHub or GitLab push event and say whether it should start a pass.

GitHub signs the body with HMAC-SHA256 (`X-Hub-Signature-256: sha256=<hex>`); GitLab sends
the shared secret itself (`X-Gitlab-Token`). Both are compared in constant time against the
secret of `--webhook-secret-file`. A push starts a pass only when it is to the source ref: a
push to any other branch, dro's own output branch included, is acknowledged and ignored, so
dro's commits never start a pass. This module is pure; `server` calls it.

`check_headers` runs before the body is read: a request with neither header, or a wrong GitLab
token, is refused without reading its body. Each event carries its delivery id (GitHub's
`X-GitHub-Delivery`; GitLab's `Idempotency-Key`, which its retries keep, else
`X-Gitlab-Webhook-UUID`), so that a replay can be recognised. GitLab's `X-Gitlab-Event-UUID`
is not one: GitLab gives every webhook that a webhook caused the same value, so a bot's push in
answer to a push would pass for a replay.

Called by `service.server`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass

GITHUB_SIGNATURE = "x-hub-signature-256"
GITHUB_EVENT = "x-github-event"
GITLAB_TOKEN = "x-gitlab-token"
GITLAB_EVENT = "x-gitlab-event"
PUSH_EVENTS = {"push", "Push Hook", "Tag Push Hook"}
DELIVERY_HEADERS = {
    "github": ("x-github-delivery",),
    "gitlab": ("idempotency-key", "x-gitlab-webhook-uuid"),
}


class Rejected(Exception):
    """The request is not a genuine event: `status` is the HTTP answer (401 or 400)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """A verified event, and whether it starts a pass."""

    provider: str
    kind: str
    ref: str | None = None
    after: str | None = None
    pusher: str | None = None
    starts_pass: bool = False
    why: str = ""
    delivery: str | None = None
    """The sender's name for this delivery, kept across its retries; None when not sent."""


def check_headers(headers: Mapping[str, str], secret: bytes) -> None:
    """Raise `Rejected` when the headers alone show the request is not genuine, before its
    body is read: no signature or token at all, or a wrong GitLab token."""
    if GITHUB_SIGNATURE in headers:
        return
    if GITLAB_TOKEN in headers:
        if not hmac.compare_digest(secret, headers[GITLAB_TOKEN].encode()):
            raise Rejected(401, "the X-Gitlab-Token does not match")
        return
    raise Rejected(401, "neither X-Hub-Signature-256 nor X-Gitlab-Token is present")


def verify(headers: Mapping[str, str], body: bytes, secret: bytes, source_ref: str) -> Event:
    """The event in a request whose `headers` have lower-case names; raises `Rejected` when
    it is not signed by `secret`. `source_ref` is the branch (or tag) dro reads."""
    if GITHUB_SIGNATURE in headers:
        expected = github_signature(secret, body)
        if not hmac.compare_digest(expected.encode(), headers[GITHUB_SIGNATURE].encode()):
            raise Rejected(401, "the X-Hub-Signature-256 signature does not match")
        return _event("github", headers, body, source_ref)
    check_headers(headers, secret)
    return _event("gitlab", headers, body, source_ref)


def _delivery(provider: str, headers: Mapping[str, str]) -> str | None:
    for name in DELIVERY_HEADERS[provider]:
        value = headers.get(name, "").strip()
        if value:
            return value
    return None


def _event(provider: str, headers: Mapping[str, str], body: bytes, source_ref: str) -> Event:
    kind = headers.get(GITHUB_EVENT if provider == "github" else GITLAB_EVENT, "")
    delivery = _delivery(provider, headers)
    if kind not in PUSH_EVENTS:
        why = f"{kind or 'an unnamed'} event: ignored"
        return Event(provider=provider, kind=kind, delivery=delivery, why=why)
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Rejected(400, f"the push event is not JSON: {error}") from error
    if not isinstance(payload, dict):
        raise Rejected(400, "the push event is not a JSON object")
    ref = payload.get("ref") if isinstance(payload.get("ref"), str) else None
    pusher = _pusher(provider, payload)
    wanted = ref in (f"refs/heads/{source_ref}", f"refs/tags/{source_ref}", source_ref)
    return Event(
        provider=provider,
        kind=kind,
        ref=ref,
        after=payload.get("after") if isinstance(payload.get("after"), str) else None,
        pusher=pusher,
        starts_pass=wanted,
        delivery=delivery,
        why="a push to the source ref" if wanted else f"a push to {ref}: not {source_ref}",
    )


def _pusher(provider: str, payload: Mapping[str, object]) -> str | None:
    if provider == "github":
        pusher = payload.get("pusher")
        name = pusher.get("name") if isinstance(pusher, Mapping) else None
    else:
        name = payload.get("user_username") or payload.get("user_name")
    return name if isinstance(name, str) else None


def github_signature(secret: bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value GitHub sends for `body` (tests and tools use it)."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
