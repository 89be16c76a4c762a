"""The few validation rules that answer 422 Invalid: object names, label and annotation keys."""

from __future__ import annotations

import re
from typing import Any

from .errors import invalid
from .resources import ResourceType

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
PATH_SEGMENT_KINDS = frozenset({"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})
MAX_LABEL_LENGTH = 63
MAX_SUBDOMAIN_LENGTH = 253


def name_problem(rtype: ResourceType, name: str) -> str | None:
    """Return why `name` is not a valid name for this type, or None."""
    if rtype.kind == "Namespace":
        if len(name) > MAX_LABEL_LENGTH or not DNS_LABEL.fullmatch(name):
            return "a lowercase RFC 1123 label must consist of alphanumeric characters or '-'"
        return None
    if rtype.kind in PATH_SEGMENT_KINDS:
        if name in (".", "..") or "/" in name or "%" in name:
            return "may not be '.' or '..' and may not contain '/' or '%'"
        return None
    if len(name) > MAX_SUBDOMAIN_LENGTH or not DNS_SUBDOMAIN.fullmatch(name):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def key_problem(key: str) -> str | None:
    """Return why `key` is not a valid label or annotation key, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > MAX_SUBDOMAIN_LENGTH or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name or len(name) > MAX_LABEL_LENGTH or not QUALIFIED_NAME.fullmatch(name):
        return "name part must consist of alphanumeric characters, '-', '_' or '.'"
    return None


def value_problem(value: Any) -> str | None:
    """Return why `value` is not a valid label value, or None."""
    if not isinstance(value, str):
        return "must be a string"
    if value and (len(value) > MAX_LABEL_LENGTH or not QUALIFIED_NAME.fullmatch(value)):
        return "a valid label must be an empty string or consist of alphanumeric characters"
    return None


def crd_problems(crd: dict[str, Any], name: str) -> list[tuple[str, str]]:
    """Return the problems of a CustomResourceDefinition's spec."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    problems = []
    if not spec.get("group") or not names.get("plural") or not names.get("kind"):
        problems.append(("spec", "group, names.plural and names.kind are required"))
    elif name != f"{names['plural']}.{spec['group']}":
        problems.append(("metadata.name", 'must be spec.names.plural+"."+spec.group'))
    versions = spec.get("versions") or []
    if not versions:
        problems.append(("spec.versions", "must have at least one version"))
    elif sum(1 for version in versions if version.get("storage")) != 1:
        problems.append(
            ("spec.versions", "must have exactly one version marked as storage version")
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        problems.append(("spec.scope", 'supported values: "Cluster", "Namespaced"'))
    return problems


def validate(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Raise 422 Invalid if the object breaks one of the rules above."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    problems: list[tuple[str, str]] = []
    if problem := name_problem(rtype, name):
        problems.append(("metadata.name", f'Invalid value: "{name}": {problem}'))
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    for key, value in labels.items():
        if problem := key_problem(key) or value_problem(value):
            problems.append(("metadata.labels", f'Invalid value: "{key}": {problem}'))
    for key, value in annotations.items():
        if problem := key_problem(key) or (None if isinstance(value, str) else "must be a string"):
            problems.append(("metadata.annotations", f'Invalid value: "{key}": {problem}'))
    if rtype.kind == "CustomResourceDefinition" and not rtype.custom:
        problems += crd_problems(obj, name)
    if problems:
        raise invalid(rtype.kind, rtype.group, name, problems)
