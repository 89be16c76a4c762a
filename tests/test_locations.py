"""Placement by city codes (`placement.locations`): the first location with a feasible
cluster and room is used, else the next down the list; a workload stays in its location
while it can hold it, regains its first choice when its location no longer can, and starts
again from the first one when the placement changes; none feasible is unschedulable with
every location's reason. Locations intersect `targetClusters`, and the replicas are divided
among the chosen location's clusters by the policy's strategy."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest
from conftest import EXAMPLE

from reconciler import load, render, schedule, validate, yamlio
from reconciler.branch import statefiles, status
from reconciler.domain import Decision, Observation, Placed, ResourceKey, Spec
from reconciler.kube import health

CITIES = {"dfw-1": "DFW", "dfw-2": "DFW", "iah-1": "IAH", "ord-1": "ORD", "lhr-1": "LHR"}


def cluster(name: str, city: str, *, used: int = 10, extra: str = "") -> str:
    """A cluster of 100 cpu in `city`, `used` of them allocated."""
    return (
        textwrap.dedent(f"""\
        apiVersion: multicluster.io/v1alpha1
        kind: Cluster
        metadata:
          name: {name}
          labels: {{env: prod, topology.datum.net/city-code: {city}}}
        spec:
          capacity: {{cpu: "100", memory: 400Gi, pods: "1000"}}
          allocated: {{cpu: "{used}", memory: 10Gi, pods: "10"}}
        """)
        + extra
    )


def policy(locations: str, *, division: str = "DynamicWeight", targets: str = "") -> str:
    """A ResourcePlacementPolicy for the Deployment `api`, placing by `locations` (flow YAML)."""
    return textwrap.dedent(f"""\
        apiVersion: multicluster.io/v1alpha1
        kind: ResourcePlacementPolicy
        metadata: {{name: api}}
        spec:
          resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, namespace: edge}}]
          {targets}
          placement:
            replicaScheduling: {{type: Divided, division: {division}}}
            waterLevelLimit: {{cpu: 0.8}}
            overflow: Never
            locations: {locations}
        """)


def deployment(replicas: int, cpu: int = 10) -> str:
    """The Deployment edge/api: `replicas` of `cpu` cores each."""
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: api, namespace: edge}}
        spec:
          replicas: {replicas}
          selector: {{matchLabels: {{app: api}}}}
          template:
            metadata: {{labels: {{app: api}}}}
            spec:
              containers:
                - name: api
                  image: registry.example/api:1
                  resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}
        """)


DRO_YAML = """\
apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec: {kubernetesVersion: "1.34"}
"""


def repo(root: Path, files: Mapping[str, str]) -> Path:
    """dro.yaml, one cluster per entry of `CITIES` (replaced by `files` where given), and
    `files`."""
    merged = {f"clusters/{n}.yaml": cluster(n, c) for n, c in CITIES.items()}
    for relative, text in {"dro.yaml": DRO_YAML, **merged, **files}.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def spec_of(root: Path) -> Spec:
    result = validate.check(load.from_directory(root))
    assert result.spec is not None, [str(p) for p in result.problems]
    return result.spec


def decide(root: Path, previous: Decision | None = None) -> Decision:
    """The decision for edge/api, after `previous` (the last pass's)."""
    spec = spec_of(root)
    before = {previous.key: previous} if previous is not None else None
    (decision,) = [d for d in schedule.place(spec, before) if d.key.name == "api"]
    return decision


def placed(decision: Decision) -> dict[str, int | None]:
    return {p.cluster: p.replicas for p in decision.clusters}


PREFERENCE = "[{cityCodes: [DFW, IAH]}, {cityCodes: [ORD]}]"
DALLAS_HOUSTON_FULL = {
    f"clusters/{name}.yaml": cluster(name, CITIES[name], used=75)
    for name in ("dfw-1", "dfw-2", "iah-1")
}
"""The first location's clusters at 75 of 100 cpu, over the 0.8 limit with one 10-cpu replica."""


