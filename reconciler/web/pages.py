"""The web view's routes: server-rendered pages of the output branch, on `dro run`'s server.

- `GET /`: the fleet: each cluster's phase, reachability and water level over time (per
  resource, its limit and forecast drawn), filtered by `q`, paged.
- `GET /clusters/{name}`: one cluster: every resource's chart and the workloads placed there.
- `GET /workloads`: every workload, searched and filtered by namespace, label, policy, cluster.
- `GET /workloads/{namespace}/{kind}/{name}`: one workload (`_cluster` for a cluster-scoped
  one; `Kind.group` outside core and apps): its placement, the decision's reasons, each
  cluster's filter verdict and scores, moves and rollout in flight.
- `GET /files/{path}`: one file of the branch's tip (a decision, a rendered manifest), a
  Secret's values masked as on a change's diff.
- `GET /changes`: the branch's last commits with their trigger; `GET /changes/{sha}`: the diff
  of one against its parent.
- `GET /login`, `POST /login`, `POST /logout`: the token cookie (`access`).
- `GET /static/dro.css`, `GET /static/favicon.svg`: the style sheet and the icon.

Every page is HTML made by Jinja2 templates shipped in the package (autoescaped), works without
JavaScript (there is none), and is sent with a Content Security Policy that lets nothing load
from another origin. Data comes from `branchdata.Reader`, which re-reads only when the branch
moves; rendering runs in a worker thread.

Called by `cli.run`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from reconciler.service.api import auth
from reconciler.web import access, charts, views
from reconciler.web.branchdata import Reader

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'none'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
LOGIN_BODY_LIMIT = 16 * 1024
SHA = re.compile(r"^[0-9a-f]{40}$")


def environment() -> jinja2.Environment:
    """The templates of `reconciler/web/templates`, autoescaped."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reconciler.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["percent"] = charts.percent
    return env


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch)) if epoch else "—"


STATIC = {"dro.css": "text/css", "favicon.svg": "image/svg+xml"}
"""The files of `static/` served at /static/<name>, and their media types."""


def static(name: str) -> bytes:
    """A file of `static/` (the style sheet, the icon)."""
    return resources.files("reconciler.web").joinpath(f"static/{name}").read_bytes()


Endpoint = Callable[[Request], Awaitable[Response]]


