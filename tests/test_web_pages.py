"""The web view's pages, in process, over an output branch that `dro reconcile --once` wrote.

The example fleet is reconciled twice (a cluster's allocation changes in between), so the
branch has two passes of history; what each page shows is checked against the branch's own
files and against `dro explain`. One test forges a label with `<script>` on the branch: it must
show as text.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pygit2
import pytest
import yaml
from conftest import GIT_ENV, SourceRepo, git, make_source_repo

from reconciler import cli
from reconciler.kube import quantity
from reconciler.web import branchdata, charts, pages, views
from tests.apiserve import Keys, authenticator, served
from tests.service import wait_for
from tests.test_history import passes as history_passes

BRANCH = "dro/rendered"
LATER = "2026-01-01T01:00:00Z"
"""The second source commit's time: a declared cluster's sample takes its commit's time."""
FRONTEND = "shop/Deployment.apps/frontend"


class Fleet:
    """The example fleet reconciled twice, and what its output branch holds."""

    def __init__(self, root: Path) -> None:
        self.repo = make_source_repo(root / "src")
        self.state = root / "state"
        self.reconcile()
        cluster = self.repo.work / "clusters" / "eu-west-1.yaml"
        cluster.write_text(cluster.read_text().replace('cpu: "96"', 'cpu: "160"'))
        an_hour_later = {"GIT_AUTHOR_DATE": LATER, "GIT_COMMITTER_DATE": LATER}
        git_env = {**os.environ, **GIT_ENV, **an_hour_later}
        for args in (["add", "--all"], ["commit", "-qm", "eu-west-1 runs hotter"]):
            subprocess.run(["git", *args], cwd=self.repo.work, env=git_env, check=True)
        git(self.repo.work, "push", "--quiet", "origin", "main")
        self.reconcile()

    def reconcile(self) -> None:
        """One pass of `dro reconcile --once` on the source's main."""
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(
                [
                    "reconcile",
                    "--once",
                    "--repo",
                    str(self.repo.bare),
                    "--state-dir",
                    str(self.state),
                ]
            )
        assert code == 0

    def show(self, path: str) -> Any:
        """A file of the output branch's tip, parsed (its seal line is a comment)."""
        return yaml.safe_load(git(self.repo.bare, "show", f"{BRANCH}:{path}"))

    def files(self, folder: str) -> list[str]:
        """The files under a folder of the output branch's tip."""
        listed = git(self.repo.bare, "ls-tree", "-r", "--name-only", BRANCH, folder)
        return listed.splitlines()

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision's `status`."""
        return [self.show(p)["status"] for p in self.files("decisions")]


def key_of(status: dict[str, Any]) -> str:
    """`ns/Kind[.group]/name` of a decision's resource, as `ResourceKey` prints it."""
    resource = status["resource"]
    group = resource["apiVersion"].rpartition("/")[0]
    kind = f"{resource['kind']}.{group}" if group else resource["kind"]
    return f"{resource.get('namespace') or '_cluster'}/{kind}/{resource['name']}"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return Fleet(tmp_path_factory.mktemp("webfleet"))


@contextlib.contextmanager
def client(repo: Path, gate: Any = None) -> Iterator[httpx.Client]:
    """The view's routes over the output branch of `repo`, served on loopback, and a client."""
    reader = branchdata.Reader(lambda: pygit2.Repository(str(repo)), BRANCH)
    with (
        served(pages.build(reader, gate, tls=False)) as server,
        httpx.Client(base_url=server.url, timeout=30) as session,
    ):
        yield session


@pytest.fixture
def web(fleet: Fleet) -> Iterator[httpx.Client]:
    with client(fleet.repo.bare) as served:
        yield served


def rows(page: str) -> list[str]:
    """The row headers (`<th scope="row">`) of a page's tables, as text."""
    return [
        html.unescape(re.sub(r"<[^>]+>", "", cell))
        for cell in re.findall(r'<th scope="row">(.*?)</th>', page, re.S)
    ]


