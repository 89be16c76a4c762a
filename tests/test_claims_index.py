"""`claims.Claims` ranks each workload against the policies that could select it only; it must
give exactly what `claims.claim` gives over every policy, ties and ambiguities included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.domain import Origin, ResourceKey, Workload, claims
from reconciler.domain.policy import (
    LabelRequirement,
    LabelSelector,
    Placement,
    PlacementPolicy,
    PolicyRef,
    ResourceSelector,
)

LABELS = st.dictionaries(st.sampled_from(["app", "tier", "group"]), st.sampled_from(["a", "b"]))
KINDS = st.sampled_from([("apps/v1", "Deployment"), ("v1", "Service"), ("apps/v1", "StatefulSet")])
NAMESPACES = st.sampled_from(["ns1", "ns2"])


@st.composite
def selectors(draw: st.DrawFn) -> ResourceSelector:
    api_version, kind = draw(KINDS)
    label_selector = None
    if draw(st.booleans()):
        expressions = ()
        if draw(st.booleans()):
            expressions = (LabelRequirement(key="tier", operator="Exists"),)
        label_selector = LabelSelector(match_labels=draw(LABELS), match_expressions=expressions)
    return ResourceSelector(
        api_version=api_version,
        kind=kind,
        namespace=draw(st.none() | NAMESPACES),
        name=draw(st.none() | st.sampled_from(["w1", "w2"])),
        label_selector=label_selector,
    )


@st.composite
def policies(draw: st.DrawFn) -> list[PlacementPolicy]:
    found = []
    for index in range(draw(st.integers(0, 6))):
        namespaced = draw(st.booleans())
        found.append(
            PlacementPolicy(
                ref=PolicyRef(
                    kind="PropagationPolicy",
                    namespace=draw(NAMESPACES) if namespaced else None,
                    name=f"p{index}",
                ),
                origin=Origin(path=draw(st.sampled_from(["a.yaml", "b.yaml"])), line=index + 1),
                api_version="policy.karmada.io/v1alpha1",
                namespaced=namespaced,
                priority=draw(st.integers(0, 2)),
                selectors=tuple(draw(st.lists(selectors(), min_size=1, max_size=3))),
                placement=Placement(),
            )
        )
    return found


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    api_version, kind = draw(KINDS)
    name = draw(st.sampled_from(["w1", "w2", "w3"]))
    labels = draw(LABELS)
    namespace = draw(NAMESPACES)
    manifest = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }
    return Workload(
        key=ResourceKey.of(manifest),
        api_version=api_version,
        manifest=manifest,
        origin=Origin(path="w.yaml", line=1),
    )


@settings(max_examples=400, deadline=None)
@given(policies(), st.lists(workloads(), min_size=1, max_size=5))
def test_the_index_claims_exactly_as_ranking_every_policy(
    found: list[PlacementPolicy], items: list[Workload]
) -> None:
    index = claims.Claims(found)
    for workload in items:
        assert index.claim(workload) == claims.claim(found, workload)


def test_a_workload_is_ranked_only_against_policies_that_could_select_it() -> None:
    def policy(name: str, labels: dict[str, str]) -> PlacementPolicy:
        selector = ResourceSelector(
            api_version="apps/v1",
            kind="Deployment",
            label_selector=LabelSelector(match_labels=labels),
        )
        return PlacementPolicy(
            ref=PolicyRef(kind="PropagationPolicy", namespace=None, name=name),
            origin=Origin(path=f"{name}.yaml", line=1),
            api_version="policy.karmada.io/v1alpha1",
            namespaced=False,
            selectors=(selector,),
            placement=Placement(),
        )

    group = [policy(f"g{i}", {"group": f"g{i}"}) for i in range(20)]
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w", "namespace": "n", "labels": {"group": "g7"}},
    }
    workload = Workload(
        key=ResourceKey.of(manifest),
        api_version="apps/v1",
        manifest=manifest,
        origin=group[0].origin,
    )
    assert claims.Claims(group).candidates(workload) == [group[7]]
