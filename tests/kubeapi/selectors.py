"""Label selectors (equality and set-based) and field selectors, as list queries use them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import ApiError, bad_request

ObjectTest = Callable[[dict[str, Any]], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_SET_FORM = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALITY_FORM = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*({_VALUE})\s*$")
_COMPARE_FORM = re.compile(rf"^\s*({_KEY})\s*([<>])\s*(-?\d+)\s*$")
_EXISTS_FORM = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")

# Fields each kind lets clients select on, besides metadata.name and metadata.namespace.
SELECTABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "Pod": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "Node": ("spec.unschedulable",),
    "Namespace": ("status.phase",),
    "Secret": ("type",),
    "Event": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "ReplicaSet": ("status.replicas",),
    "Job": ("status.successful",),
}


def split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _label_requirement(text: str) -> Callable[[dict[str, str]], bool]:
    """Compile one label requirement into a test over a label map."""
    if match := _SET_FORM.match(text):
        key, operator, raw_values = match.groups()
        values = {value.strip() for value in raw_values.split(",") if value.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQUALITY_FORM.match(text):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _COMPARE_FORM.match(text):
        key, operator, bound = match.group(1), match.group(2), int(match.group(3))

        def compare(labels: dict[str, str]) -> bool:
            raw = labels.get(key, "")
            if not re.fullmatch(r"-?\d+", raw):
                return False
            return int(raw) > bound if operator == ">" else int(raw) < bound

        return compare
    if match := _EXISTS_FORM.match(text):
        negated, key = match.groups()
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: {text.strip()!r}")


def label_selector(text: str) -> ObjectTest:
    """Compile a `labelSelector` query into a test over whole objects."""
    tests = [_label_requirement(part) for part in split_top_level(text)]

    def matches(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return matches


def field_value(obj: dict[str, Any], dotted: str) -> str:
    """Read a dotted field as the string a field selector compares (missing reads as "")."""
    node: Any = obj
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return ""
        node = node[part]
    if isinstance(node, bool):
        return "true" if node else "false"
    return "" if node is None else str(node)


def field_selector(text: str, kind: str) -> ObjectTest:
    """Compile a `fieldSelector` query for objects of `kind` (400 for unsupported fields)."""
    allowed = {"metadata.name", "metadata.namespace", *SELECTABLE_FIELDS.get(kind, ())}
    tests: list[ObjectTest] = []
    for part in split_top_level(text):
        match = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*", part)
        if not match:
            raise bad_request(f"invalid selector: {text!r}; can't understand {part!r}")
        name, operator, value = match.groups()
        if name not in allowed:
            raise ApiError(400, f'field label not supported: "{name}"')
        tests.append(_field_test(name, operator, value))
    return lambda obj: all(test(obj) for test in tests)


def _field_test(name: str, operator: str, value: str) -> ObjectTest:
    """Compile one `name<op>value` field requirement."""
    if operator == "!=":
        return lambda obj: field_value(obj, name) != value
    return lambda obj: field_value(obj, name) == value
