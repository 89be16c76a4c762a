"""What each page shows, from a `branchdata.Snapshot` and the request's query: pure functions.

Filters are GET parameters, so every view is a link: `q` (a substring of the name), `namespace`,
`label` (`key=value`, or `key` for any value), `policy` and `cluster` (placed there), and
`page` (1-based, `PAGE_SIZE` rows). An unknown page number shows the last page.

Called by `web.pages`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from reconciler.domain import Decision
from reconciler.kube import secrets
from reconciler.web import charts
from reconciler.web.branchdata import ClusterView, Snapshot, WorkloadView

T = TypeVar("T")

PAGE_SIZE = 50
CHART_RESOURCES = ("cpu", "memory")
"""The resources the fleet page charts (a cluster's page charts every one it reports)."""
DIFF_LINES = 400
"""Lines of one file's diff shown on a change's page (the rest is counted)."""
FILES_PER_PAGE = 20
"""Files per page of a change's diff."""
FILTERS = ("q", "namespace", "label", "policy", "cluster")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a long list."""

    rows: Sequence[Any]
    number: int
    pages: int
    total: int
    query: Mapping[str, str]

    def link(self, number: int) -> str:
        """The query string of page `number` with the same filters."""
        kept = {k: v for k, v in self.query.items() if v and k != "page"}
        return "?" + urlencode({**kept, "page": str(number)})


def paged(rows: Sequence[T], query: Mapping[str, str], size: int | None = None) -> Page:
    """The page `query["page"]` asks for (the first when absent or not a number) of `size`
    rows (`PAGE_SIZE` by default)."""
    size = size or PAGE_SIZE
    pages = max(1, -(-len(rows) // size))
    raw = query.get("page", "1")
    number = int(raw) if raw.isdigit() else 1
    number = min(max(1, number), pages)
    start = (number - 1) * size
    return Page(rows[start : start + size], number, pages, len(rows), dict(query))


def clean(query: Mapping[str, str]) -> dict[str, str]:
    """The filters and page of a query, stripped; others dropped."""
    return {k: query.get(k, "").strip() for k in (*FILTERS, "page") if query.get(k, "").strip()}


def phase_text(cluster: ClusterView) -> str:
    """The phase as shown: `In service` when the status file sets none."""
    return cluster.phase or "In service"


def cluster_charts(
    snapshot: Snapshot, cluster: ClusterView, resources: Sequence[str], large: bool = False
) -> list[dict[str, Any]]:
    """Per resource: its name, level now, limit, forecast and chart."""
    size = {"width": 480, "height": 120} if large else {}
    shown = []
    for resource in resources:
        points = [(at, v[resource]) for at, v in cluster.history if resource in v]
        if not points and resource in cluster.levels:
            points = [(snapshot.at, cluster.levels[resource])]
        limit = snapshot.limit.get(resource)
        forecast = cluster.forecast.get(resource)
        shown.append(
            {
                "resource": resource,
                "now": charts.percent(cluster.levels.get(resource)),
                "limit": charts.percent(limit) if limit is not None else "—",
                "forecast": charts.percent(forecast) if forecast is not None else "—",
                "over": limit is not None and cluster.levels.get(resource, 0.0) > limit,
                "svg": charts.chart(resource, points, limit=limit, forecast=forecast, **size),
                "since": points[0][0] if points else 0.0,
                "until": points[-1][0] if points else 0.0,
            }
        )
    return shown


def fleet(snapshot: Snapshot, query: Mapping[str, str]) -> dict[str, Any]:
    """The fleet page: each cluster (filtered by `q` and `cluster`) with its charts."""
    wanted = (query.get("q") or query.get("cluster") or "").lower()
    rows = [c for c in snapshot.clusters if wanted in c.name.lower()]
    page = paged(rows, query)
    return {
        "page": page,
        "resources": CHART_RESOURCES,
        "rows": [
            {
                "cluster": c,
                "phase": phase_text(c),
                "charts": cluster_charts(snapshot, c, CHART_RESOURCES),
            }
            for c in page.rows
        ],
        "counts": _phase_counts(snapshot.clusters),
    }


def _phase_counts(clusters: Sequence[ClusterView]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for cluster in clusters:
        counts[phase_text(cluster)] = counts.get(phase_text(cluster), 0) + 1
    return sorted(counts.items())


def cluster(snapshot: Snapshot, found: ClusterView, query: Mapping[str, str]) -> dict[str, Any]:
    """A cluster's page: every resource's chart and the workloads placed on it."""
    resources = sorted(set(found.levels) | {r for _, v in found.history for r in v})
    placed = snapshot.by_cluster.get(found.name, ())
    page = paged(filtered(placed, query), query)
    return {
        "cluster": found,
        "phase": phase_text(found),
        "charts": cluster_charts(snapshot, found, resources, large=True),
        "page": page,
        "rows": [workload_row(w, found.name) for w in page.rows],
    }


def filtered(workloads: Sequence[WorkloadView], query: Mapping[str, str]) -> list[WorkloadView]:
    """The workloads that pass every filter of the query."""
    text = query.get("q", "").lower()
    namespace = query.get("namespace", "")
    policy = query.get("policy", "")
    cluster_ = query.get("cluster", "")
    label_key, has_value, label_value = query.get("label", "").partition("=")
    found = []
    for workload in workloads:
        key = workload.key
        if text and text not in str(key).lower():
            continue
        if namespace and key.namespace != namespace:
            continue
        if policy and workload.policy != policy:
            continue
        if cluster_ and all(p.cluster != cluster_ for p in workload.decision.clusters):
            continue
        if label_key and (
            label_key not in workload.labels
            or (has_value and workload.labels[label_key] != label_value)
        ):
            continue
        found.append(workload)
    return found


def workload_row(workload: WorkloadView, on: str | None = None) -> dict[str, Any]:
    """One workload's row in a list (`on`: the replicas on that cluster)."""
    decision = workload.decision
    placed = decision.clusters
    return {
        "workload": workload,
        "href": workload_href(workload),
        "placement": ", ".join(_placed_text(p.cluster, p.replicas) for p in placed[:5])
        + (f" and {len(placed) - 5} more" if len(placed) > 5 else ""),
        "here": next((_count(p.replicas) for p in placed if p.cluster == on), ""),
        "state": state_text(decision),
    }


def workload_href(workload: WorkloadView) -> str:
    """The path of a workload's page."""
    return "/workloads/" + "/".join(quote(part, safe="") for part in str(workload.key).split("/"))


def same_workload(snapshot: Snapshot, namespace: str, kind: str, name: str) -> WorkloadView | None:
    """The one workload of that namespace and name whose kind matches `kind` without its
    group and without case (`deployment` for `Deployment.apps`); None when none or several."""
    wanted = kind.partition(".")[0].lower()
    found = [
        w
        for w in snapshot.workloads
        if w.key.name == name and w.key.folder == namespace and w.key.kind.lower() == wanted
    ]
    return found[0] if len(found) == 1 else None


def _count(replicas: int | None) -> str:
    return "—" if replicas is None else str(replicas)


def _placed_text(cluster_: str, replicas: int | None) -> str:
    return cluster_ if replicas is None else f"{cluster_} ({replicas})"


def state_text(decision: Decision) -> str:
    """Moving, rolling out, unschedulable, pending or placed: what a row says of it."""
    if decision.distrusted:
        return "distrusted: divided again"
    if decision.unschedulable:
        return "unschedulable"
    if decision.moving is not None:
        return f"moving ({decision.moving.phase})"
    if decision.retiring:
        return "moving"
    if decision.rollout is not None and decision.rollout.in_progress:
        return f"rolling out (wave {decision.rollout.wave} of {decision.rollout.waves})"
    if decision.pending:
        return f"{decision.pending} pending"
    return "placed"


def workloads(snapshot: Snapshot, query: Mapping[str, str]) -> dict[str, Any]:
    """The workloads page: the search form's choices and one page of matching workloads."""
    rows = filtered(snapshot.workloads, query)
    page = paged(rows, query)
    return {
        "page": page,
        "rows": [workload_row(w) for w in page.rows],
        "namespaces": sorted({w.key.namespace for w in snapshot.workloads if w.key.namespace}),
        "policies": sorted({w.policy for w in snapshot.workloads if w.policy}),
        "clusters": [c.name for c in snapshot.clusters],
        "query": query,
    }


def workload(
    workload_: WorkloadView, diagnosis: Mapping[str, Any], query: Mapping[str, str]
) -> dict[str, Any]:
    """A workload's page: placement, reasons, each cluster's verdict and scores (as `dro
    explain` shows them), moves and rollout."""
    decision = workload_.decision
    weights = diagnosis.get("weights")
    scorers = sorted(weights) if isinstance(weights, Mapping) else []
    replicas = {p.cluster: p.replicas for p in decision.clusters}
    verdicts = []
    raw = diagnosis.get("clusters")
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("name", ""))
        raw_scores = entry.get("scores")
        scores: Mapping[str, Any] = raw_scores if isinstance(raw_scores, Mapping) else {}
        cost = entry.get("costPerReplicaHour")
        verdicts.append(
            {
                "cluster": name,
                "feasible": bool(entry.get("feasible")),
                "verdict": "feasible"
                if entry.get("feasible")
                else f"{entry.get('rejectedBy', 'rejected')}: {entry.get('reason', '')}",
                "scores": [_score(scores, s) for s in scorers],
                "total": _score(dict(entry), "score"),
                "cost": f"{cost:.4f}" if isinstance(cost, int | float) else "—",
                "replicas": _count(replicas[name]) if name in replicas else "—",
            }
        )
    verdicts.sort(key=lambda v: (not v["feasible"], v["cluster"]))
    page = paged(verdicts, query, size=100)
    return {
        "workload": workload_,
        "decision": decision,
        "state": state_text(decision),
        "placed": [
            {"cluster": p.cluster, "replicas": _count(p.replicas)} for p in decision.clusters
        ],
        "retiring": decision.retiring,
        "moves": decision.moves,
        "rollout": decision.rollout,
        "trigger": str(diagnosis.get("trigger") or ""),
        "strategy": str(diagnosis.get("strategy") or ""),
        "fleet_level": _number(diagnosis.get("fleetWaterLevel")),
        "weights": [(s, _number(weights[s])) for s in scorers]
        if isinstance(weights, Mapping)
        else [],
        "scorers": scorers,
        "page": page,
        "verdicts": page.rows,
    }


