"""A progressive rollout on the three real clusters: web:2 reaches e2e-a, then e2e-b once
e2e-a's Deployment is observed Healthy with the new revision, then e2e-c. The emulator
version, with soaks, failures and approvals, is tests/test_rollout_live.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from tests.e2e.controlplane import Fleet
from tests.e2e.reconcilefleet import DRO, WEB, DroFleet, dro_on_fleet
from tests.e2e.waiting import eventually

CLUSTERS = ("e2e-a", "e2e-b", "e2e-c")
ROLLOUT = DRO + "  rollout: {maxClusters: 1, soak: 0s, healthTimeout: 10m}\n"


@pytest.fixture
def dro(fleet: Fleet, clients: dict[str, ApiClient], tmp_path: Path) -> Iterator[DroFleet]:
    with dro_on_fleet(fleet, clients, tmp_path) as running:
        yield running


def _images(dro: DroFleet) -> dict[str, str | None]:
    found = {c: dro.deployment(c, "web") for c in CLUSTERS}
    return {c: d.spec.template.spec.containers[0].image if d else None for c, d in found.items()}


def _available(dro: DroFleet, cluster: str) -> bool:
    found = dro.deployment(cluster, "web")
    assert found is not None
    status = found.status
    return bool(
        status.observed_generation == found.metadata.generation
        and (status.available_replicas or 0) == found.spec.replicas
        and (status.updated_replicas or 0) == found.spec.replicas
    )


def test_a_rollout_moves_wave_by_wave_as_real_clusters_become_healthy(dro: DroFleet) -> None:
    dro.repo.write({"dro.yaml": ROLLOUT})
    dro.repo.commit("rollouts one cluster at a time")
    assert dro.reconcile().applied is not None
    dro.wait_available("web")
    assert _images(dro) == dict.fromkeys(CLUSTERS, "web:1")

    dro.repo.write({"workloads/web.yaml": WEB.replace("web:1", "web:2")})
    dro.repo.commit("web:2")
    dro.reconcile()
    assert _images(dro) == {"e2e-a": "web:2", "e2e-b": "web:1", "e2e-c": "web:1"}

    for wave, cluster in enumerate(CLUSTERS[1:], start=1):
        before = CLUSTERS[wave - 1]

        def reached(cluster: str = cluster, before: str = before) -> bool | None:
            dro.reconcile()
            if _images(dro)[cluster] != "web:2":
                return None
            state = dro.committed("decisions/shop/deployment-web.yaml")["status"]["rollout"]
            done = {c["name"]: c["state"] for c in state["clusters"]}
            assert done[before] == "Updated", state  # observed Healthy with web:2
            assert _available(dro, before), f"{cluster} got web:2 before {before} was Healthy"
            return True

        eventually(f"web:2 on {cluster}", reached)
        later = CLUSTERS[wave + 1 :]
        assert all(_images(dro)[c] == "web:1" for c in later)

    def complete() -> bool | None:
        dro.reconcile()
        rollout = dro.committed("decisions/shop/deployment-web.yaml")["status"]["rollout"]
        return True if rollout["phase"] == "Complete" else None

    eventually("the rollout complete", complete)
    assert _images(dro) == dict.fromkeys(CLUSTERS, "web:2")


def test_a_wave_not_healthy_in_time_is_rolled_back_on_the_real_cluster(dro: DroFleet) -> None:
    """web:2 comes with `paused: true`: the real Deployment stays Suspended, never Healthy,
    so after healthTimeout its wave gets web:1 back, and the later clusters never see web:2."""
    setting = "  rollout: {maxClusters: 1, soak: 0s, healthTimeout: 5s, onFailure: Rollback}\n"
    dro.repo.write({"dro.yaml": DRO + setting})
    dro.repo.commit("rollouts that roll back")
    dro.reconcile()
    dro.wait_available("web")

    paused = WEB.replace("web:1", "web:2").replace(
        "  replicas: 2\n", "  replicas: 2\n  paused: true\n"
    )
    dro.repo.write({"workloads/web.yaml": paused})
    dro.repo.commit("web:2, paused")
    dro.reconcile()
    assert _images(dro) == {"e2e-a": "web:2", "e2e-b": "web:1", "e2e-c": "web:1"}

    def rolled_back() -> dict[str, object] | None:
        dro.reconcile()
        state = dro.committed("decisions/shop/deployment-web.yaml")["status"]["rollout"]
        assert isinstance(state, dict)
        assert state["wave"] == 1, state  # the next wave never starts
        return state if state["phase"] == "RolledBack" else None

    state = eventually("wave 1 rolled back", rolled_back)
    assert "e2e-a" in str(state["message"])
    assert _images(dro) == dict.fromkeys(CLUSTERS, "web:1")
    live = dro.deployment("e2e-a", "web")
    assert live is not None
    assert not live.spec.paused
    dro.wait_available("web")
