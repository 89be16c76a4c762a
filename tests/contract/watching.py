"""Helpers of the WATCH contract tests: the tests' own ConfigMaps and their event stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubernetes import client, watch

TIMEOUT = 20
"""Seconds a watch may stay open: a test that waits longer has failed."""

OURS = "test=watch"
"""The label of the tests' own ConfigMaps: a real namespace has others (kube-root-ca.crt)."""


def ours(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ConfigMap labelled `OURS` (and `labels`), with no data."""
    return {"metadata": {"name": name, "labels": {"test": "watch", **(labels or {})}}, "data": {}}


def seen(event: dict[str, Any]) -> tuple[str, str]:
    """(type, name) of an event."""
    return event["type"], event["object"]["metadata"]["name"]


def events(core: client.CoreV1Api, namespace: str, **options: Any) -> Iterator[dict[str, Any]]:
    """The events of the namespace's ConfigMaps labelled `OURS` (unless another selector is
    given) as plain JSON, the stream open at most TIMEOUT s."""
    options.setdefault("label_selector", OURS)
    stream = watch.Watch().stream(
        core.list_namespaced_config_map,
        namespace,
        timeout_seconds=TIMEOUT,
        deserialize=False,
        **options,
    )
    return iter(stream)