class Web:
    """The pages of one output branch, behind one gate."""

    def __init__(self, reader: Reader, gate: access.Gate, *, secure_cookie: bool = False) -> None:
        self.reader = reader
        self.gate = gate
        self.secure_cookie = secure_cookie
        self.env = environment()
        self.static = {name: static(name) for name in STATIC}

    def routes(self) -> list[BaseRoute]:
        """The Starlette routes of the view."""
        return [
            Route("/", self._guarded(self.fleet), methods=["GET"]),
            Route("/clusters/{name}", self._guarded(self.cluster), methods=["GET"]),
            Route("/workloads", self._guarded(self.workloads), methods=["GET"]),
            Route(
                "/workloads/{namespace}/{kind}/{name}",
                self._guarded(self.workload),
                methods=["GET"],
            ),
            Route("/files/{path:path}", self._guarded(self.file), methods=["GET"]),
            Route("/changes", self._guarded(self.changes), methods=["GET"]),
            Route("/changes/{sha}", self._guarded(self.change), methods=["GET"]),
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/static/{name}", self.style, methods=["GET"]),
        ]

    def html(self, template: str, status: int = 200, **context: Any) -> Response:
        """A page from a template, with the view's headers."""
        context.setdefault("section", "")
        context.setdefault("login", self.gate.enabled and template != "login.html")
        body = self.env.get_template(template).render(**context)
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    def missing(self, what: str) -> Response:
        """404 as a page."""
        return self.html("missing.html", 404, title="Not found", what=what)

    def not_found(self, request: Request) -> Response | None:
        """A page for a browser's GET of a path nothing serves (it asks for HTML); None for
        any other request, and under the REST API's paths, which answer as the API does."""
        path = request.url.path
        if request.method not in ("GET", "HEAD") or path.startswith(("/api/", "/apis/")):
            return None
        if "text/html" not in request.headers.get("accept", ""):
            return None
        return self.missing(f"Nothing is served at {path}")

    def _guarded(self, page: Callable[[Request], Response]) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            refused = self.gate.check(request)
            if refused is not None:
                headers = {**HEADERS, "WWW-Authenticate": refused.challenge}
                body = self.env.get_template("login.html").render(
                    login=False, title="Sign in", section="", **_said(refused)
                )
                return HTMLResponse(body, status_code=refused.status, headers=headers)
            return await run_in_threadpool(page, request)

        return endpoint

    def fleet(self, request: Request) -> Response:
        """GET /."""
        snapshot = self.reader.snapshot()
        query = views.clean(request.query_params)
        return self.html(
            "fleet.html", title="Fleet", snapshot=snapshot, **views.fleet(snapshot, query)
        )

    def cluster(self, request: Request) -> Response:
        """GET /clusters/{name}."""
        snapshot = self.reader.snapshot()
        name = request.path_params["name"]
        found = snapshot.cluster(name)
        if found is None:
            return self.missing(f"no cluster {name} on the output branch")
        query = views.clean(request.query_params)
        return self.html(
            "cluster.html",
            title=f"Cluster {name}",
            snapshot=snapshot,
            **views.cluster(snapshot, found, query),
        )

    def workloads(self, request: Request) -> Response:
        """GET /workloads."""
        snapshot = self.reader.snapshot()
        query = views.clean(request.query_params)
        return self.html(
            "workloads.html",
            title="Workloads",
            snapshot=snapshot,
            **views.workloads(snapshot, query),
        )

    def workload(self, request: Request) -> Response:
        """GET /workloads/{namespace}/{kind}/{name}."""
        snapshot = self.reader.snapshot()
        params = request.path_params
        key = f"{params['namespace']}/{params['kind']}/{params['name']}"
        found = snapshot.by_key.get(key)
        if found is None:
            close = views.same_workload(
                snapshot, params["namespace"], params["kind"], params["name"]
            )
            if close is not None:  # `shop/deployment/frontend`, as `dro explain` takes it
                return RedirectResponse(views.workload_href(close), 308, headers=HEADERS)
            return self.missing(f"no workload {key} on the output branch")
        diagnosis = self.reader.diagnosis(found.path)
        query = views.clean(request.query_params)
        return self.html(
            "workload.html",
            title=str(found.key),
            snapshot=snapshot,
            **views.workload(found, diagnosis, query),
        )

    def file(self, request: Request) -> Response:
        """GET /files/{path}."""
        path = unquote(request.path_params["path"])
        data = self.reader.file(path)
        if data is None:
            return self.missing(f"no file {path} on the output branch")
        return self.html(
            "file.html",
            title=path,
            path=path,
            text=views.file_text(path, data),
            snapshot=self.reader.snapshot(),
        )

    def changes(self, request: Request) -> Response:
        """GET /changes."""
        query = views.clean(request.query_params)
        number = int(query["page"]) if query.get("page", "").isdigit() else 1
        number = max(1, number)
        commits, more = self.reader.commits((number - 1) * views.PAGE_SIZE, views.PAGE_SIZE)
        return self.html(
            "changes.html",
            title="Changes",
            commits=commits,
            number=number,
            more=more,
            snapshot=self.reader.snapshot(),
        )

    def change(self, request: Request) -> Response:
        """GET /changes/{sha}."""
        sha = request.path_params["sha"]
        found = self.reader.change(sha) if SHA.match(sha) else None
        if found is None:
            return self.missing(f"no commit {sha} on the output branch")
        commit, changed = found
        query = views.clean(request.query_params)
        page = views.paged(changed, query, size=views.FILES_PER_PAGE)
        return self.html(
            "change.html",
            title=f"Change {sha[:12]}",
            commit=commit,
            page=page,
            diffs=[views.diff_lines(*f) for f in self.reader.blobs(list(page.rows))],
            snapshot=self.reader.snapshot(),
        )

    async def login_form(self, _request: Request) -> Response:
        """GET /login."""
        return self.html("login.html", title="Sign in", message="")

    async def login(self, request: Request) -> Response:
        """POST /login: verify the token, then set the cookie and go to the fleet."""
        body = await request.body()
        form = parse_qs(body[:LOGIN_BODY_LIMIT].decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0].strip()
        refused = self.gate.check_token(f"Bearer {token}" if token else None)
        if refused is not None:
            return self.html("login.html", refused.status, title="Sign in", **_said(refused))
        answer = RedirectResponse("/", status_code=303, headers=HEADERS)
        if self.gate.enabled:
            answer.set_cookie(
                access.COOKIE,
                token,
                max_age=access.COOKIE_SECONDS,
                path="/",
                httponly=True,
                samesite="strict",
                secure=self.secure_cookie,
            )
        return answer

    async def logout(self, _request: Request) -> Response:
        """POST /logout: forget the cookie."""
        answer = RedirectResponse("/login", status_code=303, headers=HEADERS)
        answer.delete_cookie(access.COOKIE, path="/", httponly=True, samesite="strict")
        return answer

    async def style(self, request: Request) -> Response:
        """GET /static/{name}: the style sheet and the icon."""
        name = request.path_params["name"]
        if name not in self.static:
            return self.missing(f"no file {name} here")
        headers = {**HEADERS, "Cache-Control": "max-age=3600"}
        return Response(self.static[name], media_type=STATIC[name], headers=headers)


def _said(refused: access.Refused) -> Mapping[str, Any]:
    return {"message": refused.message}


def build(
    reader: Reader, authenticator: auth.Authenticator | None, *, tls: bool
) -> list[BaseRoute]:
    """The view's routes for `dro run` (`view` for its page for unknown paths as well)."""
    return view(reader, authenticator, tls=tls).routes()


def view(reader: Reader, authenticator: auth.Authenticator | None, *, tls: bool) -> Web:
    """The view of `dro run`: its routes, and its page for a path nothing serves."""
    return Web(reader, access.Gate(authenticator), secure_cookie=tls)
