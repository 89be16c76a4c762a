"""The web view in a real browser: Debian's headless Chromium, driven by Playwright, against
`dro run` on the example fleet served by a real git daemon.

The tests click fleet → cluster → workload → decision and check what each page shows against
the output branch, walk the fleet page by keyboard alone, sign in with a token, and save a
screenshot of each page under test-artifacts/web/ (gitignored). Chromium comes from the
project's files (`make browser`, run by `make test`); without it these tests fail, saying so in
one line: they never skip.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import GIT_ENV, SourceRepo, git

from tests.apiserve import Keys

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # the chromium fixture fails, naming the fix
    sync_playwright = None
from tests.service import Service, wait_for

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""The flags that work on this kind of machine (no GPU, no network beyond loopback)."""
BRANCH = "dro/rendered"
SECRET = b"web-browser-webhook-secret"
LATER = "2026-01-01T01:00:00Z"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium (a fresh profile, which Playwright makes for each launch)."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: run `make browser` (apt-get install chromium "
            "chromium-driver)",
            pytrace=False,
        )
    if sync_playwright is None:
        pytest.fail(
            "the playwright package is missing: make install (the dev extra)", pytrace=False
        )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def start(tmp_path: Path, url: str, *extra: str) -> Service:
    """`dro run` on loopback over the served repo, passes on webhook only."""
    (tmp_path / "webhook").write_bytes(SECRET)
    return Service(
        tmp_path,
        "--repo",
        url,
        "--leader-elect=false",
        "--interval",
        "1h",
        "--state-dir",
        str(tmp_path / "state"),
        "--webhook-secret-file",
        str(tmp_path / "webhook"),
        *extra,
    )


def passes(repo: SourceRepo) -> int:
    """The commits on the output branch."""
    if repo.branch_sha(BRANCH) is None:
        return 0
    return len(git(repo.bare, "log", "--format=%H", BRANCH).splitlines())


def hotter(repo: SourceRepo, service: Service) -> None:
    """A second source commit, an hour later, raises eu-west-1's allocation; a push event
    starts the second pass. The water-level charts then have two points."""
    wait_for(lambda: passes(repo) == 1, "the first pass")
    cluster = repo.work / "clusters" / "eu-west-1.yaml"
    cluster.write_text(cluster.read_text().replace('cpu: "96"', 'cpu: "160"'))
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": LATER, "GIT_COMMITTER_DATE": LATER}
    for args in (["add", "--all"], ["commit", "-qm", "eu-west-1 runs hotter"]):
        subprocess.run(["git", *args], cwd=repo.work, env=env, check=True)
    git(repo.work, "push", "--quiet", "origin", "main")
    assert service.push_event(SECRET) == 202
    wait_for(lambda: passes(repo) == 2, "the second pass", timeout=60)


def shown(repo: SourceRepo, path: str) -> Any:
    """A file of the output branch's tip, parsed."""
    return yaml.safe_load(git(repo.bare, "show", f"{BRANCH}:{path}"))


def row_headers(page: Any) -> list[str]:
    """The text of every `<th scope="row">` on the page, in order."""
    return [t.strip() for t in page.locator('th[scope="row"]').all_inner_texts()]


def test_click_through_fleet_cluster_workload_decision_and_by_keyboard(
    served_repo: tuple[SourceRepo, str], tmp_path: Path, chromium: Any
) -> None:
    repo, url = served_repo
    service = start(tmp_path, url)
    try:
        hotter(repo, service)
        base = f"http://127.0.0.1:{service.port}"
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        complaints: list[str] = []
        page.on("console", lambda m: complaints.append(m.text) if m.type == "error" else None)
        click_through(page, base, repo)
        by_keyboard(page, base)
        assert requested
        assert all(u.startswith(base + "/") for u in requested), requested
        assert complaints == []
        mistyped(page, base)
        context.close()
    finally:
        service.close()


def mistyped(page: Any, base: str) -> None:
    """A mistyped address shows a page that leads back; a client that asks for JSON, and the
    REST API's paths, keep the API's answer."""
    answer = page.goto(base + "/clsuters/eu-west-1")
    assert answer is not None
    assert answer.status == 404
    assert "Nothing is served at /clsuters/eu-west-1" in page.inner_text("main")
    page.click("text=Back to the fleet")
    assert page.url == base + "/"
    plain = httpx.get(base + "/clsuters/eu-west-1", headers={"Accept": "application/json"})
    assert (plain.status_code, plain.json()["code"]) == (404, "NOT_FOUND")
    api = httpx.get(base + "/api/v1/nope", headers={"Accept": "text/html"})
    assert (api.status_code, api.json()["code"]) == (404, "NOT_FOUND")