def test_first_location_with_room_is_used(tmp_path: Path) -> None:
    root = repo(
        tmp_path, {"workloads/api.yaml": deployment(6), "policies/api.yaml": policy(PREFERENCE)}
    )
    decision = decide(root)
    assert decision.affinity_term == "DFW,IAH"
    assert set(placed(decision)) == {"dfw-1", "dfw-2", "iah-1"}
    assert sum(c or 0 for c in placed(decision).values()) == 6
    assert "in location DFW,IAH (choice 1 of 2)" in decision.diagnosis.trigger.text


def test_falls_back_when_the_first_city_is_full(tmp_path: Path) -> None:
    files = {"workloads/api.yaml": deployment(6), "policies/api.yaml": policy(PREFERENCE)}
    decision = decide(repo(tmp_path, {**files, **DALLAS_HOUSTON_FULL}))
    assert placed(decision) == {"ord-1": 6}
    assert decision.affinity_term == "ORD"
    trigger = decision.diagnosis.trigger.text
    assert "in location ORD (choice 2 of 2)" in trigger
    assert "location DFW,IAH skipped: 0/5 clusters are available: 3 insufficient cpu" in trigger
    # a pass that does not explain itself (large fleets) places the same way
    spec = spec_of(repo(tmp_path, {**files, **DALLAS_HOUSTON_FULL}))
    (quiet,) = [d for d in schedule.place(spec, diagnose=False) if d.key.name == "api"]
    assert (placed(quiet), quiet.affinity_term) == ({"ord-1": 6}, "ORD")


def test_falls_back_when_the_first_city_is_tainted_draining_or_cordoned(tmp_path: Path) -> None:
    files = {
        "workloads/api.yaml": deployment(6),
        "policies/api.yaml": policy(PREFERENCE),
        "clusters/dfw-1.yaml": cluster(
            "dfw-1", "DFW", extra="  taints: [{key: maintenance, effect: NoSchedule}]\n"
        ),
        "clusters/dfw-2.yaml": cluster("dfw-2", "DFW", extra="  drain: true\n"),
        "clusters/iah-1.yaml": cluster("iah-1", "IAH", extra="  cordon: true\n"),
    }
    decision = decide(repo(tmp_path, files))
    assert placed(decision) == {"ord-1": 6}
    trigger = decision.diagnosis.trigger.text
    for reason in ("1 untolerated taint", "1 cluster draining", "1 cluster cordoned"):
        assert reason in trigger


def test_every_location_exhausted_is_unschedulable_naming_each(tmp_path: Path) -> None:
    files = {
        "workloads/api.yaml": deployment(6),
        "policies/api.yaml": policy(PREFERENCE),
        **DALLAS_HOUSTON_FULL,
        "clusters/ord-1.yaml": cluster("ord-1", "ORD", used=75),
    }
    decision = decide(repo(tmp_path, files))
    assert decision.clusters == ()
    message = decision.unschedulable
    assert message is not None
    assert message.startswith("no location can take it: location DFW,IAH: 0/5 clusters")
    assert "; location ORD: 0/5 clusters are available" in message


def test_stays_in_its_location_when_the_preferred_one_has_room_again(tmp_path: Path) -> None:
    files = {"workloads/api.yaml": deployment(6), "policies/api.yaml": policy(PREFERENCE)}
    first = decide(repo(tmp_path / "a", {**files, **DALLAS_HOUSTON_FULL}))
    assert first.affinity_term == "ORD"
    later = decide(repo(tmp_path / "b", files), first)  # Dallas and Houston have room again
    assert placed(later) == {"ord-1": 6}
    assert later.affinity_term == "ORD"


@pytest.mark.parametrize(
    "trouble", ["  taints: [{key: down, effect: NoExecute}]\n", "  drain: true\n"]
)
def test_regains_the_preferred_location_when_its_own_fails(tmp_path: Path, trouble: str) -> None:
    files = {"workloads/api.yaml": deployment(6), "policies/api.yaml": policy(PREFERENCE)}
    first = decide(repo(tmp_path / "a", {**files, **DALLAS_HOUSTON_FULL}))
    troubled = {**files, "clusters/ord-1.yaml": cluster("ord-1", "ORD", extra=trouble)}
    later = decide(repo(tmp_path / "b", troubled), first)
    assert later.affinity_term == "DFW,IAH"
    assert set(placed(later)) == {"dfw-1", "dfw-2", "iah-1"}
    assert "location ORD skipped" in later.diagnosis.trigger.text