def _score(scores: Mapping[str, Any], name: str) -> str:
    value = scores.get(name)
    return f"{value:.1f}" if isinstance(value, int | float) else ""


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else ""


def diff_lines(path: str, before: bytes, after: bytes) -> dict[str, Any]:
    """One file's unified diff, as (kind, text) lines, a Secret's values masked
    (`kube.secrets`: the keys stay, each value is a marker saying whether it changed); long
    diffs are cut."""
    safe = secrets.redact_pair(path, before or None, after or None)
    old = safe.before.splitlines()
    new = safe.after.splitlines()
    lines = list(
        difflib.unified_diff(
            old,
            new,
            f"a/{path}" if before else "/dev/null",
            f"b/{path}" if after else "/dev/null",
            lineterm="",
            n=2,
        )
    )
    shown = [(_kind(line), line) for line in lines[:DIFF_LINES]]
    status = "added" if not before else "deleted" if not after else "changed"
    return {"path": path, "status": status, "lines": shown, "cut": max(0, len(lines) - DIFF_LINES)}


def file_text(path: str, data: bytes) -> str:
    """A file of the branch as a page shows it: a Secret's values masked."""
    return secrets.redact_pair(path, None, data).after


def _kind(line: str) -> str:
    if line.startswith(("+++", "---", "@@")):
        return "head"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "same"
