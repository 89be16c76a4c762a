"""The git-backed policy store of the REST API: reads serve the tip of the source branch, and
each write is one validated commit pushed compare-and-swap.

Reads fetch at most once per `fetch_interval` (a second) and parse the policy files once per
tip (`snapshot`); while another thread fetches, a read serves the tip it has. A write, one at
a time in this process:

1. fetches the tip (503 SOURCE_UNAVAILABLE when the remote cannot be reached);
2. changes one document in memory (`policyfile`): 404, 409 when a created name exists, 412
   when `If-Match` is stale;
3. validates the whole source with the change, as `dro validate` does (`validate.check`): any
   error is 422 VALIDATION_FAILED with every problem's file, line and pointer;
4. commits the tip's tree with only that file changed, the caller as author and dro as
   committer, the request in the trailers (`trail`);
5. pushes it: to the source branch as a fast-forward only (mode `direct`), or to a new branch
   `dro-api/<resource>/<name>/<sha>` (mode `branch`). When another writer moved the branch,
   the push is refused: the write starts again at 1 on the new tip, at most `MAX_ATTEMPTS`
   times, then 409 POLICY_CONFLICT.

Nothing is pushed on any error, and what is pushed is exactly the tree that was validated.

Called by `service.api.routes`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reconciler import load, settings, validate
from reconciler.domain.credentials import Credentials
from reconciler.errors import GitError, Severity
from reconciler.git import gitrepo, policyrepo
from reconciler.service.api import bodies, model, policyfile, snapshot, trail
from reconciler.validate import guard

Mode = Literal["direct", "branch"]
MODES: tuple[str, ...] = ("direct", "branch")
MAX_ATTEMPTS = 5
FETCH_INTERVAL = 1.0
"""Seconds a read may serve the tip it fetched before it fetches again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Change:
    """What a write does at one tip: the file's new bytes (None removes it), and the policy
    as it will be served (None after a delete)."""

    path: str
    data: bytes | None
    document: Mapping[str, Any] | None
    verb: str


