"""Plan report: a `PlanDiff` as a pull-request comment (Markdown) or as JSON; `planterminal`
shows it on a terminal.

The Markdown opens with a summary table and the water levels at a glance (small bars, the
clusters that changed most first), then one `<details>` block per changed workload and one
per cluster with changed manifests. A comment stays under `LIMIT` characters (GitHub's limit
for a comment body): blocks that do not fit are cut, and a note at the end says which. The
JSON holds everything, uncut. Secret values never reach a `PlanDiff` (`secrets`), so no
format can show them. This module is pure; the CLI writes what it returns.

Called by `cli.plan` and `review.planterminal`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.branch import comparison
from reconciler.errors import Severity
from reconciler.review import plandiff

LIMIT = 65_536
BAR_CELLS = 10
LEVEL_ROWS = 30
"""At most this many clusters in the water-level table; the rest are counted."""
PRIMARY = ("cpu", "memory")
COUNT_KEYS = {
    "workloads changed": "workloadsChanged",
    "replicas moved": "replicasMoved",
    "became unschedulable": "becameUnschedulable",
    "became schedulable": "becameSchedulable",
    "clusters added": "clustersAdded",
    "clusters removed": "clustersRemoved",
    "manifests changed": "manifestsChanged",
    "clusters with changed manifests": "clustersWithChangedManifests",
}


# --- Markdown ---------------------------------------------------------------------------------


def markdown(diff: plandiff.PlanDiff, *, limit: int = LIMIT) -> str:
    """The pull-request comment, at most `limit` characters."""
    head = _title(diff)
    if not diff.head.valid:
        return _fit(head + _invalid(diff.head), [], limit)
    if not diff.differs:
        return head + "No changes to placements or rendered manifests.\n" + _later(diff.head)
    head += _summary(diff) + _later(diff.head) + _levels_table(diff.levels)
    blocks = [("workload", w.workload, _workload_block(w)) for w in diff.workloads]
    levels = {c.cluster: c for c in diff.levels}
    blocks += [
        ("cluster", c.cluster, _cluster_block(c, levels.get(c.cluster))) for c in diff.manifests
    ]
    return _fit(head, blocks, limit)


def _title(diff: plandiff.PlanDiff) -> str:
    base, head = diff.base, diff.head
    lines = [
        f"### dro plan: `{base.ref}` → `{head.ref}`",
        "",
        f"Base {side_name(base)} · head {side_name(head)}",
        "",
    ]
    lines += [f"> **Not in this plan:** {_escape(note)}\n" for note in diff.notes]
    if base.note:
        lines += [f"> {base.note}", ""]
    if head.note:
        lines += [f"> {head.note}", ""]
    return "\n".join(lines) + "\n"


def _later(head: plandiff.Side) -> str:
    """What later passes will still do (`followups`), as a list; empty when nothing."""
    if not head.follow_ups:
        return ""
    items = "\n".join(f"- {_escape(sentence)}" for sentence in head.follow_ups)
    return f"#### Later passes\n\nThis plan is one pass; more will follow:\n\n{items}\n\n"


def side_name(side: plandiff.Side) -> str:
    """A side of the plan as its ref and short commit, in backticks."""
    return f"`{side.ref}` (`{side.commit[:7]}`)" if side.commit else f"`{side.ref}`"


def _invalid(side: plandiff.Side) -> str:
    errors = [p for p in side.problems if p.severity is Severity.ERROR]
    listing = "\n".join(str(p) for p in side.problems)
    return (
        f"**The head `{side.ref}` is invalid**: {len(errors)} "
        f"{'problem' if len(errors) == 1 else 'problems'}. Nothing was planned.\n\n"
        f"{_fence(listing, 'text')}"
    )


def _summary(diff: plandiff.PlanDiff) -> str:
    rows = [f"| {name} | {value} |" for name, value in diff.counts().items()]
    lines = ["| summary | count |", "|---|---:|", *rows, "", cost_line(diff), ""]
    if diff.clusters_added:
        lines.append("Clusters added: " + ", ".join(f"`{c}`" for c in diff.clusters_added))
    if diff.clusters_removed:
        lines.append("Clusters removed: " + ", ".join(f"`{c}`" for c in diff.clusters_removed))
    return "\n".join(lines) + ("\n\n" if diff.clusters_added or diff.clusters_removed else "\n")


def cost_line(diff: plandiff.PlanDiff) -> str:
    """`Cost per hour: 12.6575 → 12.1000 (−0.5575)`, over the clusters with a price."""
    before, after = diff.cost
    return f"Cost per hour: {cost_change(before, after)}"


def cost_change(before: float | None, after: float | None) -> str:
    """`0.0974 → 0.0953 (−0.0021)`; `—` for a side without a cost."""
    old = "—" if before is None else f"{before:.4f}"
    new = "—" if after is None else f"{after:.4f}"
    if before is None or after is None or round(after - before, 4) == 0:
        return f"{old} → {new}"
    delta = after - before
    return f"{old} → {new} ({'+' if delta > 0 else '−'}{abs(delta):.4f})"


def _levels_table(levels: Sequence[plandiff.LevelChange]) -> str:
    changed = sorted(
        (c for c in levels if c.before != c.after), key=lambda c: (-_largest_change(c), c.cluster)
    )
    if not changed:
        return ""
    resources = shown_resources(changed)
    foreseen = any(c.forecast for c in changed)
    extra = ["forecast"] if foreseen else []
    lines = [
        "#### Water levels",
        "",
        "| cluster | " + " | ".join([*resources, *extra]) + " |",
        "|---|" + "---|" * (len(resources) + len(extra)),
    ]
    for change in changed[:LEVEL_ROWS]:
        cells = [level_cell(change, r) for r in resources]
        cells += [forecast_cell(change, resources)] if foreseen else []
        lines.append(f"| `{change.cluster}` | " + " | ".join(cells) + " |")
    if len(changed) > LEVEL_ROWS:
        lines += ["", f"… and {len(changed) - LEVEL_ROWS} more clusters whose levels changed."]
    unchanged = len(levels) - len(changed)
    if unchanged:
        lines += ["", f"{unchanged} clusters' water levels are unchanged."]
    return "\n".join(lines) + "\n\n"


def _largest_change(change: plandiff.LevelChange) -> float:
    before, after = change.before or {}, change.after or {}
    return max((abs(after.get(r, 0.0) - before.get(r, 0.0)) for r in {*before, *after}), default=0)


def shown_resources(levels: Sequence[plandiff.LevelChange]) -> list[str]:
    """The resources the water-level tables show: cpu and memory, then the extended ones."""
    names = {r for c in levels for side in (c.before, c.after) if side for r in side}
    extended = sorted(r for r in names if "/" in r)
    return [r for r in PRIMARY if r in names] + extended


def forecast_cell(change: plandiff.LevelChange, resources: Sequence[str]) -> str:
    """The head's forecast water level over the horizon, `cpu 91.2%, memory 40.0%` (prediction
    on), or `—` for a cluster without a forecast."""
    forecast = change.forecast or {}
    shown = [f"{r} {forecast[r]:.1%}" for r in resources if r in forecast]
    return ", ".join(shown) or "—"


def level_cell(change: plandiff.LevelChange, resource: str) -> str:
    """One resource's water level before → after."""
    return f"{_level(change.before, resource)} → {_level(change.after, resource)}"