def test_the_fleet_page_shows_each_cluster_with_its_levels_limit_and_phase(
    fleet: Fleet, web: httpx.Client
) -> None:
    answer = web.get("/")
    assert answer.status_code == 200
    assert "default-src 'self'" in answer.headers["content-security-policy"]
    page = answer.text
    names = sorted(Path(p).stem for p in fleet.files("status/clusters"))
    assert rows(page) == names
    limit = yaml.safe_load((fleet.repo.work / "dro.yaml").read_text())["spec"]["waterLevelLimit"]
    status = fleet.show("status/clusters/eu-west-1.yaml")["status"]
    # eu-west-1's cpu chart: two passes, its level now and the limit of dro.yaml
    said = f"cpu water level {charts.percent(status['waterLevel']['cpu'])}"
    said += f", limit {charts.percent(limit['cpu'])}, 2 passes"
    assert f'aria-label="{said}"' in page
    assert "<polyline" in page  # two points make a line
    assert '<a class="skip" href="#main">' in page
    assert '<main id="main"' in page
    assert "<caption>" in page
    assert '<th scope="col">Phase</th>' in page
    # nothing is loaded from elsewhere, and there is no script at all
    assert "<script" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)


def test_the_cluster_page_lists_what_is_placed_there(fleet: Fleet, web: httpx.Client) -> None:
    page = web.get("/clusters/eu-west-1").text
    placed = sorted(
        key_of(s) for s in fleet.decisions() if any(c["name"] == "eu-west-1" for c in s["clusters"])
    )
    resources = sorted(fleet.show("status/clusters/eu-west-1.yaml")["status"]["waterLevel"])
    assert rows(page) == resources + placed
    assert web.get("/clusters/nowhere").status_code == 404


def test_the_workload_page_shows_what_dro_explain_shows(fleet: Fleet, web: httpx.Client) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        args = ["--repo", str(fleet.repo.bare), "--state-dir", str(fleet.state), "-o", "json"]
        assert cli.main(["explain", "shop/Deployment/frontend", *args]) == 0
    explained = json.loads(out.getvalue())
    page = web.get(f"/workloads/{FRONTEND}").text
    for entry in explained["clusters"]:
        assert re.search(
            rf'<a href="/clusters/{entry["name"]}">{entry["name"]}</a></th><td class="num">'
            rf"{entry['replicas']}</td>",
            page,
        ), entry
    for verdict in explained["diagnosis"]["clusters"]:
        if not verdict["feasible"]:
            assert f"<td>{verdict['rejectedBy']}: {verdict['reason']}</td>" in html.unescape(page)
    # the scores are those the decision recorded when it placed the workload (the branch's)
    recorded = fleet.show("decisions/shop/deployment-frontend.yaml")["status"]["diagnosis"]
    for verdict in recorded["clusters"]:
        if verdict["feasible"]:
            assert f'<td class="num">{verdict["score"]:.1f}</td>' in page
    assert f"<dd>{recorded['trigger']}</dd>" in page
    assert 'href="/files/decisions/shop/deployment-frontend.yaml"' in page
    typed = web.get("/workloads/shop/deployment/frontend", follow_redirects=False)
    assert typed.status_code == 308
    assert typed.headers["location"] == f"/workloads/{FRONTEND}"
    assert web.get("/workloads/shop/Deployment/nothing").status_code == 404
    decision = web.get("/files/decisions/shop/deployment-frontend.yaml").text
    assert "kind: PlacementDecision" in decision


@pytest.mark.parametrize(
    ("query", "keep"),
    [
        ("namespace=shop", lambda s, labels: s["resource"].get("namespace") == "shop"),
        ("policy=shop-web", lambda s, labels: (s.get("policy") or {}).get("name") == "shop-web"),
        (
            "cluster=us-east-gpu",
            lambda s, labels: any(c["name"] == "us-east-gpu" for c in s["clusters"]),
        ),
        ("label=tier%3Dweb", lambda s, labels: labels.get("tier") == "web"),
        ("q=front", lambda s, labels: "front" in key_of(s).lower()),
    ],
)
def test_the_workloads_page_filters(fleet: Fleet, web: httpx.Client, query: str, keep: Any) -> None:
    expected = []
    for status in fleet.decisions():
        labels: dict[str, str] = {}
        if status["clusters"]:
            resource = status["resource"]
            key = key_of(status).split("/")
            stem = f"{key[1].lower().removesuffix('.apps')}-{resource['name']}"
            path = f"clusters/{status['clusters'][0]['name']}/{key[0]}/{stem}.yaml"
            labels = (fleet.show(path)["metadata"].get("labels")) or {}
        if keep(status, labels):
            expected.append(key_of(status))
    assert expected, query
    assert rows(web.get(f"/workloads?{query}").text) == sorted(expected, key=_sort_key)