class GitPolicyStore:
    """`model.PolicyStore` over a git remote: see the module's docstring."""

    def __init__(
        self,
        remote_url: str,
        branch: str,
        work_dir: Path,
        *,
        mode: Mode = "direct",
        credentials: Credentials | None = None,
        clock: Callable[[], float] = time.time,
        committer: tuple[str, str] = ("dro", "dro@localhost"),
        ceiling: guard.Guard = guard.BUILTIN,
        fetch_interval: float = FETCH_INTERVAL,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be direct or branch, got {mode!r}")
        self.remote_url = remote_url
        self.branch = branch
        self.mode = mode
        self._work_dir = work_dir
        self._credentials = gitrepo.url_credentials(remote_url, credentials)
        self._clock = clock
        self._committer = committer
        self._ceiling = ceiling
        self._fetch_interval = fetch_interval
        self._git = threading.RLock()
        """Held for every git operation: one thread at a time uses the cache."""
        self._repo: gitrepo.Repository | None = None
        self._fetched_at: float | None = None
        self._failure: model.ApiError | None = None
        self._tip: snapshot.Tip | None = None
        self._parsed = snapshot.Parsed()

    @classmethod
    def from_settings(cls, where: settings.Settings, *, mode: str | None = None) -> GitPolicyStore:
        """The store of `dro run`: `--repo`, `--ref`, `--git-credentials-file` (else
        `DRO_GIT_*`), `--guard`, dro's commit identity, and `--api-write-mode` (or `mode`);
        its cache lives under `<state-dir>/api`."""
        if where.repo is None:
            raise ValueError("the REST API needs --repo (a git repository to write to)")
        chosen = mode or where.api_write_mode
        if chosen not in MODES:
            raise ValueError(f"--api-write-mode must be direct or branch, got {chosen!r}")
        credentials = load.credentials_from(
            where.credentials_file, otherwise=where.environment_credentials
        )
        return cls(
            where.repo,
            where.ref,
            where.state_dir / "api",
            mode="branch" if chosen == "branch" else "direct",
            credentials=credentials,
            committer=(where.author_name, where.author_email),
            ceiling=where.guard,
        )

    # reads

    def list(self, resource: str) -> list[model.Policy]:
        """Every policy of one resource at the tip, sorted by name (then file)."""
        bodies.kind_of(resource)
        return list(self._read().of(resource))

    def get(self, resource: str, name: str) -> model.Policy:
        """One policy at the tip, or 404 POLICY_NOT_FOUND."""
        bodies.kind_of(resource)
        found = self._read().find(resource, name)
        if not found:
            raise _not_found(resource, name)
        return found[0]

    def _read(self) -> snapshot.Tip:
        """The tip to serve: fetched again when older than the interval. A thread that finds
        another one fetching serves the tip it has rather than wait."""
        if not self._stale():
            return self._current()
        tip = self._tip
        if tip is not None and not self._git.acquire(blocking=False):
            return tip
        if tip is None:
            self._git.acquire()
        try:
            if self._stale():
                self._refresh()
            return self._current()
        finally:
            self._git.release()

    def _stale(self) -> bool:
        fetched = self._fetched_at
        return fetched is None or self._clock() - fetched >= self._fetch_interval

    def _current(self) -> snapshot.Tip:
        """The tip last fetched, or the error of that fetch (for the rest of the interval, so
        that an unreachable remote is not asked once per read)."""
        failure, tip = self._failure, self._tip
        if failure is not None:
            raise model.ApiError(failure.status, failure.code, failure.message, failure.details)
        assert tip is not None
        return tip

    def _refresh(self) -> None:
        """Fetch and parse the tip (under `_git`)."""
        try:
            self._remember(self._snapshot(self._fetch()))
        except model.ApiError as error:
            self._failure = error
            self._fetched_at = self._clock()
            raise

    def _remember(self, tip: snapshot.Tip) -> None:
        """Serve `tip` until the interval has passed (the tip first, then the time, so that a
        reader that sees the time sees the tip)."""
        self._tip = tip
        self._failure = None
        self._fetched_at = self._clock()

    def _fetch(self) -> gitrepo.Commit:
        """The source branch's tip, fetched now; 503 SOURCE_UNAVAILABLE when it cannot be."""
        where = gitrepo.redact(self.remote_url)
        try:
            if self._repo is None:
                self._repo = gitrepo.open_cache(self.remote_url, self._work_dir)
            gitrepo.fetch(self._repo, self._credentials)
        except GitError as error:
            raise _unavailable(f"the source repository {where} cannot be reached", error) from None
        tip = gitrepo.remote_tip(self._repo, self.branch)
        if tip is None:
            raise model.ApiError(
                503,
                model.SOURCE_UNAVAILABLE,
                f"the source repository {where} has no branch {self.branch}",
            )
        return tip

    def _snapshot(self, commit: gitrepo.Commit) -> snapshot.Tip:
        sha = gitrepo.sha(commit.id)
        if self._tip is not None and self._tip.sha == sha:
            return self._tip
        assert self._repo is not None
        repo = self._repo
        ids = policyrepo.ids_under(repo, commit, policyfile.FOLDER)
        return self._parsed.tip(sha, ids, lambda blob: gitrepo.blob_data(repo, blob))

    # writes

    def create(self, resource: str, body: Mapping[str, Any], caller: model.Caller) -> model.Written:
        """A new policy: 400, 409 when the name exists, 422, or the commit."""
        document = bodies.document_from_body(resource, body)
        kind, name = model.KINDS[resource], document["metadata"]["name"]

        def change(tip: snapshot.Tip) -> _Change:
            if tip.find(resource, name):
                raise model.ApiError(
                    409,
                    model.POLICY_CONFLICT,
                    f"{kind} {name} already exists",
                    {"policyName": name},
                )
            path = policyfile.new_path(tip.paths, kind, name)
            data = policyfile.document_text(document).encode("utf-8")
            return _Change(path=path, data=data, document=document, verb="create")

        return self._write(resource, name, "POST", trail.path_of(resource), caller, change)

    def patch(
        self,
        resource: str,
        name: str,
        merge_patch: Mapping[str, Any],
        caller: model.Caller,
        if_match: str | None,
    ) -> model.Written:
        """An RFC 7396 merge patch of one policy: 400, 404, 412, 422, or the commit."""
        bodies.kind_of(resource)
        if not isinstance(merge_patch, Mapping):
            raise bodies.invalid("a merge patch must be a JSON object")

        def change(tip: snapshot.Tip) -> _Change | None:
            found = self._one(tip, resource, name, if_match)
            document = bodies.patched(resource, found.document, merge_patch)
            if document == found.document:
                return None
            data = policyfile.replaced(tip.data[found.path], found.number, document)
            return _Change(path=found.path, data=data, document=document, verb="patch")

        path = f"{trail.path_of(resource)}/{name}"
        return self._write(resource, name, "PATCH", path, caller, change)

    def delete(
        self, resource: str, name: str, caller: model.Caller, if_match: str | None
    ) -> model.Written:
        """One policy removed: 404, 412, 422 (another file still needs it), or the commit."""
        bodies.kind_of(resource)

        def change(tip: snapshot.Tip) -> _Change:
            found = self._one(tip, resource, name, if_match)
            data = policyfile.removed(tip.data[found.path], found.number)
            return _Change(path=found.path, data=data, document=None, verb="delete")

        path = f"{trail.path_of(resource)}/{name}"
        return self._write(resource, name, "DELETE", path, caller, change)

    def _one(
        self, tip: snapshot.Tip, resource: str, name: str, if_match: str | None
    ) -> snapshot.Found:
        """The one policy a PATCH or DELETE changes: 404, 409 when two files define it, 412
        when `If-Match` does not match its file's blob id."""
        found = tip.located(resource, name)
        if not found:
            raise _not_found(resource, name)
        if len(found) > 1:
            raise model.ApiError(
                409,
                model.POLICY_CONFLICT,
                f"{model.KINDS[resource]} {name} is defined more than once "
                f"({', '.join(f.path for f in found)}); change it in git",
                {"policyName": name},
            )
        if if_match is not None and not matches(if_match, found[0].etag):
            raise model.ApiError(
                412,
                model.PRECONDITION_FAILED,
                f"If-Match {if_match.strip()} does not match the policy's ETag",
                {"policyName": name, "etag": found[0].etag},
            )
        return found[0]

    def _write(
        self,
        resource: str,
        name: str,
        method: str,
        path: str,
        caller: model.Caller,
        change: Callable[[snapshot.Tip], _Change | None],
    ) -> model.Written:
        with self._git:
            for _ in range(MAX_ATTEMPTS):
                commit = self._fetch()
                tip = self._snapshot(commit)
                self._remember(tip)
                planned = change(tip)
                if planned is None:  # the patch changes nothing: nothing to commit
                    policy = tip.find(resource, name)[0]
                    return model.Written(sha=tip.sha, branch=self.branch, policy=policy)
                self._validate(commit, planned)
                written = self._commit_and_push(
                    commit, resource, name, method, path, caller, planned
                )
                if written is not None:
                    self._fetched_at = None  # the next read fetches, and sees this write
                    return written
        raise model.ApiError(
            409,
            model.POLICY_CONFLICT,
            f"the branch kept moving: {MAX_ATTEMPTS} attempts to push {self.branch} were "
            "refused because other commits landed first; retry",
            {"policyName": name},
        )

    def _validate(self, commit: gitrepo.Commit, planned: _Change) -> None:
        """The whole source with the change, checked as `dro validate` checks it."""
        assert self._repo is not None
        wanted = load.SOURCE_FILES + tuple(f.rstrip("/") for f in load.SOURCE_FOLDERS)
        files, links = gitrepo.read_tree(self._repo, commit, wanted)
        if planned.data is None:
            files.pop(planned.path, None)
        else:
            files[planned.path] = planned.data
        source = load.source_of(files, links, commit_time=gitrepo.commit_info(commit)[1])
        checked = validate.check(source, ceiling=self._ceiling)
        errors = [p for p in checked.problems if p.severity is Severity.ERROR]
        if errors:
            problems = [
                model.Problem(file=p.path, line=p.line, pointer=p.pointer, message=p.message)
                for p in errors
            ]
            raise model.ApiError(
                422,
                model.VALIDATION_FAILED,
                f"the change fails validation: {len(problems)} problem(s), the first "
                f"{problems[0].file}:{problems[0].line}: {problems[0].message}",
                {"problems": [p.as_json() for p in problems]},
            )

    def _commit_and_push(
        self,
        commit: gitrepo.Commit,
        resource: str,
        name: str,
        method: str,
        path: str,
        caller: model.Caller,
        planned: _Change,
    ) -> model.Written | None:
        """Commit the change on the tip and push it; None when the push was refused because
        the branch moved (the caller starts again on the new tip)."""
        repo = self._repo
        assert repo is not None
        tree = policyrepo.edit_tree(repo, gitrepo.tree_of(commit), {planned.path: planned.data})
        kind = model.KINDS[resource]
        message = trail.message(planned.verb, kind, name, caller.subject, f"{method} {path}")
        oid = gitrepo.commit(
            repo,
            branch=None,
            tree=tree,
            parent=commit,
            message=message,
            author=trail.signature(caller),
            committer=self._committer,
            time=int(self._clock()),
        )
        sha = gitrepo.sha(oid)
        target = self.branch
        if self.mode == "branch":
            target = f"{trail.REVIEW_PREFIX}{resource}/{name}/{sha[:12]}"
        gitrepo.set_branch(repo, target, oid)
        try:
            gitrepo.push(repo, target, self._credentials)
        except gitrepo.NonFastForward:
            if self.mode == "direct":
                return None
            raise _unavailable(f"the push of {target} was refused", None) from None
        except GitError as error:
            where = gitrepo.redact(self.remote_url)
            raise _unavailable(f"the push to {where} failed", error) from None
        finally:
            if self.mode == "branch":
                gitrepo.delete_branch(repo, target)
        policy = None
        if planned.document is not None and planned.data is not None:
            policy = model.Policy(
                resource=resource,
                name=name,
                document=bodies.body_of(resource, planned.document),
                etag=snapshot.blob_id(planned.data),
                path=planned.path,
            )
        return model.Written(sha=sha, branch=target, policy=policy)


def matches(if_match: str, etag: str) -> bool:
    """RFC 9110 strong comparison of an `If-Match` value (a list of entity tags, quotes
    optional) with a policy's ETag: `*` matches any existing policy, `W/` never matches."""
    for given in if_match.split(","):
        tag = given.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            continue
        if tag.strip('"') == etag:
            return True
    return False


def _not_found(resource: str, name: str) -> model.ApiError:
    return model.ApiError(
        404,
        model.POLICY_NOT_FOUND,
        f"no {model.KINDS[resource]} {name} at the tip of the source branch",
        {"policyName": name},
    )


def _unavailable(message: str, error: Exception | None) -> model.ApiError:
    """503 SOURCE_UNAVAILABLE; the reason's URLs are redacted (no user information)."""
    reason = f": {gitrepo.redact(str(error))}" if error is not None else ""
    return model.ApiError(503, model.SOURCE_UNAVAILABLE, message + reason)
