"""The API's durable audit trail: what its commits say, and reading them back from history.

Each write's commit has the subject `api: <verb> <Kind> <name>` and two trailers,
`Dro-Api-Caller: <the JWT's subject>` and `Dro-Api-Request: <METHOD> <path>`; its author is the
caller. `entries` lists those commits reachable from a branch, and those of the review
branches (`dro-api/…`) not merged into it, each with the branch it is on.

Called by `cli.audit` and `service.api.store`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reconciler.domain import DRO_API_VERSION, durations
from reconciler.domain.credentials import Credentials
from reconciler.errors import UsageError
from reconciler.git import gitrepo, policyrepo
from reconciler.load import sourcecheck
from reconciler.service.api import model

CALLER = "Dro-Api-Caller"
REQUEST = "Dro-Api-Request"
REVIEW_PREFIX = "dro-api/"
"""The branches a write in `branch` mode pushes: `dro-api/<resource>/<name>/<short sha>`."""
_SUBJECT = re.compile(r"api: (?P<verb>create|patch|delete) (?P<kind>[A-Za-z]+) (?P<name>\S+)")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f<>]")


def path_of(resource: str) -> str:
    """The draft's collection path of a resource."""
    if resource == "propagationpolicies":
        return "/api/v1/propagationpolicies"
    return f"/apis/{DRO_API_VERSION}/{resource}"


def _clean(text: str) -> str:
    """One line, without what a signature or a trailer cannot hold."""
    return " ".join(_UNSAFE.sub(" ", text).split())


def message(verb: str, kind: str, name: str, subject: str, request: str) -> str:
    """The commit message of one write: the subject line, then the two trailers."""
    return (
        f"api: {verb} {kind} {name}\n\n"
        f"{CALLER}: {_clean(subject) or '(unknown)'}\n{REQUEST}: {_clean(request)}\n"
    )


def signature(caller: model.Caller) -> tuple[str, str]:
    """The commit author for a caller: its name and email, else its subject."""
    name = _clean(caller.name) or _clean(caller.subject) or "api caller"
    email = _clean(caller.email).replace(" ", "") or "unknown@dro-api"
    return name, email


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One API write found in history."""

    time: int
    caller: str
    author: str
    request: str
    sha: str
    kind: str
    name: str
    verb: str
    branch: str

    def as_json(self) -> dict[str, object]:
        """The entry as `dro audit -o json` prints it."""
        return {
            "time": durations.rfc3339(self.time),
            "caller": self.caller,
            "author": self.author,
            "request": self.request,
            "sha": self.sha,
            "kind": self.kind,
            "name": self.name,
            "action": self.verb,
            "branch": self.branch,
        }


def trailers(text: str) -> dict[str, str]:
    """The `Key: value` trailers of a commit message's last paragraph."""
    found = {}
    for line in text.strip().split("\n\n")[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in (CALLER, REQUEST):
            found[key] = value.strip()
    return found


def _entry(commit: gitrepo.Commit, branch: str) -> Entry | None:
    sha, when, text, author = policyrepo.message_of(commit)
    said = trailers(text)
    subject = _SUBJECT.match(text.split("\n", 1)[0])
    if REQUEST not in said or subject is None:
        return None
    return Entry(
        time=when,
        caller=said.get(CALLER, ""),
        author=author,
        request=said[REQUEST],
        sha=sha,
        kind=subject["kind"],
        name=subject["name"],
        verb=subject["verb"],
        branch=branch,
    )


def entries(
    repo: gitrepo.Repository, branch: str, tip: gitrepo.Commit, since: float
) -> list[Entry]:
    """The API's commits on `branch` (from `tip`) and on unmerged review branches, committed
    at or after `since`, oldest first (a parent before its children within one second)."""
    found: dict[str, Entry] = {}
    for commit in reversed(list(policyrepo.history(repo, tip))):
        entry = _entry(commit, branch)
        if entry is not None and entry.time >= since:
            found[entry.sha] = entry
    for name, review in policyrepo.branches(repo, REVIEW_PREFIX).items():
        entry = _entry(review, name)
        if entry is not None and entry.sha not in found and entry.time >= since:
            found[entry.sha] = entry
    return sorted(found.values(), key=lambda e: e.time)


def read(
    location: str | None,
    ref: str,
    state_dir: Path,
    *,
    since: float,
    credentials: Credentials | None = None,
) -> list[Entry]:
    """The API's writes in the repository at `location` (a URL or path, fetched into a
    cache under `state_dir`), or in the one holding the current directory (None), on `ref`
    and its review branches, at or after `since`."""
    if location is None:
        try:
            repo = gitrepo.open_local(Path.cwd())
        except UsageError as error:
            raise UsageError(f"{error}; give --repo URL|PATH") from None
        return entries(repo, ref, gitrepo.resolve(repo, ref, local=True), since)
    sourcecheck.require_local_repo(location)
    with sourcecheck.removed_on_failure(gitrepo.cache_path(state_dir, location), state_dir):
        repo = gitrepo.open_cache(location, state_dir)
        gitrepo.fetch(repo, gitrepo.url_credentials(location, credentials))
        sourcecheck.require_commits(repo, location)
    return entries(repo, ref, gitrepo.resolve(repo, ref), since)


def since(text: str | None, now: float) -> float:
    """`--since`: an ISO date or time (`2026-11-24`, `2026-11-24T10:00:00Z`; UTC unless it
    says otherwise) or a duration back from `now` (`24h`, `7d`); None is the beginning."""
    if text is None:
        return float("-inf")
    try:
        return now - durations.seconds(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {text!r}: expected an ISO date or time (2026-11-24, "
            "2026-11-24T10:00:00Z) or a duration back from now (30m, 24h, 7d)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