def test_a_changed_placement_starts_from_the_first_location(tmp_path: Path) -> None:
    files = {"workloads/api.yaml": deployment(6), "policies/api.yaml": policy(PREFERENCE)}
    first = decide(repo(tmp_path / "a", {**files, **DALLAS_HOUSTON_FULL}))
    edited = {**files, "policies/api.yaml": policy("[{cityCodes: [DFW]}, {cityCodes: [ORD]}]")}
    later = decide(repo(tmp_path / "b", edited), first)
    assert later.affinity_term == "DFW"
    assert set(placed(later)) == {"dfw-1", "dfw-2"}


def test_locations_intersect_the_target_clusters(tmp_path: Path) -> None:
    targets = "targetClusters: [{selectorType: name, values: [dfw-2, ord-1]}]"
    files = {
        "workloads/api.yaml": deployment(6),
        "policies/api.yaml": policy(PREFERENCE, targets=targets),
    }
    decision = decide(repo(tmp_path, files))
    assert placed(decision) == {"dfw-2": 6}


def test_static_weights_divide_within_the_chosen_location(tmp_path: Path) -> None:
    text = policy(PREFERENCE, division="StaticWeight").replace(
        "division: StaticWeight}",
        "division: StaticWeight, weights: [{clusters: [dfw-1], weight: 2}, "
        "{clusters: [dfw-2, iah-1, ord-1], weight: 1}]}",
    )
    decision = decide(
        repo(tmp_path, {"workloads/api.yaml": deployment(8), "policies/api.yaml": text})
    )
    assert placed(decision) == {"dfw-1": 4, "dfw-2": 2, "iah-1": 2}


def test_overflow_past_the_limits_stays_in_the_most_preferred_location(tmp_path: Path) -> None:
    """With `overflow: Always` (the default) and no location able to take the workload under
    its limits, the overflow goes to the first location that takes any of it, not spread
    over cities; what fits nowhere there is pending, with every location's reason."""
    files = {
        "workloads/api.yaml": deployment(10),
        "policies/api.yaml": policy(PREFERENCE).replace("    overflow: Never\n", ""),
        **DALLAS_HOUSTON_FULL,
        "clusters/ord-1.yaml": cluster("ord-1", "ORD", used=75),
    }
    decision = decide(repo(tmp_path, files))
    assert placed(decision) == {"dfw-1": 2, "dfw-2": 2, "iah-1": 2}
    assert decision.affinity_term == "DFW,IAH"
    assert decision.pending == 4
    message = decision.unschedulable
    assert message is not None
    assert message.startswith("in location DFW,IAH: ")
    assert "; location ORD: 0/5 clusters are available" in message


def test_workload_status_is_aggregated_per_city_code() -> None:
    """`status/workloads/...` lists, per city code of the observed clusters: the clusters,
    the replicas desired there and ready (on Healthy clusters), and the worst health."""
    key = ResourceKey(group="apps", kind="Deployment", namespace="edge", name="api")
    decision = Decision(
        key=key,
        api_version="apps/v1",
        policy=None,
        clusters=(Placed("dfw-1", 3), Placed("dfw-2", 2), Placed("iah-1", 1), Placed("x-1", 4)),
    )

    def seen(name: str, state: str) -> Observation:
        return Observation(
            cluster=name, capacity={}, used={}, observed_at="t", health={key: (state, "")}
        )

    observations = {
        "dfw-1": seen("dfw-1", health.HEALTHY),
        "dfw-2": seen("dfw-2", health.PROGRESSING),
        "iah-1": seen("iah-1", health.HEALTHY),
        "x-1": seen("x-1", health.HEALTHY),
    }
    files = status.workload_files(
        [decision], observations, {"dfw-1": "DFW", "dfw-2": "DFW", "iah-1": "IAH"}
    )
    (data,) = files.values()
    document = yamlio.load_own("status.yaml", statefiles.unseal(data))
    assert document["status"]["locations"] == [
        {
            "cityCode": "DFW",
            "clusters": ["dfw-1", "dfw-2"],
            "replicas": {"desired": 5, "ready": 3},
            "health": health.PROGRESSING,
            "message": "dfw-2",
        },
        {
            "cityCode": "IAH",
            "clusters": ["iah-1"],
            "replicas": {"desired": 1, "ready": 1},
            "health": health.HEALTHY,
            "message": "",
        },
    ]
    assert [c["name"] for c in document["status"]["clusters"]] == ["dfw-1", "dfw-2", "iah-1", "x-1"]
    # without city codes, the file is as before: no locations
    (plain,) = status.workload_files([decision], observations).values()
    assert "locations" not in yamlio.load_own("status.yaml", statefiles.unseal(plain))["status"]


