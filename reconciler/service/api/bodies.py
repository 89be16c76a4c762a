"""The API's bodies and the policy documents kept in git, one turned into the other.

- `propagationpolicies` speak the draft's body `{name, resourceType, targetClusters,
  namespace?}`; git keeps it as a `multicluster.io/v1alpha1` PropagationPolicy whose `spec` holds
  every field but `name` (DESIGN.md, "The draft's PropagationPolicy"). Any other field of the
  body goes into `spec` too, where the schema rejects it (422), as `dro validate` would.
- `resourceplacementpolicies` and `clusteroverridepolicies` are the documents themselves.

A body that is not an object, is nested deeper than a policy file may be, has no name, a name
that is not a DNS-1123 subdomain or could escape its folder (`/`, `..`, a newline), or the wrong
kind or apiVersion, is 400 INVALID_BODY; everything else is left to the validator. A merge
patch follows RFC 7396 and may not rename. This module is pure.

Called by `service.api.snapshot` and `service.api.store`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from reconciler.domain import DRO_API_VERSION
from reconciler.service.api import model
from reconciler.validate import names
from reconciler.yamlio import guard as yamlguard

GROUP = DRO_API_VERSION.split("/", 1)[0]
DRAFT_BODY = "propagationpolicies"
"""The one resource served in the draft's body form rather than as its document."""


def kind_of(resource: str) -> str:
    """The policy kind of an API resource; an unknown resource is a bug of the caller."""
    if resource not in model.KINDS:
        raise ValueError(f"unknown API resource {resource!r}")
    return model.KINDS[resource]


def invalid(message: str, **details: Any) -> model.ApiError:
    """400 INVALID_BODY with `message`."""
    return model.ApiError(400, model.INVALID_BODY, message, details)


def check_name(name: Any) -> str:
    """`name` when it is a valid policy name, else 400 INVALID_BODY saying why."""
    if not isinstance(name, str) or not name:
        raise invalid("the policy needs a name (a non-empty string)")
    reason = names.name_problem(GROUP, "PropagationPolicy", name, {})
    if reason:
        raise invalid(f"name {name!r} {reason}", policyName=name)
    return name


def check_depth(value: Any, what: str = "the body") -> None:
    """400 INVALID_BODY when `value` nests deeper than a policy file may (`yamlguard`): the
    file written from it would be refused, and deep values are walked without recursion."""
    level: list[Any] = [value]
    for _ in range(yamlguard.MAX_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, Mapping | list)
            for child in (item.values() if isinstance(item, Mapping) else item)
        ]
        if not level:
            return
    if any(isinstance(item, Mapping | list) and item for item in level):
        raise invalid(f"{what} is nested deeper than {yamlguard.MAX_DEPTH} levels")


def document_from_body(resource: str, body: Any) -> dict[str, Any]:
    """The document git keeps for a POST's body; 400 INVALID_BODY on a shape error."""
    kind = kind_of(resource)
    if not isinstance(body, Mapping):
        raise invalid(f"the body must be a JSON object, got {_type(body)}")
    check_depth(body)
    if resource == DRAFT_BODY:
        name = check_name(body.get("name"))
        spec = {key: copy.deepcopy(value) for key, value in body.items() if key != "name"}
        return {
            "apiVersion": DRO_API_VERSION,
            "kind": kind,
            "metadata": {"name": name},
            "spec": spec,
        }
    if body.get("apiVersion") != DRO_API_VERSION or body.get("kind") != kind:
        raise invalid(
            f"the body must be a {DRO_API_VERSION} {kind}, got "
            f"{_shown(body.get('apiVersion'))} {_shown(body.get('kind'))}"
        )
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        raise invalid("the body needs metadata with a name")
    check_name(metadata.get("name"))
    return copy.deepcopy(dict(body))


def body_of(resource: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """A stored document as the API serves it: the draft's body form for
    propagationpolicies, else the document itself."""
    if resource != DRAFT_BODY:
        return copy.deepcopy(dict(document))
    spec = document.get("spec")
    served: dict[str, Any] = {"name": document["metadata"]["name"]}
    if isinstance(spec, Mapping):
        served.update({k: copy.deepcopy(v) for k, v in spec.items() if k != "name"})
    return served


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396: `patch` applied to `target` (neither is changed)."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def patched(resource: str, document: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """The document after a merge patch of its served form; 400 INVALID_BODY when the patch
    is not an object or would rename the policy or change its kind."""
    if not isinstance(patch, Mapping):
        raise invalid(f"a merge patch must be a JSON object, got {_type(patch)}")
    check_depth(patch, "the merge patch")
    name = document["metadata"]["name"]
    after = merge_patch(body_of(resource, document), patch)
    if resource == DRAFT_BODY:
        if after.get("name") != name:
            raise invalid("a policy cannot be renamed by PATCH", policyName=name)
        spec = {key: value for key, value in after.items() if key != "name"}
        return {**copy.deepcopy(dict(document)), "spec": spec}
    metadata = after.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("name") != name:
        raise invalid("a policy cannot be renamed by PATCH", policyName=name)
    if after.get("apiVersion") != document.get("apiVersion") or after.get("kind") != document.get(
        "kind"
    ):
        raise invalid("PATCH cannot change a policy's apiVersion or kind", policyName=name)
    return dict(after)


def _type(value: Any) -> str:
    return {list: "an array", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _shown(value: Any) -> str:
    return value if isinstance(value, str) and value else "(none)"
