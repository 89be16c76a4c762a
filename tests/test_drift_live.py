"""Drift against three emulated clusters, with git commits between passes: corrected and
reported under `Correct`, reported and left as it is under `Report`, and listed in
`status/drift/<cluster>.yaml` with each field's pointer, the live and rendered values and
when it was first seen, carried while the drift lasts and dropped when it ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import load
from reconciler.branch import statefiles
from tests.conftest import git
from tests.livefleet import POLICY, Fleet, running_fleet

REPORT_POLICY = POLICY + "    apply: {drift: Report}\n"
SECRET = """apiVersion: v1
kind: Secret
metadata: {name: web, namespace: shop}
data: {password: aHVudGVyMg==}  # hunter2
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with running_fleet(tmp_path) as running:
        running.reconcile()
        yield running


def branch(fleet: Fleet) -> dict[str, bytes]:
    """The `decisions/` and `status/` files at the output branch's tip."""
    settings = fleet.settings
    return load.previous_state(settings.repo or "", settings.output_branch, settings.state_dir)


def subject(fleet: Fleet) -> str:
    """The subject of the output branch's last commit."""
    return git(fleet.repo.bare, "log", "-1", "--format=%s", fleet.settings.output_branch)


def drift_file(fleet: Fleet, cluster: str) -> Any:
    """`status/drift/<cluster>.yaml` at the tip, parsed (its seal checked), or None."""
    data = branch(fleet).get(f"status/drift/{cluster}.yaml")
    if data is None:
        return None
    statefiles.status_of(f"status/drift/{cluster}.yaml", data)
    return yaml.safe_load(data)


def edit(fleet: Fleet, cluster: str, kind: str, name: str, change: Any) -> None:
    """A kubectl-style edit of a live object behind dro's back."""
    live = fleet.live(cluster, kind, name)
    change(live)
    fleet.apis[cluster].put(live)


def set_greeting(value: str) -> Any:
    def change(live: Any) -> None:
        live["data"]["greeting"] = value

    return change


def set_image(value: str) -> Any:
    def change(live: Any) -> None:
        live["spec"]["template"]["spec"]["containers"][0]["image"] = value

    return change


def test_under_correct_drift_is_recorded_and_corrected_then_dropped(fleet: Fleet) -> None:
    assert all(drift_file(fleet, name) is None for name in fleet.apis), "no drift at first"
    edit(fleet, "a", "ConfigMap", "web", set_greeting("hacked"))
    result = fleet.reconcile()
    assert result.applied is not None
    assert result.applied.clusters[0].corrected == ["ConfigMap shop/web: .data.greeting"]
    assert fleet.live("a", "ConfigMap", "web")["data"]["greeting"] == "hello"
    document = drift_file(fleet, "a")
    assert document["kind"] == "ClusterDrift"
    (entry,) = document["status"]["objects"]
    assert entry["resource"] == "core/ConfigMap/shop/web"
    assert entry["rule"] == "Correct"
    assert entry["fields"] == [{"pointer": "/data/greeting", "live": "hacked", "rendered": "hello"}]
    assert drift_file(fleet, "b") is None
    assert drift_file(fleet, "c") is None
    assert "drift on 1 cluster" in subject(fleet), "the commit says why it was made"
    fleet.repo.commit("an empty commit between passes")
    after = fleet.reconcile()
    assert after.applied is not None
    assert after.applied.clusters[0].drifted == []
    assert drift_file(fleet, "a") is None, "the drift ended: its file is gone"


