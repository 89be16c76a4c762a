"""The web view's pages from hand-made snapshots: what a branch in a given state shows (a move
in flight, a rollout, a cluster out of service, names that are HTML), without a pass."""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import httpx

from reconciler.domain import Decision, Placed, ResourceKey
from reconciler.domain.decision import Move
from reconciler.domain.reasons import MoveCode, MoveReason
from reconciler.domain.rollout import PROGRESSING, ClusterRollout, RolloutStatus
from reconciler.web import branchdata, pages
from reconciler.web.branchdata import ClusterView, Snapshot, WorkloadView
from tests.apiserve import served

KEY = ResourceKey("apps", "Deployment", "shop", "cart")


class Fixed:
    """A reader that always answers one snapshot (the view's routes need only these)."""

    def __init__(self, snapshot: Snapshot, diagnosis: Mapping[str, Any]) -> None:
        self.fixed = snapshot
        self.said = diagnosis

    def snapshot(self) -> Snapshot:
        return self.fixed

    def diagnosis(self, _path: str) -> Mapping[str, Any]:
        return self.said


def cluster(name: str, phase: str = "", reachable: bool = True) -> ClusterView:
    return ClusterView(
        name=name,
        phase=phase,
        reachable=reachable,
        source="observed",
        observed_at="2026-01-01T00:00:00Z",
        levels=MappingProxyType({"cpu": 0.5, "memory": 0.25}),
        forecast=MappingProxyType({}),
        history=((1.0, MappingProxyType({"cpu": 0.5, "memory": 0.25})),),
    )


def snapshot(decision: Decision, labels: Mapping[str, str], *clusters: ClusterView) -> Snapshot:
    workload = WorkloadView(decision=decision, path="decisions/shop/x.yaml", labels=labels)
    return Snapshot(
        tip="f" * 40,
        at=1.0,
        clusters=clusters,
        workloads=(workload,),
        limit=MappingProxyType({"cpu": 0.85}),
        by_key=MappingProxyType({str(workload.key): workload}),
        by_cluster=MappingProxyType({}),
    )


@contextlib.contextmanager
def client(fixed: Fixed) -> Iterator[httpx.Client]:
    reader: Any = fixed  # the routes use snapshot() and diagnosis() only on these pages
    routes = pages.Web(reader, pages.access.Gate(None)).routes()
    with served(routes) as server, httpx.Client(base_url=server.url) as session:
        yield session


def text(page: str) -> str:
    """The page's text without tags, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_a_move_in_flight_and_a_rollout_are_shown() -> None:
    move = Move("eu-1", "us-1", 2, MoveReason(MoveCode.WATER_LEVEL, "0.90 > 0.85 (cpu)"), "T1")
    rollout = RolloutStatus(
        revision="r2",
        commit="c2",
        phase=PROGRESSING,
        previous="r1",
        wave=1,
        waves=2,
        clusters=(
            ClusterRollout(
                cluster="us-1",
                wave=1,
                state="Healthy",
                revision="r2",
                commit="c2",
                from_revision="r1",
                from_commit="c1",
            ),
        ),
    )
    decision = Decision(
        key=KEY,
        api_version="apps/v1",
        policy=None,
        clusters=(Placed("us-1", 3),),
        retiring=(Placed("eu-1", 2, "Syncing", "T1"),),
        moves=(move,),
        rollout=rollout,
    )
    diagnosis = {"trigger": "water level", "strategy": "Divided", "weights": {"Balance": 1.0}}
    with client(Fixed(snapshot(decision, {}, cluster("eu-1"), cluster("us-1")), diagnosis)) as web:
        shown = text(web.get("/workloads/shop/Deployment.apps/cart").text)
    assert "State moving (Syncing)" in shown
    assert f"eu-1 us-1 2 {move.reason.text} T1" in shown
    assert "eu-1 (new copies above) 2 retiring: Syncing T1" in shown
    assert "Revision r2 from r1 : Progressing, wave 1 of 2" in shown
    assert "us-1 1 r2 Healthy" in shown


def test_out_of_service_clusters_and_names_that_are_html() -> None:
    decision = Decision(key=KEY, api_version="apps/v1", policy=None, clusters=())
    labels = {"team": '"><img src=x onerror=alert(1)>'}
    fleet = snapshot(
        decision,
        labels,
        cluster("<b>c1</b>", phase="Draining"),
        cluster("c2", phase="Unreachable", reachable=False),
    )
    with client(Fixed(fleet, {})) as web:
        page = web.get("/").text
        workload = web.get("/workloads/shop/Deployment.apps/cart").text
    assert "<b>c1</b>" not in page
    assert "&lt;b&gt;c1&lt;/b&gt;" in page
    assert 'href="/clusters/%3Cb%3Ec1%3C/b%3E"' in page
    shown = text(page)
    assert "<b>c1</b> Draining yes" in shown
    assert "c2 Unreachable no" in shown
    assert "Draining: 1, Unreachable: 1" in shown
    assert "<img" not in workload
    assert "team=&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in workload
    assert "Placed on no cluster." in text(workload)


def test_an_empty_branch_says_so() -> None:
    with client(Fixed(branchdata.EMPTY, {})) as web:
        shown = text(web.get("/").text)
    assert "The output branch has no commit yet" in shown
