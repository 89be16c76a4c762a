"""What requests address and what they produce: targets, write options, outcomes, bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from .errors import bad_request
from .fieldsets import SCOPE_ALL, SCOPE_MAIN, SCOPE_STATUS
from .resources import ResourceType


@dataclass(frozen=True)
class Target:
    """The object (or collection) a request addresses."""

    rtype: ResourceType
    namespace: str
    name: str = ""
    subresource: str = ""


@dataclass(frozen=True)
class WriteOptions:
    """Query options of a write: field manager and force (None when not given), dry-run."""

    manager: str | None
    default_manager: str
    dry_run: bool = False
    force: bool | None = None


@dataclass
class Outcome:
    """A response: HTTP status, JSON body, and whether stored state changed; or, for a
    WATCH, the stream of its events (`watching.Stream`: None entries mark idle moments)."""

    code: int
    body: dict[str, Any]
    changed: bool = False
    events: Iterator[dict[str, Any] | None] | None = None


def write_scope(rtype: ResourceType, subresource: str) -> str:
    """Return the field scope a write may touch (status is separate for most types)."""
    if subresource == "status":
        return SCOPE_STATUS
    return SCOPE_MAIN if rtype.has_status else SCOPE_ALL


class JsonCompatibleLoader(yaml.SafeLoader):
    """A safe YAML loader leaving timestamps as strings, as the apiserver's YAML-to-JSON does."""


JsonCompatibleLoader.yaml_implicit_resolvers = {
    first: [(tag, rule) for tag, rule in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_body(raw: bytes, allow_yaml: bool = False) -> Any:
    """Decode a JSON (or, for apply, YAML) request body, or raise 400."""
    try:
        return json.loads(raw or b"null")
    except ValueError:
        if not allow_yaml:
            raise bad_request("the request body is not valid JSON") from None
    try:
        return yaml.load(raw, Loader=JsonCompatibleLoader)
    except yaml.YAMLError as error:
        raise bad_request(f"the request body is not valid YAML: {error}") from None
