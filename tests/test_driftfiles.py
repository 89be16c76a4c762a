"""`status/drift/<cluster>.yaml`, written and read back: sorted, sealed, `firstSeen` carried
while an object stays drifted, a cluster not surveyed keeps its last file, and only a change to
which objects or fields drifted is urgent."""

from __future__ import annotations

import yaml

from reconciler.branch import driftfiles, status
from reconciler.domain import ResourceKey
from reconciler.domain.drift import ABSENT, Change, Drifted

WEB = ResourceKey("apps", "Deployment", "shop", "web")
CONFIG = ResourceKey("", "ConfigMap", "shop", "web")
T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"


def replicas(live: int) -> Drifted:
    return Drifted(WEB, "Report", (Change("/spec/replicas", live, 3),))


def objects(tree: dict[str, bytes], cluster: str) -> list[dict[str, object]]:
    return list(yaml.safe_load(tree[f"status/drift/{cluster}.yaml"])["status"]["objects"])


def test_objects_are_sorted_and_first_seen_is_carried_while_the_drift_lasts() -> None:
    gone = Drifted(CONFIG, "Correct", deleted=True)
    first = driftfiles.merged({}, {"a": [replicas(5), gone]}, {}, T1, ["a", "b"])
    assert sorted(first) == ["status/drift/a.yaml"], "no file for a cluster without drift"
    assert objects(first, "a") == [
        {"resource": "apps/Deployment/shop/web", "rule": "Report", "firstSeen": T1,
         "fields": [{"pointer": "/spec/replicas", "live": 5, "rendered": 3}]},
        {"resource": "core/ConfigMap/shop/web", "rule": "Correct", "firstSeen": T1,
         "deleted": True},
    ]  # fmt: skip
    later = driftfiles.merged({}, {"a": [replicas(7)]}, first, T2, ["a", "b"])
    (entry,) = objects(later, "a")
    assert entry["firstSeen"] == T1
    assert entry["fields"] == [{"pointer": "/spec/replicas", "live": 7, "rendered": 3}]
    ended = driftfiles.merged({"other": b"x"}, {"a": []}, later, T2, ["a", "b"])
    assert ended == {"other": b"x"}


def test_a_cluster_not_surveyed_keeps_its_file_and_a_removed_one_loses_it() -> None:
    first = driftfiles.merged({}, {"a": [replicas(5)], "b": [replicas(4)]}, {}, T1, ["a", "b"])
    kept = driftfiles.merged({}, {"b": [replicas(4)]}, first, T2, ["a", "b"])
    assert kept["status/drift/a.yaml"] == first["status/drift/a.yaml"]
    removed = driftfiles.merged({}, {"b": [replicas(4)]}, first, T2, ["b"])
    assert "status/drift/a.yaml" not in removed


def test_only_which_fields_drifted_is_urgent() -> None:
    five = driftfiles.merged({}, {"a": [replicas(5)]}, {}, T1, ["a"])
    seven = driftfiles.merged({}, {"a": [replicas(7)]}, five, T2, ["a"])
    assert not status.urgent(five, seven), "a new live value of the same field can wait"
    image = Change("/spec/template/spec/containers/0/image", "web:x", "web:1")
    more = driftfiles.merged({}, {"a": [Drifted(WEB, "Report", (image,))]}, five, T2, ["a"])
    assert status.urgent(five, more)
    assert status.urgent(five, {}), "a drift that ended is committed at once"


def test_a_field_on_one_side_only_has_no_value_on_the_other() -> None:
    added = Change("/metadata/labels/team", ABSENT, "shop")
    tree = driftfiles.merged({}, {"a": [Drifted(WEB, "Correct", (added,))]}, {}, T1, ["a"])
    assert objects(tree, "a")[0]["fields"] == [
        {"pointer": "/metadata/labels/team", "rendered": "shop"}
    ]
