"""Every resource quantity in the Kubernetes objects under `workloads/`, checked as the API
server checks it, at its own line.

The fields come from the Kubernetes OpenAPI schema of the repo's `kubernetesVersion`: every
place whose type is `resource.Quantity` (containers', init and ephemeral containers' requests
and limits, pod overhead and pod-level resources, PVC and volumeClaimTemplate storage,
ephemeral volumes, emptyDir sizeLimit, ResourceQuota, LimitRange, HPA targets …), found once
per kind by walking the schema. The schema alone types a quantity as "string or number", so
`cpu: 2cores` passed it; here each value must match Kubernetes' grammar (`quantity`), a value
in a resource list must not be negative, and a container's request must not exceed its limit
(the API server's "must be less than or equal to cpu limit"). Extended resources
(`nvidia.com/gpu`) and hugepages are not overcommitable: whole units for the former, and a
request needs a limit equal to it. A custom resource's CRD types
no quantity: only the pod template that `demand` reads in it is checked, so no later stage
meets a value it cannot parse. `references.check_objects` calls `findings` once an object's
schema passes; an object with a bad quantity drops out of the pass like any invalid one.

Called by `validate.overridecheck` and `validate.references`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from reconciler.kube import demand, quantity
from reconciler.validate import schemacheck
from reconciler.yamlio import escape_pointer_token

_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_ITEM, _VALUE = "*", "{}"
"""Path tokens: any item of a list, any value of a map (a resource list)."""
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})

Pattern = tuple[str, ...]


@cache
def quantity_fields(version: str, api_version: str, kind: str) -> tuple[Pattern, ...]:
    """The paths of every Quantity field of a built-in kind, as property names with `*` for a
    list item and `{}` for a map value; empty for kinds without a bundled schema."""
    schema = schemacheck.kube_schema(version, api_version, kind)
    if schema is None:
        return ()
    definitions = schemacheck.kube_definitions(version)
    return tuple(sorted(set(_walk(schema, definitions, frozenset()))))


def _walk(node: Any, definitions: Mapping[str, Any], seen: frozenset[str]) -> Iterator[Pattern]:
    if not isinstance(node, Mapping):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name == _QUANTITY:
            yield ()
        elif name not in seen and name in definitions:
            yield from _walk(definitions[name], definitions, seen | {name})
        return
    for combined in ("oneOf", "anyOf", "allOf"):
        for branch in node.get(combined) or ():
            yield from _walk(branch, definitions, seen)
    for field, sub in (node.get("properties") or {}).items():
        yield from ((field, *rest) for rest in _walk(sub, definitions, seen))
    yield from ((_ITEM, *rest) for rest in _walk(node.get("items"), definitions, seen))
    extra = node.get("additionalProperties")
    yield from ((_VALUE, *rest) for rest in _walk(extra, definitions, seen))


_POD_AT = {"Pod": ("spec",), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}
"""Where `demand.pod_template` finds the pod spec, by kind (else `spec.template.spec`)."""


@cache
def _template_fields(version: str, kind: str) -> tuple[Pattern, ...]:
    """The Quantity fields of the pod spec that `demand` reads in a custom resource, whose
    CRD (if any) types no quantity."""
    prefix = _POD_AT.get(kind, ("spec", "template", "spec"))
    pod = quantity_fields(version, "v1", "Pod")
    return tuple((*prefix, *p[1:]) for p in pod if p[0] == "spec")


def findings(manifest: Mapping[str, Any], version: str) -> list[tuple[str, str]]:
    """(JSON pointer, message) of every bad quantity of one object: a built-in kind by its
    schema, any other kind in the pod template dro would read (`demand`)."""
    api_version, kind = str(manifest.get("apiVersion")), str(manifest.get("kind"))
    patterns = quantity_fields(version, api_version, kind)
    if not patterns and not schemacheck.has_kube_schema(version, api_version, kind):
        patterns = _template_fields(version, kind) if demand.pod_template(manifest) else ()
    found = []
    # each value once, by one walk of the patterns' trie; reported in the patterns' order
    for _, pattern, tokens, value in sorted(_matches(manifest, _trie(patterns), ()), key=_first):
        message = _problem(manifest, pattern, tokens, value)
        if message is not None:
            found.append(("".join(f"/{escape_pointer_token(t)}" for t in tokens), message))
    return found


_END = ""
"""The trie key under which a pattern that ends at a node is kept (no property is named "")."""
Trie = dict[str, Any]


@cache
def _trie(patterns: tuple[Pattern, ...]) -> Trie:
    """The patterns as a trie of path tokens; a node's `_END` lists (index, pattern) of the
    patterns that end there."""
    root: Trie = {}
    for index, pattern in enumerate(patterns):
        node = root
        for token in pattern:
            node = node.setdefault(token, {})
        node.setdefault(_END, []).append((index, pattern))
    return root


def _matches(node: Any, trie: Trie, at: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    """(pattern index, pattern, path tokens, value) for each place of `node` that one of the
    trie's patterns names, visiting only the places some pattern goes through."""
    for index, pattern in trie.get(_END, ()):
        yield index, pattern, at, node
    if isinstance(node, list):
        items = trie.get(_ITEM)
        if items is not None:
            for position, item in enumerate(node):
                yield from _matches(item, items, (*at, str(position)))
        return
    if not isinstance(node, Mapping):
        return
    values = trie.get(_VALUE)
    if values is not None:
        for key, item in node.items():
            yield from _matches(item, values, (*at, str(key)))
    for token, below in trie.items():
        if token not in (_END, _ITEM, _VALUE) and token in node:
            yield from _matches(node[token], below, (*at, token))