def click_through(page: Any, base: str, repo: SourceRepo) -> None:
    """Fleet → eu-west-1 → shop/frontend → its decision file, each checked against the branch."""
    answer = page.goto(base + "/")
    assert answer is not None
    assert answer.status == 200
    assert page.title() == "Fleet · dro"
    listed = git(repo.bare, "ls-tree", "--name-only", f"{BRANCH}:status/clusters")
    clusters = sorted(Path(p).stem for p in listed.splitlines())
    assert row_headers(page) == clusters
    chart = page.get_by_role("img", name=re.compile(r"^cpu water level .* 2 passes$"))
    assert chart.count() == len(clusters)
    page.screenshot(path=str(ARTIFACTS / "fleet.png"), full_page=True)

    page.get_by_role("link", name="eu-west-1", exact=True).click()
    page.wait_for_url(base + "/clusters/eu-west-1")
    assert page.locator("h1").inner_text() == "Cluster eu-west-1"
    level = shown(repo, "status/clusters/eu-west-1.yaml")["status"]["waterLevel"]["cpu"]
    cpu = page.get_by_role("row", name=re.compile(r"^cpu ")).locator("td").first
    assert cpu.inner_text() == f"{level * 100:.1f} %"
    page.screenshot(path=str(ARTIFACTS / "cluster.png"), full_page=True)

    page.get_by_role("link", name="shop/Deployment.apps/frontend", exact=True).click()
    page.wait_for_url(base + "/workloads/shop/Deployment.apps/frontend")
    decision = shown(repo, "decisions/shop/deployment-frontend.yaml")["status"]
    placement = page.locator("table", has=page.locator("caption", has_text="Placement"))
    assert row_headers(placement) == [c["name"] for c in decision["clusters"]]
    trigger = page.locator("dt:has-text('Trigger') + dd").inner_text()
    assert trigger == decision["diagnosis"]["trigger"]
    names = sorted(c["name"] for c in decision["diagnosis"]["clusters"])
    assert sorted(row_headers(page.locator("table.verdicts"))) == names
    page.screenshot(path=str(ARTIFACTS / "workload.png"), full_page=True)

    page.get_by_role("link", name="decisions/shop/deployment-frontend.yaml").click()
    page.wait_for_url(base + "/files/decisions/shop/deployment-frontend.yaml")
    text = page.locator("pre.file").inner_text()
    assert "kind: PlacementDecision" in text
    assert "name: frontend" in text
    page.screenshot(path=str(ARTIFACTS / "decision.png"))


def by_keyboard(page: Any, base: str) -> None:
    """The fleet page by Tab and Enter alone: the skip link first, the focus visible, then
    the cluster links in order."""
    page.goto(base + "/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.url.endswith("#main")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "eu-west-1":
            break
    else:
        raise AssertionError("Tab never reached the link to eu-west-1")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    page.screenshot(path=str(ARTIFACTS / "keyboard-focus.png"))
    page.keyboard.press("Enter")
    page.wait_for_url(base + "/clusters/eu-west-1")


def test_sign_in_with_a_token_when_auth_is_on(
    served_repo: tuple[SourceRepo, str], tmp_path: Path, chromium: Any
) -> None:
    repo, url = served_repo
    keys = Keys()
    (tmp_path / "key.pem").write_bytes(keys.public_pem)
    service = start(
        tmp_path, url, "--api-jwt-key-file", str(tmp_path / "key.pem"), "--api-audience", "dro"
    )
    try:
        wait_for(lambda: passes(repo) == 1, "the first pass")
        base = f"http://127.0.0.1:{service.port}"
        context = chromium.new_context()
        page = context.new_page()
        answer = page.goto(base + "/workloads")
        assert answer is not None
        assert answer.status == 401
        token = keys.token(aud="dro", scope="fleet:read")
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(base + "/")
        assert page.locator("h1").inner_text() == "Fleet"
        assert "eu-west-1" in row_headers(page)
        (cookie,) = [c for c in context.cookies() if c["name"] == "dro_token"]
        assert cookie["httpOnly"]
        assert cookie["sameSite"] == "Strict"
        page.screenshot(path=str(ARTIFACTS / "signed-in.png"))
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(base + "/login")
        assert [c for c in context.cookies() if c["name"] == "dro_token"] == []
        context.close()
        assert token not in service.log.read_text()
    finally:
        service.close()
