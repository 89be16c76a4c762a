"""The disruption budget through whole passes: a drain under `maxUnavailableClusters: 1` moves
a workload onto one cluster at a time, each pass reading the last one's sealed `decisions/`
back from its output tree (as a reconcile pass reads them from the output branch), with the
clusters observed in between: the next move starts only once the last one's copies are Healthy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

from reconciler import laststate, live, load, pipeline
from reconciler.branch import paths, statefiles
from reconciler.domain import Observation, ResourceKey, Spec, durations
from reconciler.kube import health

KEY = ResourceKey("apps", "Deployment", "web", "api")
DECISION = "decisions/web/deployment-api.yaml"
HOUR = 3600.0
BACKGROUND = 50


def write_repo(root: Path, *, drain: str = "") -> None:
    """Four clusters of 100 cpu with 50 used by others; `api` (8 × 10 cpu) on all four under a
    budget of one cluster; under the 0.85 limit each cluster takes one more replica."""
    (root / "clusters").mkdir(parents=True, exist_ok=True)
    (root / "policies").mkdir(exist_ok=True)
    (root / "workloads").mkdir(exist_ok=True)
    (root / "dro.yaml").write_text(
        "apiVersion: multicluster.io/v1alpha1\nkind: SchedulerConfiguration\n"
        "metadata: {name: dro}\nspec:\n  rebalance: {maxMovesPerPass: 100}\n"
        "  disruption: {maxUnavailableClusters: 1}\n"
    )
    for name in "abcd":
        drained = "  drain: true\n" if name in drain else ""
        (root / "clusters" / f"{name}.yaml").write_text(
            "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\n"
            f"metadata: {{name: {name}, labels: {{env: prod}}}}\nspec:\n{drained}"
            f"  kubeconfig: {{context: {name}}}\n"
            '  capacity: {cpu: "100", memory: 100Gi, pods: "100"}\n'
            f'  allocated: {{cpu: "{BACKGROUND}", memory: 1Gi, pods: "1"}}\n'
        )
    (root / "policies" / "web.yaml").write_text(
        "apiVersion: multicluster.io/v1alpha1\nkind: ResourcePlacementPolicy\n"
        "metadata: {name: web}\nspec:\n"
        "  resourceSelector: {apiVersion: apps/v1, kind: Deployment, namespace: web}\n"
        "  placement:\n    replicaScheduling: {type: Divided, division: DynamicWeight}\n"
    )
    (root / "workloads" / "api.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: web}\n"
        "spec:\n  replicas: 8\n  selector: {matchLabels: {app: api}}\n  template:\n"
        "    metadata: {labels: {app: api}}\n    spec:\n      containers:\n"
        "        - {name: api, image: 'api:1', resources: {requests: {cpu: '10'}}}\n"
    )


def observer(
    rendered: Mapping[str, int], healths: Mapping[str, str]
) -> Callable[[Spec], live.Observed]:
    """Every cluster observed with the replicas the last pass rendered there charged to its
    usage, and `api` Healthy wherever it runs unless `healths` says otherwise."""

    def observe(spec: Spec) -> live.Observed:
        found = {}
        for c in spec.clusters:
            runs = rendered.get(c.name, 0)
            found[c.name] = Observation(
                cluster=c.name,
                capacity=dict(c.capacity),
                used={**c.allocated, "cpu": BACKGROUND + 10.0 * runs},
                observed_at="1970-01-01T00:00:00Z",
                health={KEY: (healths.get(c.name, health.HEALTHY), "")} if runs else {},
            )
        return live.Observed(observations=found)

    return observe


def status_of(planned: pipeline.Planned) -> dict[str, object]:
    document = yaml.safe_load(statefiles.unseal(planned.tree[DECISION]))
    status: dict[str, object] = document["status"]
    return status


def rendered_counts(status: Mapping[str, object]) -> dict[str, int]:
    """What the output tree renders per cluster: the target plus the retiring copies."""
    found: dict[str, int] = {}
    for key in ("clusters", "retiring"):
        for entry in status.get(key) or ():  # type: ignore[attr-defined]
            found[entry["name"]] = found.get(entry["name"], 0) + entry["replicas"]
    return found


def test_a_drain_moves_one_cluster_at_a_time_through_the_output_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_repo(repo)
    first, _ = pipeline.plan(load.from_directory(repo), now=0.0)
    before = laststate.of(
        {p: d for p, d in first.tree.items() if p.startswith(paths.STATE_FOLDERS)}
    )
    status = status_of(first)
    assert rendered_counts(status) == {"a": 2, "b": 2, "c": 2, "d": 2}
    write_repo(repo, drain="a")
    steps = [{}, {"b": health.PROGRESSING}, {}, {}]
    seen: list[dict[str, object]] = []
    for hour, healths in enumerate(steps, start=1):
        watch = observer(rendered_counts(status), healths)
        planned, _ = pipeline.plan(
            load.from_directory(repo),
            before=before,
            now=hour * HOUR,
            observer=watch,
        )
        before = laststate.of(
            {p: d for p, d in planned.tree.items() if p.startswith(paths.STATE_FOLDERS)}
        )
        status = status_of(planned)
        seen.append(status)
    at = [durations.rfc3339(h * HOUR) for h in range(1, len(steps) + 1)]
    moves = [
        [(m["from"], m["to"]) for m in s.get("moves") or () if m["at"] == at[i]]  # type: ignore[attr-defined]
        for i, s in enumerate(seen)
    ]
    assert moves == [[("a", "b")], [], [("a", "c")], []], "one destination per step"
    budgets = [s["disruption"] for s in seen]
    assert budgets[0] == {
        "maxUnavailableClusters": 1,
        "allowed": 1,
        "leaving": ["a"],
        "entering": ["b"],
        "waiting": [
            {
                "cluster": "a",
                "replicas": 1,
                "reason": "disruption budget: 1 cluster in flight of 1 allowed "
                "(leaving a; entering b)",
            }
        ],
    }
    assert budgets[1]["entering"] == ["b"], "b is still Progressing: nothing new starts"  # type: ignore[index]
    assert budgets[3] == {"maxUnavailableClusters": 1, "allowed": 1}, "nothing in flight"
    assert rendered_counts(seen[-1]) == {"b": 3, "c": 3, "d": 2}