def _first(match: tuple[Any, ...]) -> int:
    index: int = match[0]
    return index


def _problem(
    manifest: Mapping[str, Any], pattern: Pattern, tokens: tuple[str, ...], value: Any
) -> str | None:
    said = quantity.problem(value)
    if said is not None:
        return said
    amount = quantity.parse_quantity(value)
    if pattern[-1] == _VALUE and amount < 0:
        return f"{quantity.shown(value)}: must be greater than or equal to 0"
    if tokens[-2] not in ("requests", "limits") or not _CONTAINER_LISTS.intersection(tokens):
        return None
    name = tokens[-1]
    if _is_extended(name) and amount % 1 != 0:
        return f"{quantity.shown(value)}: must be an integer"
    if tokens[-2] == "limits":
        return None
    limit = _limit(manifest, tokens)
    if limit is None:
        if _overcommit_allowed(name):
            return None
        return f"{name} needs a limit equal to its request (not overcommitable)"
    said = f"{name} limit of {str(limit)[:40]}"
    if not _overcommit_allowed(name) and amount != quantity.parse_quantity(limit):
        return f"{quantity.shown(value)}: must be equal to {said}"
    if amount > quantity.parse_quantity(limit):
        return f"{quantity.shown(value)}: must be less than or equal to {said}"
    return None


def _is_native(name: str) -> bool:
    """Kubernetes' own resource names: no domain, or one in kubernetes.io."""
    domain = name.split("/", 1)[0] if "/" in name else ""
    return not domain or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")


def _is_extended(name: str) -> bool:
    """An extended resource (`nvidia.com/gpu`): counted in whole units, never overcommitted."""
    return not _is_native(name) and not name.startswith("requests.")


def _overcommit_allowed(name: str) -> bool:
    """Whether a request may sit below its limit: native resources except hugepages."""
    return _is_native(name) and not name.startswith("hugepages-")


def _limit(manifest: Mapping[str, Any], tokens: tuple[str, ...]) -> Any:
    """The limit beside a container's request, when it is a valid quantity."""
    node: Any = manifest
    for token in (*tokens[:-2], "limits", tokens[-1]):
        if isinstance(node, list):
            node = node[int(token)]
        elif isinstance(node, Mapping) and token in node:
            node = node[token]
        else:
            return None
    return None if quantity.problem(node) is not None else node
