"""The output branch's README (`summary.readme`): placements, cost, unschedulable, water levels.

A reader takes it in on a pull request, so it stays bounded however large the fleet: the
placements table shows at most `ROWS` workloads (by key) and `COLUMNS` clusters (by name),
with a column of what runs on the clusters not shown, and each list at most `ROWS` lines,
each cut saying how many more there are and where to find them (`decisions/`,
`status/clusters/`). It is built from the decisions' own clusters, never a cell per
(workload, cluster). It carries no sha and no time, so an unchanged placement renders the
same bytes.

Called by `branch.summary`, `cli.report` and `review.plandiff`.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.branch import status as observed
from reconciler.domain import Decision, Placed, Spec

ROWS = 100
"""At most this many workloads in the placements table, and lines in each list."""
COLUMNS = 12
"""At most this many cluster columns in the placements table."""


def cost_text(decision: Decision) -> str:
    """A decision's cost per hour as tables show it: `0.0953`, `—` when it has none (a kind
    without replicas, or only unpriced clusters), with `+N unpriced` for replicas left out."""
    shown = "—" if decision.cost_per_hour is None else f"{decision.cost_per_hour:.4f}"
    return shown + (f" (+{decision.unpriced} unpriced)" if decision.unpriced else "")


def total_cost(decisions: Sequence[Decision]) -> tuple[float, int]:
    """The placement's cost per hour over the priced clusters, and the replicas left out
    because they run where no price is declared."""
    total = round(sum(d.cost_per_hour or 0.0 for d in decisions), 4)
    return total, sum(d.unpriced for d in decisions)


def total_cost_line(decisions: Sequence[Decision]) -> str:
    """The generated README's sentence on what the whole placement costs per hour."""
    total, unpriced = total_cost(decisions)
    line = (
        f"Cost of the placement: {total:.4f} per hour, at each Cluster's `spec.cost` "
        "(per core-hour, per GiB-hour of memory; retiring copies included)."
    )
    if unpriced:
        line += f" {unpriced} {'replica runs' if unpriced == 1 else 'replicas run'} on clusters"
        line += " without a price, not counted."
    return line


def replicas_label(decision: Decision, cluster: str, replicas: int | None) -> str:
    """A cluster's count as users should read it: the count that runs there. `2`; `✓` for
    a kind without replicas; `5 (override; divided 2)` where an override of `spec.replicas`
    makes the cluster run another count than the division gave it."""
    if replicas is None:
        return "✓"
    runs = decision.effective.get(cluster)
    return str(replicas) if runs is None else f"{runs} (override; divided {replicas})"


def _cell(decision: Decision, cluster: str) -> str:
    retiring = {p.cluster: _retiring_label(p) for p in decision.retiring}
    for placed in decision.clusters:
        if placed.cluster == cluster:
            shown = replicas_label(decision, cluster, placed.replicas)
            return f"{shown} ({retiring[cluster]})" if cluster in retiring else shown
    if cluster in retiring:
        return f"{replicas_label(decision, cluster, 0)} ({retiring[cluster]})"
    return "—"


def _retiring_label(placed: Placed) -> str:
    """`+2 retiring`, and for a stateful move its phase: `+1 retiring, Syncing`, `removed, Done`."""
    if placed.phase is None:
        return f"+{placed.replicas} retiring"
    running = placed.running
    shown = "removed" if running is None else f"+{running} retiring"
    return f"{shown}, {placed.phase}"


def _pending(decision: Decision) -> str:
    """` (3 pending)` for a partial placement, else nothing."""
    return f" ({decision.pending} pending)" if decision.pending else ""


def readme(spec: Spec, decisions: Sequence[Decision], *, in_order: bool = False) -> str:
    """The generated README of the output branch: placements, unschedulable, water levels.
    `in_order` says the decisions are in key order already (a warm render keeps them so)."""
    clusters = sorted(spec.clusters, key=lambda c: c.name)
    names = [c.name for c in clusters[:COLUMNS]]
    cut = len(clusters) > COLUMNS
    ordered = list(decisions) if in_order else sorted(decisions, key=lambda d: d.key.sort_key)
    lines = [
        "# Rendered by dro",
        "",
        "Generated from the source repository named in each commit's `Dro-Source-Commit` "
        "trailer. Do not edit: the next pass rewrites this branch.",
        "",
        "## Placements",
        "",
    ]
    if cut or len(ordered) > ROWS:
        lines += [_shown_line(min(len(ordered), ROWS), len(ordered), len(names), len(clusters)), ""]
    others = ["other clusters"] if cut else []
    lines += [
        "| workload | " + " | ".join([*names, *others]) + " | cost/h |",
        "|---|" + "---:|" * (len(names) + len(others) + 1),
    ]
    shown = set(names)
    for d in ordered[:ROWS]:
        cells = [_cell(d, n) for n in names] + ([_elsewhere(d, shown)] if cut else [])
        lines.append(f"| `{d.key}` | " + " | ".join(cells) + f" | {cost_text(d)} |")
    lines += _more(len(ordered), "workloads", "decisions/")
    lines += ["", total_cost_line(ordered)]
    blocked = [d for d in ordered if d.unschedulable]
    if blocked:
        lines += ["", "## Unschedulable", ""]
        lines += [f"- `{d.key}`: {d.unschedulable}{_pending(d)}" for d in blocked[:ROWS]]
        lines += _more(len(blocked), "workloads", "decisions/")
    overflowed = [d for d in ordered if d.over_limit]
    if overflowed:
        lines += ["", "## Over the water-level limit (within the ceiling)", ""]
        lines += [
            f"- `{d.key}`: " + ", ".join(f"{p.cluster} {p.replicas}" for p in d.over_limit)
            for d in overflowed[:ROWS]
        ]
        lines += _more(len(overflowed), "workloads", "decisions/")
    lines += [
        "",
        "## Water levels (declared)",
        "",
        "| cluster | resource | RWL |",
        "|---|---|---:|",
    ]
    for cluster in clusters[:ROWS]:
        for resource, level in observed.water_level(cluster.capacity, cluster.allocated).items():
            lines.append(f"| {cluster.name} | {resource} | {level:.2f} |")
    lines += _more(len(clusters), "clusters", "status/clusters/")
    return "\n".join(lines) + "\n"


def _shown_line(rows: int, workloads: int, columns: int, clusters: int) -> str:
    """The sentence above a cut placements table: what it shows of what."""
    return (
        f"The first {rows} of {workloads} {_plural(workloads, 'workload')} by key, on the "
        f"first {columns} of {clusters} {_plural(clusters, 'cluster')} by name; every "
        "placement is in `decisions/`."
    )


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def _more(count: int, what: str, where: str) -> list[str]:
    """`… and N more workloads, see decisions/` after a list cut at `ROWS`; else nothing."""
    if count <= ROWS:
        return []
    return ["", f"… and {count - ROWS} more {what}, see `{where}`."]


def _elsewhere(decision: Decision, shown: set[str]) -> str:
    """What runs on the clusters not shown: `9 on 3`, `✓ on 2`, `—` for nothing."""
    rest = [p for p in decision.rendered() if p.cluster not in shown]
    if not rest:
        return "—"
    if any(p.replicas is None for p in rest):
        return f"✓ on {len(rest)}"
    runs = sum(decision.effective.get(p.cluster, p.replicas or 0) for p in rest)
    return f"{runs} on {len(rest)}"
