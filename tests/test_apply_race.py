"""A controller that writes between apply's LIST and its dry run is no drift (found on a real
cluster: the Deployment controller sets `deployment.kubernetes.io/revision`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from reconciler.domain import ObjectRef
from reconciler.kube import inventory
from reconciler.live import apply
from reconciler.live.outcome import ClusterSync, ResultCode

WEB: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
    "spec": {"replicas": 2},
}


class RacingCluster:
    """One stored Deployment; the first dry run finds that a controller annotated it after the
    LIST apply read (as the Deployment controller does). Every request is counted."""

    def __init__(self, listed: dict[str, Any], *, controller_writes: bool) -> None:
        self.stored = copy.deepcopy(listed)
        self.controller_writes = controller_writes
        self.writes = 0
        self.gets = 0

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply of dro's fields over what is stored; a dry run changes nothing."""
        if self.controller_writes:
            annotations = self.stored["metadata"].setdefault("annotations", {})
            annotations["deployment.kubernetes.io/revision"] = "1"
            self.controller_writes = False
        merged = copy.deepcopy(self.stored)
        merged["spec"].update(copy.deepcopy(obj["spec"]))
        if not dry_run:
            self.writes += 1
            self.stored = merged
        return merged

    def get(self, *_args: object) -> dict[str, Any]:
        """The object as stored now."""
        self.gets += 1
        return copy.deepcopy(self.stored)


def _apply(cluster: RacingCluster, listed: dict[str, Any], wanted: dict[str, Any]) -> ClusterSync:
    report = ClusterSync(cluster="c")
    ref = ObjectRef.of(wanted)
    apply._apply_one(cluster, wanted, inventory.digest(wanted), report, {ref: listed})  # type: ignore[arg-type]
    return report


def test_a_controller_write_after_the_list_is_not_drift() -> None:
    """The listed copy lacks the controller's annotation, the dry run has it: apply looks at
    the object as it is now, finds it as rendered, and writes nothing."""
    listed = copy.deepcopy(WEB)
    listed["spec"]["replicas"] = 3  # differs from the manifest: the LIST shortcut cannot decide
    cluster = RacingCluster(listed, controller_writes=True)
    cluster.stored["spec"]["replicas"] = 2  # ... but the cluster already holds the manifest
    report = _apply(cluster, listed, WEB)

    assert [r.code for r in report.results] == [ResultCode.UNCHANGED]
    assert cluster.writes == 0
    assert cluster.gets == 1


def test_a_real_drift_is_still_corrected() -> None:
    """A field dro set, changed by someone else, differs in the object as it is now too."""
    listed = copy.deepcopy(WEB)
    listed["spec"]["replicas"] = 5
    cluster = RacingCluster(listed, controller_writes=False)
    report = _apply(cluster, listed, WEB)

    assert [r.code for r in report.results] == [ResultCode.DRIFT_CORRECTED]
    assert "spec.replicas" in report.results[0].message
    assert cluster.writes == 1
