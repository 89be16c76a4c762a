"""Progressive rollouts through `reconcile --once` against four API emulators, with git
commits between passes and the pass's clock moved by the test (never slept on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rolloutfleet import NAMES, RolloutFleet, rollout_fleet, web

V1 = dict.fromkeys(NAMES, "web:1")
SOAK = 600.0


def _walked(fleet: RolloutFleet, expected: dict[str, str]) -> None:
    """The rendered tree and every cluster hold the images expected."""
    assert fleet.rendered_images() == expected
    assert fleet.live_images() == expected


def test_a_four_wave_rollout_is_walked_wave_by_wave_with_its_soak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setting = "{maxClusters: 1, soak: 10m, healthTimeout: 1h}"
    with rollout_fleet(tmp_path, monkeypatch, setting) as fleet:
        fleet.reconcile(0)
        _walked(fleet, V1)  # a first placement goes everywhere at once
        assert fleet.rollout()["phase"] == "Complete"

        second = fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        fleet.reconcile(100)
        _walked(fleet, V1 | {"eu-west-1": "web:2"})
        assert fleet.subject() == "rollout shop/web 1/4: eu-west-1"
        state = fleet.rollout()
        assert (state["phase"], state["wave"], state["waves"]) == (
            "Progressing",
            1,
            ["1", "2", "3", "4"],
        )
        assert state["from"]["revision"] != state["revision"]

        # eu-west-1 is now observed Healthy with the new revision: the soak starts
        fleet.reconcile(200)
        soaking = {c["name"]: c for c in fleet.rollout()["clusters"]}["eu-west-1"]
        assert soaking["state"] == "Soaking"
        assert fleet.rendered_images()["eu-west-2"] == "web:1"

        fleet.reconcile(200 + SOAK - 1)  # not soaked yet
        assert fleet.rollout()["wave"] == 1
        assert fleet.live_images()["eu-west-2"] == "web:1"

        at = 200 + SOAK
        for wave, cluster in enumerate(NAMES[1:], start=2):
            fleet.reconcile(at)  # the last wave has soaked: the next one starts
            assert fleet.subject() == f"rollout shop/web {wave}/4: {cluster}"
            reached = NAMES[:wave]
            _walked(fleet, V1 | dict.fromkeys(reached, "web:2"))
            fleet.reconcile(at + 1)  # observed Healthy: its soak starts
            at += 1 + SOAK

        revision = fleet.rollout()["revision"]
        fleet.reconcile(at)
        assert fleet.rollout() == {"revision": revision, "commit": second, "phase": "Complete"}
        assert fleet.subject().startswith("rollout shop/web complete")
        _walked(fleet, dict.fromkeys(NAMES, "web:2"))


def test_replicas_alone_are_no_template_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 1}") as fleet:
        fleet.reconcile(0)
        fleet.change({"workloads/web.yaml": web("web:1", replicas=5)}, "5 replicas")
        fleet.reconcile(10)
        assert fleet.rollout()["phase"] == "Complete"
        live = fleet.apis["us-east-2"].get("apps", "v1", "deployments", "shop", "web")
        assert live["spec"]["replicas"] == 5


TWO_WAVES = "{{maxClusters: 2, soak: 1m, healthTimeout: 15m, onFailure: {0}}}"


def _failed_first_wave(fleet: RolloutFleet) -> None:
    """web:2 reaches wave 1 (eu-west-1, eu-west-2), where eu-west-2 never becomes Healthy,
    until the health timeout has passed."""
    fleet.reconcile(0)
    fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
    fleet.reconcile(100)
    _walked(fleet, V1 | {"eu-west-1": "web:2", "eu-west-2": "web:2"})
    fleet.reconcile(200)  # eu-west-1 is Healthy, eu-west-2 is not
    fleet.reconcile(100 + 15 * 60)  # eu-west-1 has soaked, eu-west-2 is not Healthy
    assert fleet.rollout()["phase"] == "Progressing"
    fleet.reconcile(100 + 15 * 60 + 1)


def test_a_failing_wave_pauses_and_goes_on_once_healthy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout_fleet(
        tmp_path, monkeypatch, TWO_WAVES.format("Pause"), stuck=("eu-west-2",)
    ) as fleet:
        _failed_first_wave(fleet)
        state = fleet.rollout()
        assert state["phase"] == "Paused"
        assert "eu-west-2" in state["message"]
        states = {c["name"]: c["state"] for c in state["clusters"]}
        assert states == {
            "eu-west-1": "Updated",
            "eu-west-2": "Failed",
            "us-east-1": "Waiting",
            "us-east-2": "Waiting",
        }
        assert fleet.subject() == "rollout shop/web 1/2 paused: wave 1 not Healthy"
        fleet.reconcile(3 * 3600)  # held: the next wave does not start
        _walked(fleet, V1 | {"eu-west-1": "web:2", "eu-west-2": "web:2"})

        live = fleet.apis["eu-west-2"].get("apps", "v1", "deployments", "shop", "web")
        ready = {"observedGeneration": live["metadata"]["generation"], "replicas": 2}
        ready |= {"updatedReplicas": 2, "availableReplicas": 2}
        fleet.apis["eu-west-2"].set_status("apps", "v1", "deployments", "shop", "web", ready)
        fleet.reconcile(4 * 3600)  # Healthy now: soaking
        assert fleet.rollout()["phase"] == "Paused"
        fleet.reconcile(4 * 3600 + 60)
        assert fleet.subject() == "rollout shop/web 2/2: us-east-1, us-east-2"
        _walked(fleet, dict.fromkeys(NAMES, "web:2"))


def test_a_failing_wave_rolls_back_to_the_previous_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout_fleet(
        tmp_path, monkeypatch, TWO_WAVES.format("Rollback"), stuck=("eu-west-2",)
    ) as fleet:
        _failed_first_wave(fleet)
        state = fleet.rollout()
        assert state["phase"] == "RolledBack"
        assert fleet.subject() == "rollout shop/web 1/2 rolled back: eu-west-1, eu-west-2"
        _walked(fleet, V1)
        fleet.reconcile(5 * 3600)  # it stays rolled back
        _walked(fleet, V1)
        assert fleet.rollout()["phase"] == "RolledBack"

        fleet.change({"workloads/web.yaml": web("web:3")}, "web:3")  # the fix
        fleet.reconcile(6 * 3600)
        _walked(fleet, V1 | {"eu-west-1": "web:3", "eu-west-2": "web:3"})
        assert fleet.rollout()["phase"] == "Progressing"


def test_an_approval_wave_waits_for_a_commit_that_promotes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setting = (
        "{waves: [{name: canary, clusters: [eu-west-1]}, "
        "{name: prod, labels: {env: prod}, approval: true}], soak: 1m}"
    )
    with rollout_fleet(tmp_path, monkeypatch, setting) as fleet:
        fleet.reconcile(0)
        fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        fleet.reconcile(100)
        assert fleet.subject() == "rollout shop/web 1/2: eu-west-1"
        fleet.reconcile(200)  # Healthy: soaking
        fleet.reconcile(260)  # soaked: the prod wave needs an approval
        assert fleet.rollout()["phase"] == "AwaitingApproval"
        assert fleet.subject() == "rollout shop/web: wave prod waits for approval"
        fleet.reconcile(9000)
        _walked(fleet, V1 | {"eu-west-1": "web:2"})

        fleet.change({"workloads/web.yaml": web("web:2", promote="prod")}, "promote prod")
        fleet.reconcile(9100)
        assert fleet.subject() == "rollout shop/web 2/2: eu-west-2, us-east-1, us-east-2"
        _walked(fleet, dict.fromkeys(NAMES, "web:2"))
        fleet.reconcile(9200)  # Healthy: soaking
        fleet.reconcile(9260)
        assert fleet.rollout()["phase"] == "Complete"

        # the annotation left from the last rollout approves nothing in the next one
        fleet.change({"workloads/web.yaml": web("web:3", promote="prod")}, "web:3")
        fleet.reconcile(9300)
        fleet.reconcile(9400)
        fleet.reconcile(9500)
        assert fleet.rollout()["phase"] == "AwaitingApproval"
        _walked(fleet, dict.fromkeys(NAMES, "web:2") | {"eu-west-1": "web:3"})
        state = fleet.rollout()
        fleet.change(
            {"workloads/web.yaml": web("web:3", promote=f"prod@{state['revision']}")},
            "promote prod for this revision",
        )
        fleet.reconcile(9600)
        _walked(fleet, dict.fromkeys(NAMES, "web:3"))


def test_a_second_change_mid_rollout_starts_from_what_each_cluster_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout_fleet(tmp_path, monkeypatch, "{maxClusters: 1, soak: 1m}") as fleet:
        fleet.reconcile(0)
        fleet.change({"workloads/web.yaml": web("web:2")}, "web:2")
        fleet.reconcile(100)
        fleet.reconcile(200)
        fleet.reconcile(260)
        held = V1 | {"eu-west-1": "web:2", "eu-west-2": "web:2"}
        _walked(fleet, held)

        fleet.change({"workloads/web.yaml": web("web:3")}, "web:3")
        seen: dict[str, list[str]] = {name: [held[name]] for name in NAMES}
        at = 300.0
        for _ in range(12):
            fleet.reconcile(at)
            for name, image in fleet.live_images().items():
                assert image is not None
                if seen[name][-1] != image:
                    seen[name].append(image)
            at += 61
        assert seen == {name: [held[name], "web:3"] for name in NAMES}
        assert fleet.rollout()["phase"] == "Complete"