def _level(levels: Mapping[str, float] | None, resource: str) -> str:
    if levels is None:
        return "—"
    if resource not in levels:
        return "n/a"
    return f"`{bar(levels[resource])}` {levels[resource]:.1%}"


def bar(level: float) -> str:
    """A water level as `BAR_CELLS` cells, e.g. 0.63 → `██████░░░░`; above 1 all full."""
    filled = min(BAR_CELLS, max(0, round(level * BAR_CELLS)))
    return "█" * filled + "░" * (BAR_CELLS - filled)


def _workload_block(change: comparison.WorkloadChange) -> str:
    clusters = sorted({*change.before, *change.after, *change.retiring_after})
    rows = [
        f"| `{c}` | {_count(change.before, change.retiring_before, c, change.divided_before)} | "
        f"{_count(change.after, change.retiring_after, c, change.divided_after)} |"
        for c in clusters
    ]
    lines = [
        f"<details><summary><code>{change.workload}</code>: {_headline(change)}</summary>",
        "",
        "| cluster | before | after |",
        "|---|---:|---:|",
        *rows,
        "",
    ]
    if change.cost_before != change.cost_after:
        lines.append(f"Cost per hour: {cost_change(change.cost_before, change.cost_after)}  ")
    if change.policy_before != change.policy_after:
        lines.append(f"Policy: {change.policy_before or '—'} → {change.policy_after or '—'}  ")
    if change.move_after is not None and change.move_after != change.move_before:
        lines.append(
            f"Stateful move: {change.move_after} (make-before-break: the old copy serves until "
            "the new one is Healthy and its data in sync)  "
        )
    lines += _shortfall(change)
    if len(change.triggers) == 1:
        lines.append(f"Why: {_escape(change.triggers[0])}")
    elif change.triggers:
        lines += ["Why:", "", *(f"- {_escape(t)}" for t in change.triggers)]
    return "\n".join([*lines, "", "</details>", ""]) + "\n"


