"""Apply's outcomes are values: a `ResultCode` per object with its `ResourceKey`, which the
cluster's `ClusterSync` counts and words, instead of strings split apart again."""

from __future__ import annotations

from typing import Any

from reconciler.domain import ResourceKey
from reconciler.kube import client as kube
from reconciler.live import apply
from reconciler.live.outcome import ObjectResult, ResultCode
from reconciler.live.takeover import NEVER, Provenance

SHOP = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
LABELS = {"app.kubernetes.io/managed-by": "dro"}


def configmap(name: str, *, labelled: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "shop"}
    if labelled:
        metadata["labels"] = LABELS
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"v": "1"}}


def key(name: str) -> ResourceKey:
    return ResourceKey("", "ConfigMap", "shop", name)


def test_each_object_has_a_code_and_the_counts_come_from_them(
    connection: kube.Connection,
) -> None:
    first = apply.sync(connection, [SHOP, configmap("a"), configmap("b")], prune=True)
    assert [r.code for r in first.results] == [ResultCode.SYNCED] * 3
    assert [(w.code.action, w.key.brief) for w in first.written][1:] == [
        ("apply", "ConfigMap shop/a"),
        ("apply", "ConfigMap shop/b"),
    ]
    second = apply.sync(connection, [SHOP, configmap("a")], prune=True)
    assert second.results == [
        ObjectResult(ResourceKey("", "Namespace", "", "shop"), ResultCode.UNCHANGED),
        ObjectResult(key("a"), ResultCode.UNCHANGED),
        ObjectResult(key("b"), ResultCode.PRUNED),
    ]
    assert (second.applied, second.unchanged, second.pruned) == (0, 2, 1)
    assert [(w.code.action, w.key.brief) for w in second.written] == [("prune", "ConfigMap shop/b")]


def test_a_refused_object_holds_back_the_prune_of_its_kind_in_its_namespace(
    connection: kube.Connection,
) -> None:
    apply.sync(connection, [SHOP, configmap("a"), configmap("b")], prune=True)
    connection.apply(configmap("c", labelled=False))  # someone else's
    sources = {key("c"): Provenance(where="workloads/c.yaml:3", takeover=NEVER)}
    report = apply.sync(
        connection, [SHOP, configmap("a"), configmap("c")], prune=True, provenance=sources
    )
    codes = {r.key.name: r.code for r in report.results}
    assert codes == {
        "shop": ResultCode.UNCHANGED,
        "a": ResultCode.UNCHANGED,
        "c": ResultCode.REFUSED,
        "b": ResultCode.HELD,
    }
    assert report.rejected == [
        "workloads/c.yaml:3: cluster eu-1: ConfigMap shop/c exists and dro did not create it; "
        "not adopted, left as it is: takeover is Never"
    ]
    assert (report.pruned, report.ok, report.clean) == (0, False, True)