def test_rebalancing_moves_replicas_only_within_the_location(tmp_path: Path) -> None:
    """dfw-1 climbs above its limit: re-balancing moves a replica to a cluster of the same
    location, although ord-1 and lhr-1 (outside it) are emptier."""
    files = {"workloads/api.yaml": deployment(6), "policies/api.yaml": policy(PREFERENCE)}
    first = decide(repo(tmp_path / "a", files))
    assert placed(first) == {"dfw-1": 2, "dfw-2": 2, "iah-1": 2}
    hot = {**files, "clusters/dfw-1.yaml": cluster("dfw-1", "DFW", used=95)}
    later = decide(repo(tmp_path / "b", hot), first)
    assert later.affinity_term == "DFW,IAH"
    assert later.moves
    assert {m.target for m in later.moves} <= {"dfw-2", "iah-1"}
    assert set(placed(later)) <= {"dfw-1", "dfw-2", "iah-1"}


def test_a_city_code_no_cluster_carries_is_a_warning(tmp_path: Path) -> None:
    text = policy("[{cityCodes: [DFW, DWF]}]")
    root = repo(tmp_path, {"workloads/api.yaml": deployment(2), "policies/api.yaml": text})
    result = validate.check(load.from_directory(root))
    assert result.spec is not None
    (warning,) = [str(p) for p in result.problems]
    assert warning.startswith("policies/api.yaml:11: /spec/placement/locations/0/cityCodes/1: ")
    assert "warning: no cluster carries city code DWF" in warning
    assert "labels: DFW, IAH, LHR, ORD)" in warning


def test_the_example_edge_cache_falls_back_and_its_status_is_per_city() -> None:
    """example-repo's policies/edge.yaml prefers IAD, whose clusters cannot take the cache (a
    taint, a water level above 0.55); it runs in CMH, its Service follows, and with every
    cluster observed Healthy its status file lists CMH with all replicas ready."""
    spec = spec_of(EXAMPLE)
    decisions = schedule.place(spec)
    by_name = {(d.key.kind, d.key.name): d for d in decisions}
    cache = by_name[("Deployment", "edge-cache")]
    assert cache.affinity_term == "CMH"
    assert "location IAD skipped" in cache.diagnosis.trigger.text
    assert [p.cluster for p in by_name[("Service", "edge-cache")].clusters] == ["us-east-2"]
    keys = [w.key for w in spec.workloads]
    observations = {
        c.name: Observation(
            cluster=c.name,
            capacity=dict(c.capacity),
            used=dict(c.allocated),
            observed_at="2026-01-05T09:00:00Z",
            health=dict.fromkeys(keys, (health.HEALTHY, "")),
        )
        for c in spec.clusters
    }
    tree = render.tree(spec, decisions, observations=observations)
    data = tree["status/workloads/shop/deployment-edge-cache.yaml"]
    document = yamlio.load_own("status.yaml", statefiles.unseal(data))
    replicas = sum(p.replicas or 0 for p in cache.clusters)
    assert document["status"]["locations"] == [
        {
            "cityCode": "CMH",
            "clusters": ["us-east-2"],
            "replicas": {"desired": replicas, "ready": replicas},
            "health": health.HEALTHY,
            "message": "",
        }
    ]
