"""One object identity: an object is read back and pruned under the apiVersion it was
rendered and applied with (`domain.ObjectRef`), never under one guessed from its group."""

from __future__ import annotations

from typing import Any

from reconciler import live, yamlio
from reconciler.domain import (
    Decision,
    ObjectRef,
    Placed,
    ResourceKey,
    SchedulerConfig,
    Source,
    Spec,
)
from reconciler.kube import client as kube
from reconciler.kube import inventory
from reconciler.live import apply

VERSION = "example.com/v1beta2"
"""A version that is not `<group>/v1`: the CRD below serves no other."""
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
SHOP = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
WIDGET: dict[str, Any] = {
    "apiVersion": VERSION,
    "kind": "Widget",
    "metadata": {
        "name": "w",
        "namespace": "shop",
        "labels": {"app.kubernetes.io/managed-by": "dro"},
    },
}
KEY = ResourceKey("example.com", "Widget", "shop", "w")


def test_a_ref_keeps_the_version_and_its_key_ignores_it() -> None:
    ref = ObjectRef.of(WIDGET)
    assert (ref.key, ref.api_version, ref.version) == (KEY, VERSION, "v1beta2")
    assert ObjectRef.of({**WIDGET, "apiVersion": "example.com/v1"}).key == KEY
    assert str(ref) == "Widget shop/w"
    assert inventory.from_entry(inventory.entry(ref)) == ref


def test_the_inventory_holds_and_prunes_it_under_its_real_version(
    connection: kube.Connection,
) -> None:
    first = apply.sync(connection, [CRD, SHOP, WIDGET], prune=True)
    assert (first.applied, first.rejected, first.failed) == (3, [], [])
    held = inventory.decode(
        connection.get("v1", "ConfigMap", inventory.INVENTORY_NAME, inventory.INVENTORY_NAMESPACE)
    )
    assert ObjectRef(KEY, VERSION) in held
    gone = apply.sync(connection, [CRD, SHOP], prune=True)
    assert (gone.pruned, gone.failed) == (1, [])
    assert connection.get(VERSION, "Widget", "w", "shop") is None


def test_a_move_is_awaited_under_the_version_its_decision_was_rendered_with(
    connection: kube.Connection,
) -> None:
    spec = Spec(source=Source(files=()), config=SchedulerConfig(), clusters=(), workloads=())
    members = live.Members(spec, live.Access(kubeconfig=None))
    members.connections["eu-1"] = connection
    tree = {
        f"clusters/eu-1/{i}.yaml": yamlio.dump(obj).encode()
        for i, obj in enumerate((CRD, SHOP, WIDGET))
    }
    assert members.apply(tree).ok
    moving = Decision(
        key=KEY,
        api_version=VERSION,
        policy=None,
        clusters=(Placed("eu-1", None),),
        retiring=(Placed("eu-0", None),),
    )
    assert members.await_moves([moving]), "a Widget is Healthy once it exists"
