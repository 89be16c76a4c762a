"""Inventory: apply order, prune only what dro applied and no longer renders, and its encoding."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reconciler.domain import ObjectRef, ResourceKey
from reconciler.kube import inventory


def held_ref(group: str, version: str, kind: str, namespace: str, name: str) -> ObjectRef:
    """An inventory entry's object, by the five parts of its id."""
    api_version = f"{group}/{version}" if group else version
    return ObjectRef(ResourceKey(group, kind, namespace, name), api_version)


def manifest(api_version: str, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


WEB = manifest("apps/v1", "Deployment", "web", "shop")
SHOP = manifest("v1", "Namespace", "shop")
CRD = manifest("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com")
WIDGET = manifest("example.com/v1", "Widget", "w", "shop")
ROLE = manifest("rbac.authorization.k8s.io/v1", "Role", "reader", "shop")
CONFIG = manifest("v1", "ConfigMap", "settings", "shop")


def test_crds_then_namespaces_then_prerequisites_then_workloads() -> None:
    planned = inventory.plan([WIDGET, WEB, CONFIG, ROLE, SHOP, CRD], ())
    assert [ObjectRef.of(obj).key.kind for obj in planned.apply] == [
        "CustomResourceDefinition",
        "Namespace",
        "Role",
        "ConfigMap",
        "Deployment",
        "Widget",
    ]
    stages = inventory.in_stages(planned.apply)
    assert [len(s) for s in stages] == [1, 1, 2, 2]


def test_only_what_the_inventory_holds_and_is_no_longer_rendered_is_pruned() -> None:
    old_job = held_ref("batch", "v1", "Job", "shop", "migrate")
    old_ns = held_ref("", "v1", "Namespace", "", "legacy")
    held = [ObjectRef.of(WEB), ObjectRef.of(SHOP), old_job, old_ns]
    planned = inventory.plan([SHOP, WEB, CONFIG], held)
    assert planned.prune == (old_job, old_ns), "reverse order: the namespace goes last"
    assert set(planned.inventory) == {
        ObjectRef.of(SHOP),
        ObjectRef.of(WEB),
        ObjectRef.of(CONFIG),
        old_job,
        old_ns,
    }


def test_a_new_api_version_is_the_same_object() -> None:
    held = [held_ref("autoscaling", "v1", "HorizontalPodAutoscaler", "shop", "web")]
    hpa = manifest("autoscaling/v2", "HorizontalPodAutoscaler", "web", "shop")
    assert inventory.plan([hpa], held).prune == ()


def test_deletion_protection_is_read_from_the_live_object() -> None:
    live = {
        **WEB,
        "metadata": {
            **WEB["metadata"],
            "annotations": {"multicluster.io/deletion-protected": "Always"},
        },
    }
    assert inventory.protected(live)
    assert not inventory.protected(WEB)


names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
refs = st.builds(
    held_ref,
    group=st.sampled_from(["", "apps", "example.com"]),
    version=st.sampled_from(["v1", "v1beta1"]),
    kind=st.sampled_from(["Deployment", "ConfigMap", "Namespace", "Widget"]),
    namespace=st.one_of(st.just(""), names),
    name=names,
)


records = st.builds(
    inventory.Record,
    digest=st.sampled_from(["", "0123456789abcdef"]),
    state=st.sampled_from([inventory.CREATED, inventory.ADOPTED, inventory.INTENDED]),
)


@given(st.dictionaries(refs, records, max_size=20))
def test_the_configmap_round_trips(held: dict[ObjectRef, inventory.Record]) -> None:
    configmap = inventory.encode(held)
    assert configmap["metadata"]["namespace"] == "dro-system"
    assert inventory.decode(configmap) == held
    assert inventory.decode(None) == {}


def test_the_digest_follows_the_manifest_not_its_key_order() -> None:
    reordered = {"metadata": WEB["metadata"], "kind": "Deployment", "apiVersion": "apps/v1"}
    assert inventory.digest(reordered) == inventory.digest(WEB)
    assert inventory.digest(WEB) != inventory.digest(SHOP)


def test_an_inventory_written_by_an_earlier_version_reads_as_created() -> None:
    web, shop = (
        held_ref("apps", "v1", "Deployment", "shop", "web"),
        held_ref("", "v1", "Namespace", "", "shop"),
    )
    configmap = {
        "data": {"entries": f"{inventory.entry(web)} 0123456789abcdef\n{inventory.entry(shop)}\n"}
    }
    assert inventory.decode(configmap) == {
        shop: inventory.Record("", inventory.CREATED),
        web: inventory.Record("0123456789abcdef", inventory.CREATED),
    }
    future = {"data": {"entries": f"{inventory.entry(web)} - someday\n"}}
    assert inventory.decode(future) == {web: inventory.Record("", inventory.INTENDED)}
