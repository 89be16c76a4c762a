"""Karmada placement from its samples and documentation, through the CLI: toleration
matching, NoExecute tolerationSeconds, and spread constraints Karmada cannot select by."""

from __future__ import annotations

import textwrap
from pathlib import Path

import karmadarepo
import pytest
from karmadarepo import deployment, placed, schedule, write


def test_karmada_sample_no_schedule_toleration_tolerates_empty_valued_taints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Karmada's artifacts/example/propagationpolicy_taintToleration.yaml tolerates
    `{effect: NoSchedule}`: no key and the default operator Equal, so by core/v1's
    ToleratesTaint every NoSchedule taint with an empty value, whatever its key, and no
    taint with a value."""
    policy = textwrap.dedent("""\
        apiVersion: policy.karmada.io/v1alpha1
        kind: PropagationPolicy
        metadata:
          name: nginx-propagation
        spec:
          resourceSelectors:
            - apiVersion: apps/v1
              kind: Deployment
              name: nginx
          placement:
            clusterAffinity:
              clusterNames:
                - member1
                - member2
            clusterTolerations:
              - effect: "NoSchedule"
        """)
    root = write(
        tmp_path / "repo",
        {
            "clusters/member1.yaml": cluster_with_taint("member1", "{key: maintenance}"),
            "clusters/member2.yaml": cluster_with_taint("member2", "{key: dedicated, value: gpu}"),
            "workloads/nginx.yaml": deployment(2),
            "policies/nginx.yaml": policy,
        },
    )
    decision = schedule(root, capsys)["Deployment/nginx"]
    assert placed(decision) == {"member1": 2}


def cluster_with_taint(name: str, taint: str, effect: str = "NoSchedule") -> str:
    """A member carrying one taint (`taint` is the flow mapping without its effect)."""
    return karmadarepo.cluster(name, f"  taints: [{taint[:-1]}, effect: {effect}}}]\n")


def test_toleration_seconds_zero_on_a_no_execute_taint_evicts_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """https://karmada.io/docs/userguide/scheduling/workload-rebalancer: member1 gets a
    NoExecute taint, the policy tolerates it for `tolerationSeconds: 0`, so the replicas
    leave member1 at once and all run on member2."""
    policy = textwrap.dedent("""\
        apiVersion: policy.karmada.io/v1alpha1
        kind: PropagationPolicy
        metadata:
          name: demo-deploy
        spec:
          resourceSelectors:
            - {apiVersion: apps/v1, kind: Deployment, name: nginx}
          placement:
            clusterAffinity:
              clusterNames: [member1, member2]
            clusterTolerations:
              - {effect: NoExecute, key: workload-rebalancer-test, operator: Exists,
                 tolerationSeconds: 0}
            replicaScheduling:
              replicaDivisionPreference: Weighted
              replicaSchedulingType: Divided
          failover:
            application:
              decisionConditions: {tolerationSeconds: 30}
        """)
    files = {"workloads/nginx.yaml": deployment(3), "policies/nginx.yaml": policy}
    root = write(tmp_path / "repo", files)
    assert sum(placed(schedule(root, capsys)["Deployment/nginx"]).values()) == 3
    taint = cluster_with_taint("member1", "{key: workload-rebalancer-test}", "NoExecute")
    write(root, {"clusters/member1.yaml": taint})
    assert placed(schedule(root, capsys)["Deployment/nginx"]) == {"member2": 3}
    untimed = policy.replace("tolerationSeconds: 0}", "}")
    write(root, {"policies/nginx.yaml": untimed})
    assert "member1" in placed(schedule(root, capsys)["Deployment/nginx"])


@pytest.mark.parametrize(
    ("spread", "reason"),
    [
        ("[{spreadByLabel: topology.example/rack, minGroups: 2, maxGroups: 2}]", "just support"),
        ("[{spreadByField: cluster, minGroups: 1}]", "no clusters available to schedule"),
    ],
)
def test_a_spread_karmada_cannot_select_by_is_unschedulable_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spread: str, reason: str
) -> None:
    """Karmada's scheduler selects by region or cluster only (select_clusters.go: "just
    support cluster and region spread constraint"; `spreadByLabel` is issue #5355), and a
    cluster constraint without maxGroups selects min(#clusters, 0) = no cluster, which
    assignment rejects ("no clusters available to schedule"). Neither is a placement on no
    cluster that reports nothing."""
    policy = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: nginx}\nspec:\n"
        "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]\n"
        f"  placement:\n    spreadConstraints: {spread}\n"
    )
    files = {"workloads/nginx.yaml": deployment(2), "policies/nginx.yaml": policy}
    decision = schedule(write(tmp_path / "repo", files), capsys)["Deployment/nginx"]
    assert decision["clusters"] == []
    assert reason in str(decision["unschedulable"])