def _sort_key(key: str) -> tuple[str, str, str]:
    namespace, kind, name = key.split("/")
    return (namespace if namespace != "_cluster" else "", kind.split(".")[0], name)


def test_long_lists_are_paged(
    fleet: Fleet, web: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = rows(web.get("/workloads").text)
    monkeypatch.setattr(views, "PAGE_SIZE", 10)
    second = web.get("/workloads?page=2").text
    assert rows(second) == every[10:20]
    assert 'href="?page=3" rel="next"' in second
    assert 'href="?page=1" rel="prev"' in second
    last = -(-len(every) // 10)
    assert rows(web.get("/workloads?page=999").text) == every[(last - 1) * 10 :]
    assert (
        rows(web.get("/workloads?namespace=shop&page=2").text)
        == [k for k in every if k.startswith("shop/")][10:20]
    )


def test_changes_list_the_passes_and_link_a_diff_served_here(
    fleet: Fleet, web: httpx.Client
) -> None:
    log = git(fleet.repo.bare, "log", "--format=%H %s", BRANCH).splitlines()
    page = web.get("/changes").text
    for line in log:
        sha, subject = line.split(" ", 1)
        assert f'<a href="/changes/{sha}">' in page
        assert f"<td>{subject}</td>" in html.unescape(page)
    newest = log[0].split(" ")[0]
    changed = git(fleet.repo.bare, "diff", "--name-only", f"{newest}~1", newest).splitlines()
    diff = web.get(f"/changes/{newest}").text
    shown = re.findall(r'<h3 id="diff-\d+">(.*?) <span', diff)
    assert shown == sorted(changed)[:20]
    assert "cpu: &#34;160&#34;" in diff or 'cpu: "160"' in html.unescape(diff)
    assert web.get("/changes/" + "0" * 40).status_code == 404
    assert web.get("/changes/not-a-sha").status_code == 404


def test_a_script_planted_on_the_branch_shows_as_text(fleet: Fleet, tmp_path: Path) -> None:
    bare = tmp_path / "forged.git"
    shutil.copytree(fleet.repo.bare, bare)
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", "--branch", BRANCH, str(bare), str(work))
    manifest = work / "clusters" / "ap-south-1" / "shop" / "deployment-frontend.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("    tier: web", '    tier: "<script>alert(1)</script>"'))
    git(work, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "forged <b>bold</b>")
    git(work, "push", "--quiet", "origin", BRANCH)
    with client(bare) as session:
        page = session.get(f"/workloads/{FRONTEND}").text
        changes = session.get("/changes").text
    assert "tier=&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in page
    assert "forged &lt;b&gt;bold&lt;/b&gt;" in changes


def test_a_snapshot_is_read_once_per_tip_and_again_in_the_background(
    fleet: Fleet, tmp_path: Path
) -> None:
    bare = tmp_path / "copy.git"
    shutil.copytree(fleet.repo.bare, bare)
    reader = branchdata.Reader(lambda: pygit2.Repository(str(bare)), BRANCH)
    first = reader.snapshot()
    assert reader.snapshot() is first
    assert first.tip == git(bare, "rev-parse", BRANCH)
    tree = git(bare, "rev-parse", f"{BRANCH}^{{tree}}")
    moved = git(bare, "commit-tree", tree, "-p", BRANCH, "-m", "a pass that changed nothing")
    git(bare, "update-ref", f"refs/heads/{BRANCH}", moved)
    assert reader.snapshot() is first  # served at once while the new tip is read
    wait_for(lambda: reader.snapshot().tip == moved, "the new tip read in the background")
    assert reader.snapshot().workloads == first.workloads
    empty = branchdata.Reader(lambda: pygit2.Repository(str(fleet.repo.bare)), "no/such")
    assert empty.snapshot().clusters == ()


def test_the_view_needs_a_token_with_read_scope_when_auth_is_on(
    fleet: Fleet, tmp_path: Path
) -> None:
    keys = Keys()
    with client(fleet.repo.bare, authenticator(keys, tmp_path)) as served:
        refused = served.get("/")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert '<form method="post" action="/login">' in refused.text
        assert "Sign out" not in refused.text
        assert served.get("/static/dro.css").status_code == 200
        writer = keys.token(scope="propagationpolicies:write")
        assert served.get("/", headers={"Authorization": f"Bearer {writer}"}).status_code == 403
        reader = keys.token(scope="fleet:read")
        shown = served.get("/", headers={"Authorization": f"Bearer {reader}"})
        assert shown.status_code == 200
        assert "eu-west-1" in shown.text

        wrong = served.post("/login", data={"token": writer + "x"})
        assert wrong.status_code == 401
        assert writer not in wrong.text
        assert "dro_token" not in wrong.headers.get("set-cookie", "")
        signed = served.post("/login", data={"token": reader}, follow_redirects=False)
        assert signed.status_code == 303
        assert signed.headers["location"] == "/"
        cookie = signed.headers["set-cookie"]
        assert "dro_token=" in cookie
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        signed_in = served.get("/workloads")
        assert signed_in.status_code == 200  # the cookie alone
        assert '<form method="post" action="/logout"' in signed_in.text
        served.post("/logout")
        served.cookies.clear()
        assert served.get("/workloads").status_code == 401


def test_charts_are_the_same_bytes_for_the_same_levels() -> None:
    points = [(0.0, 0.2), (60.0, 0.5), (120.0, 0.95)]
    drawn = charts.chart("cpu", points, limit=0.85, forecast=0.7)
    assert drawn == charts.chart("cpu", points, limit=0.85, forecast=0.7)
    assert 'stroke-dasharray="4 2"' in drawn  # the limit
    assert 'stroke-dasharray="1 2"' in drawn  # the forecast
    assert "cpu water level 95.0 %, limit 85.0 %, forecast 70.0 %, 3 passes" in drawn
    assert 'stroke-dasharray="1 2"' not in charts.chart("cpu", points, limit=0.85, forecast=None)


def test_a_secret_shows_its_keys_never_its_values(fleet: Fleet, web: httpx.Client) -> None:
    password = "example-only-not-a-real-password"  # example-repo/workloads/payments/ledger-db.yaml
    placed = [p for p in fleet.files("clusters") if p.endswith("secret-ledger-db-credentials.yaml")]
    assert placed
    assert password in git(fleet.repo.bare, "show", f"{BRANCH}:{placed[0]}")  # on the branch
    page = web.get(f"/files/{placed[0]}").text
    assert "POSTGRES_PASSWORD: " in page
    assert password not in page
    first = git(fleet.repo.bare, "rev-list", "--max-parents=0", BRANCH)
    everything = git(fleet.repo.bare, "ls-tree", "-r", "--name-only", first).splitlines()
    number = sorted(everything).index(placed[0]) // views.FILES_PER_PAGE + 1
    diff = web.get(f"/changes/{first}?page={number}").text
    assert f"{placed[0]} <span" in diff
    assert "POSTGRES_PASSWORD" in diff
    assert password not in diff


def test_the_forecast_is_drawn_where_prediction_is_on(
    source_repo: SourceRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus = [300, 320, 340, 360, 380]
    history_passes(source_repo, tmp_path, monkeypatch, cpus)
    status = yaml.safe_load(
        git(source_repo.bare, "show", f"{BRANCH}:status/clusters/us-east-1.yaml")
    )["status"]
    forecast = quantity.amount(status["forecast"]["level"]["cpu"])
    level = (forecast + quantity.amount(status["placed"]["cpu"])) / quantity.amount(
        status["capacity"]["cpu"]
    )
    with client(source_repo.bare) as session:
        page = session.get("/clusters/us-east-1").text
    said = f"cpu water level {charts.percent(status['waterLevel']['cpu'])}, limit "
    assert f"forecast {charts.percent(round(level, 4))}, {len(cpus)} passes" in page
    assert said in page
    assert 'stroke-dasharray="1 2"' in page  # the dotted forecast
