"""example-repo/ is realistic: the fleet and workloads the README promises, and it validates."""

from __future__ import annotations

from collections import Counter

from conftest import EXAMPLE

from reconciler import load, validate
from reconciler.errors import Severity


def test_example_repo_is_realistic_and_valid() -> None:
    result = validate.check(load.from_directory(EXAMPLE))
    assert [p for p in result.problems if p.severity is Severity.ERROR] == []
    spec = result.spec
    assert spec is not None
    assert len(spec.clusters) >= 6
    assert len({c.region for c in spec.clusters}) >= 3
    assert len({c.provider for c in spec.clusters}) >= 2
    gpu = [c for c in spec.clusters if "nvidia.com/gpu" in c.capacity]
    assert gpu
    assert any(t.effect == "NoSchedule" for c in gpu for t in c.taints)
    kinds = Counter(w.key.kind for w in spec.workloads)
    assert sum(kinds[k] for k in ("Deployment", "StatefulSet", "DaemonSet", "CronJob")) >= 12
    assert kinds["StatefulSet"] >= 1
    assert kinds["CronJob"] >= 1
    assert kinds["ConfigMap"]
    assert kinds["Secret"]
    assert kinds["Service"]
    assert len(spec.workloads) >= 15
    assert any(
        "nvidia.com/gpu" in str(w.manifest) for w in spec.workloads if w.key.kind == "Deployment"
    )
    policy_kinds = {(p.api_version, p.ref.kind) for p in spec.placement_policies}
    assert ("multicluster.io/v1alpha1", "ResourcePlacementPolicy") in policy_kinds
    assert ("multicluster.io/v1alpha1", "PropagationPolicy") in policy_kinds
    assert ("policy.karmada.io/v1alpha1", "PropagationPolicy") in policy_kinds
    assert ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy") in policy_kinds
    override_kinds = {p.ref.kind for p in spec.override_policies}
    assert override_kinds == {"ClusterOverridePolicy", "OverridePolicy"}
    assert spec.datasets
    assert spec.topology is not None