def _shortfall(change: comparison.WorkloadChange) -> list[str]:
    """The lines on replicas pending and past the water-level limit, where either side has
    any."""
    lines = []
    if change.pending_before or change.pending_after:
        lines.append(f"Pending: {change.pending_before} → {change.pending_after}  ")
    if change.over_limit_before or change.over_limit_after:
        sides = [
            ", ".join(f"{c} {n}" for c, n in sorted(side.items())) or "none"
            for side in (change.over_limit_before, change.over_limit_after)
        ]
        lines.append(f"Over the water-level limit: {sides[0]} → {sides[1]}  ")
    return lines


def _headline(change: comparison.WorkloadChange) -> str:
    if change.status == "added":
        return f"new, on {len(change.after)} clusters"
    if change.status == "removed":
        return "removed"
    if change.schedulability == "unschedulable":
        return f"became unschedulable: {_escape(change.unschedulable_after or '')}"
    if change.schedulability == "schedulable":
        return f"became schedulable, on {len(change.after)} clusters"
    parts = []
    if change.moved:
        parts.append(f"{change.moved} {'replica' if change.moved == 1 else 'replicas'} moved")
    deltas = change.deltas()
    if deltas:
        shown = ", ".join(deltas[:6]) + (f", … {len(deltas) - 6} more" if len(deltas) > 6 else "")
        parts.append(shown)
    return "; ".join(parts) or "replicas or policy changed"


def _count(
    placed: Mapping[str, int | None],
    retiring: Mapping[str, int],
    cluster: str,
    divided: Mapping[str, int],
) -> str:
    if cluster not in placed and cluster not in retiring:
        return "—"
    count = placed.get(cluster)
    shown = "—" if cluster not in placed else "✓" if count is None else str(count)
    if cluster in divided:
        shown += f" (override; divided {divided[cluster]})"
    extra = retiring.get(cluster)
    return f"{shown} (+{extra} retiring)" if extra else shown


def _cluster_block(change: plandiff.ClusterChange, level: plandiff.LevelChange | None) -> str:
    counts = [f"{change.count(s)} {s}" for s in ("added", "modified", "removed") if change.count(s)]
    summary = f"<b>{change.cluster}</b>: {', '.join(counts)}"
    if level is not None and level.before and level.after and "cpu" in level.before:
        before, after = level.before["cpu"], level.after.get("cpu", 0.0)
        if f"{before:.1%}" != f"{after:.1%}":
            summary += f" · cpu {before:.1%} → {after:.1%}"
    diffs = []
    for file in change.files:
        if file.secret_keys:
            keys = ", ".join(f"`{k}`" for k in file.secret_keys)
            diffs.append(f"Secret `{file.path}`: values redacted; changed keys: {keys}\n")
        diffs.append(_fence(file.diff, "diff"))
    return f"<details><summary>{summary}</summary>\n\n" + "\n".join(diffs) + "\n</details>\n\n"


def _fence(text: str, language: str) -> str:
    """A fenced code block longer than any run of backticks inside `text`."""
    ticks = "`" * max(3, _longest_backticks(text) + 1)
    return f"{ticks}{language}\n{text.rstrip(chr(10))}\n{ticks}\n"


