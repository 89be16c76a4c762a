"""`quantitycheck.findings` walks an object once, by a trie of the Quantity field patterns; it
must report exactly what walking each pattern on its own reports, in the same order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.validate import quantitycheck, schemacheck
from reconciler.yamlio import escape_pointer_token

VERSION = schemacheck.kubernetes_versions()[-1]
QUANTITIES = st.sampled_from(["1", "500m", "2cores", "-1", "1Gi", 3, 1.5, "0.1", "nope", None])
NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "storage"])


def _each(node: Any, pattern: tuple[str, ...], at: tuple[str, ...]) -> Iterator[Any]:
    """The reference walk: one pattern at a time."""
    if not pattern:
        yield at, node
        return
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        if isinstance(node, list):
            for index, item in enumerate(node):
                yield from _each(item, rest, (*at, str(index)))
    elif head == "{}":
        if isinstance(node, Mapping):
            for key, item in node.items():
                yield from _each(item, rest, (*at, str(key)))
    elif isinstance(node, Mapping) and head in node:
        yield from _each(node[head], rest, (*at, head))


def _reference(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    patterns = quantitycheck.quantity_fields(VERSION, manifest["apiVersion"], manifest["kind"])
    found = []
    for pattern in patterns:
        for tokens, value in _each(manifest, pattern, ()):
            message = quantitycheck._problem(manifest, pattern, tokens, value)
            if message is not None:
                found.append(("".join(f"/{escape_pointer_token(t)}" for t in tokens), message))
    return found


RESOURCES = st.dictionaries(NAMES, QUANTITIES, max_size=3)
CONTAINERS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.just("c"),
            "resources": st.fixed_dictionaries(
                {}, optional={"requests": RESOURCES, "limits": RESOURCES}
            ),
        }
    ),
    max_size=3,
)
POD = st.fixed_dictionaries(
    {"containers": CONTAINERS},
    optional={
        "initContainers": CONTAINERS,
        "overhead": RESOURCES,
        "volumes": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.just("v"),
                    "emptyDir": st.fixed_dictionaries({}, optional={"sizeLimit": QUANTITIES}),
                }
            ),
            max_size=2,
        ),
    },
)


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": draw(st.sampled_from(["Deployment", "StatefulSet", "DaemonSet"])),
        "metadata": {"name": "w"},
        "spec": {"template": {"spec": draw(POD)}},
    }


@settings(max_examples=300, deadline=None)
@given(deployments())
def test_one_walk_finds_what_each_pattern_finds_in_the_same_order(manifest: dict[str, Any]) -> None:
    assert quantitycheck.findings(manifest, VERSION) == _reference(manifest)


@settings(max_examples=100, deadline=None)
@given(POD)
def test_a_pod_is_walked_the_same(pod: dict[str, Any]) -> None:
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod}
    assert quantitycheck.findings(manifest, VERSION) == _reference(manifest)