def test_under_report_drift_is_left_reported_and_first_seen_is_carried(fleet: Fleet) -> None:
    fleet.repo.write({"policies/divided.yaml": REPORT_POLICY})
    fleet.repo.commit("report drift of the shop Deployments")
    fleet.reconcile()
    edit(fleet, "b", "Deployment", "web", set_image("web:hotfix"))
    first = fleet.reconcile()
    assert first.applied is not None
    assert first.applied.ok
    b = first.applied.clusters[1]
    assert b.reported == ["Deployment shop/web: .spec.template.spec.containers"]
    assert b.corrected == []
    assert b.writes == 0
    live = fleet.live("b", "Deployment", "web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "web:hotfix"
    (entry,) = drift_file(fleet, "b")["status"]["objects"]
    assert entry["rule"] == "Report"
    pointer = "/spec/template/spec/containers/0/image"
    assert entry["fields"] == [{"pointer": pointer, "live": "web:hotfix", "rendered": "web:1"}]
    seen = entry["firstSeen"]

    # a commit between passes changes something else: the drift lasts, and so does firstSeen
    web = (fleet.repo.work / "workloads/web.yaml").read_text()
    fleet.repo.write({"workloads/web.yaml": web.replace("greeting: hello", "greeting: hi")})
    fleet.repo.commit("a new greeting")
    second = fleet.reconcile()
    assert second.applied is not None
    assert fleet.live("b", "ConfigMap", "web")["data"]["greeting"] == "hi", "changes still apply"
    (kept,) = drift_file(fleet, "b")["status"]["objects"]
    assert kept["firstSeen"] == seen
    assert kept["fields"] == entry["fields"]

    # a deleted object is drift too: not re-created under Report
    fleet.apis["c"].objects.delete("apps", "v1", "deployments", "shop", "web")
    third = fleet.reconcile()
    assert third.applied is not None
    assert third.applied.clusters[2].reported == ["Deployment shop/web: deleted on the cluster"]
    assert fleet.live("c", "Deployment", "web") is None
    (gone,) = drift_file(fleet, "c")["status"]["objects"]
    assert gone["deleted"] is True
    assert "fields" not in gone

    # the edit is undone by hand: the drift ends, its file goes
    edit(fleet, "b", "Deployment", "web", set_image("web:1"))
    fleet.reconcile()
    assert drift_file(fleet, "b") is None
    assert drift_file(fleet, "c") is not None


def test_a_changed_manifest_is_applied_under_report(fleet: Fleet) -> None:
    fleet.repo.write({"policies/divided.yaml": REPORT_POLICY})
    fleet.repo.commit("report drift")
    fleet.reconcile()
    edit(fleet, "a", "Deployment", "web", set_image("web:hotfix"))
    web = (fleet.repo.work / "workloads/web.yaml").read_text()
    fleet.repo.write({"workloads/web.yaml": web.replace('image: "web:1"', 'image: "web:2"')})
    fleet.repo.commit("web 2")
    result = fleet.reconcile()
    assert result.applied is not None
    assert result.applied.clusters[0].reported == []
    live = fleet.live("a", "Deployment", "web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "web:2"
    assert drift_file(fleet, "a") is None, "an update from git is not drift"


def test_a_drifted_secret_never_shows_its_values(fleet: Fleet, tmp_path: Path) -> None:
    fleet.repo.write({"workloads/secret.yaml": SECRET})
    fleet.repo.commit("a Secret")
    fleet.reconcile()
    live = fleet.apis["a"].get("", "v1", "secrets", "shop", "web")
    live["data"] = {"password": "aGFja2Vk"}  # "hacked"
    fleet.apis["a"].put(live)
    fleet.reconcile()
    raw = branch(fleet)["status/drift/a.yaml"].decode()
    assert "aGFja2Vk" not in raw
    assert "aHVudGVyMg" not in raw
    (entry,) = yaml.safe_load(raw)["status"]["objects"]
    assert entry["fields"] == [
        {
            "pointer": "/data/password",
            "live": "<redacted: live value>",
            "rendered": "<redacted: rendered value>",
        }
    ]


def test_dro_yaml_sets_the_default_rule(fleet: Fleet) -> None:
    dro = (fleet.repo.work / "dro.yaml").read_text()
    duplicated = "    replicaScheduling: {type: Duplicated}\n"
    assert duplicated in dro
    fleet.repo.write(
        {"dro.yaml": dro.replace(duplicated, duplicated + "    apply: {drift: Report}\n")}
    )
    fleet.repo.commit("report drift by default")
    fleet.reconcile()
    edit(fleet, "c", "ConfigMap", "web", set_greeting("hacked"))
    result = fleet.reconcile()
    assert result.applied is not None
    assert result.applied.clusters[2].reported == ["ConfigMap shop/web: .data.greeting"]
    assert fleet.live("c", "ConfigMap", "web")["data"]["greeting"] == "hacked"
    (entry,) = drift_file(fleet, "c")["status"]["objects"]
    assert (entry["resource"], entry["rule"]) == ("core/ConfigMap/shop/web", "Report")
