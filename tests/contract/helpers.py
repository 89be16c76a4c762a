"""Helpers shared by the API contract tests: polling, object builders, managedFields."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

ROOT = Path(__file__).resolve().parents[2]
E2E_KUBECONFIG = os.environ.get("DRO_E2E_KUBECONFIG")
E2E_CONTEXT = os.environ.get("DRO_E2E_CONTEXT") or None
"""The context of DRO_E2E_KUBECONFIG to test (tests/e2e/test_contract.py names one of its
fleet); unset, the kubeconfig's current context."""
PAUSE = "registry.k8s.io/pause:3.10"
T = TypeVar("T")
emulator_only = pytest.mark.skipif(
    bool(E2E_KUBECONFIG), reason="emulator-only: seeding, counters, faults or the CLI"
)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 30.0) -> T:
    """Poll `probe` until it returns something truthy, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def status_of(error: ApiException) -> dict[str, Any]:
    """Decode the `kind: Status` body of a failed request."""
    body: dict[str, Any] = json.loads(error.body)
    assert body["kind"] == "Status"
    return body


def unique(prefix: str) -> str:
    """Return a name no other test run uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    """Build a ConfigMap body."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    if data:
        body["data"] = data
    return body


def deployment(name: str, namespace: str, image: str = PAUSE, replicas: int = 1) -> dict[str, Any]:
    """Build a Deployment apply configuration with one container called `app`."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def managed_entry(obj: dict[str, Any], manager: str, operation: str) -> dict[str, Any] | None:
    """Return the managedFields entry of one manager and operation, if any."""
    for entry in obj["metadata"].get("managedFields") or []:
        if (entry["manager"], entry["operation"]) == (manager, operation):
            return dict(entry)
    return None


def owns(obj: dict[str, Any], manager: str, *path: str, operation: str = "Apply") -> bool:
    """Tell whether `manager` owns the FieldsV1 path (e.g. "f:spec", "f:replicas")."""
    entry = managed_entry(obj, manager, operation)
    node: Any = entry["fieldsV1"] if entry else None
    for element in path:
        if not isinstance(node, dict) or element not in node:
            return False
        node = node[element]
    return True


def crd_body(group: str, scope: str) -> dict[str, Any]:
    """Build a CustomResourceDefinition for kind Widget (plural widgets) in `group`."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def established(dyn: DynamicClient, name: str) -> bool:
    """Tell whether a CRD reports Established=True."""
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    conditions = crds.get(name=name).to_dict().get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def search(dyn: DynamicClient, api_version: str, kind: str) -> Any:
    """Return the discovered resource, or None while it is not served yet."""
    try:
        return dyn.resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError:
        return None