def _longest_backticks(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def _escape(text: str) -> str:
    """Text safe inside a Markdown table cell or an HTML summary."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _fit(head: str, blocks: Sequence[tuple[str, str, str]], limit: int) -> str:
    """`head` and as many blocks as fit in `limit`, in order, with a note naming the cut."""
    reserve = 600
    out, size = [head], len(head)
    cut: dict[str, list[str]] = {}
    for kind, name, text in blocks:
        if size + len(text) <= limit - reserve:
            out.append(text)
            size += len(text)
        else:
            cut.setdefault(kind, []).append(name)
    if cut:
        out.append(_cut_note(cut, limit))
    result = "".join(out)
    return result if len(result) <= limit else result[: limit - 40] + "\n\n… (cut at the limit)\n"


def _cut_note(cut: Mapping[str, Sequence[str]], limit: int) -> str:
    parts = []
    for kind, names in sorted(cut.items()):
        shown = ", ".join(f"`{n}`" for n in names[:5])
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        parts.append(
            f"{len(names)} {kind} {'block' if len(names) == 1 else 'blocks'} ({shown}{more})"
        )
    return (
        f"> **Cut to stay under {limit:,} characters:** {'; '.join(parts)}. "
        "Run `dro plan -o json` for the whole plan.\n"
    )


# --- JSON -------------------------------------------------------------------------------------


def document(diff: plandiff.PlanDiff) -> dict[str, Any]:
    """The whole diff as plain data (`dro plan -o json`), uncut."""
    return {
        "base": _side(diff.base),
        "head": _side(diff.head),
        "differs": diff.differs,
        "counts": {COUNT_KEYS[k]: v for k, v in diff.counts().items()},
        "costPerHour": {"before": diff.cost[0], "after": diff.cost[1]},
        "notes": list(diff.notes),
        "followUps": list(diff.head.follow_ups),
        "clustersAdded": list(diff.clusters_added),
        "clustersRemoved": list(diff.clusters_removed),
        "workloads": [_workload(w) for w in diff.workloads],
        "waterLevels": [
            {
                "cluster": c.cluster,
                "before": c.before,
                "after": c.after,
                **({"forecast": c.forecast} if c.forecast else {}),
            }
            for c in diff.levels
        ],
        "waterLevelLimits": dict(diff.head.water_level_limits),
        "manifests": [
            {
                "cluster": c.cluster,
                "files": [
                    {
                        "path": f.path,
                        "status": f.status,
                        "diff": f.diff,
                        **({"secretKeys": list(f.secret_keys)} if f.secret_keys else {}),
                    }
                    for f in c.files
                ],
            }
            for c in diff.manifests
        ],
    }


def _side(side: plandiff.Side) -> dict[str, Any]:
    return {
        "ref": side.ref,
        "commit": side.commit,
        "valid": side.valid,
        "problems": [str(p) for p in side.problems],
        **({"note": side.note} if side.note else {}),
    }


def _workload(change: comparison.WorkloadChange) -> dict[str, Any]:
    return {
        "workload": change.workload,
        "status": change.status,
        "before": dict(change.before),
        "after": dict(change.after),
        "dividedBefore": dict(change.divided_before),
        "dividedAfter": dict(change.divided_after),
        "retiringBefore": dict(change.retiring_before),
        "retiringAfter": dict(change.retiring_after),
        "moveBefore": change.move_before,
        "moveAfter": change.move_after,
        "moved": change.moved,
        "unschedulableBefore": change.unschedulable_before,
        "unschedulableAfter": change.unschedulable_after,
        "pendingBefore": change.pending_before,
        "pendingAfter": change.pending_after,
        "overLimitBefore": dict(change.over_limit_before),
        "overLimitAfter": dict(change.over_limit_after),
        "policyBefore": change.policy_before,
        "policyAfter": change.policy_after,
        "costBefore": change.cost_before,
        "costAfter": change.cost_after,
        "why": change.why,
        "triggers": list(change.triggers),
        "moves": [
            {"from": m.source, "to": m.target, "replicas": m.replicas, "reason": m.reason.text}
            for m in change.moves
        ],
    }
