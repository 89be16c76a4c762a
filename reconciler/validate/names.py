"""Kubernetes' own rules for names, namespaces, kinds and API groups, checked at validate.

Every document's `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` is checked the
way the API server checks it (k8s.io/apimachinery `pkg/util/validation` and
`pkg/api/validation/path`, and each kind's `pkg/apis/*/validation`), before anything is
scheduled or rendered, so that a name can never become a path that escapes its folder:

- every name is a path segment: not `.` or `..`, no `/` or `%` (the API server's generic rule);
- most names are DNS-1123 subdomains (lowercase letters, digits, `-` and `.`, at most 253);
- a Namespace's name and every `metadata.namespace` are DNS-1123 labels (no `.`, at most 63);
- a Service's name is a DNS-1035 label (it starts with a letter);
- RBAC kinds (Role, ClusterRole and their bindings) and CertificateSigningRequests are only
  path segments, so `system:aggregate-to-admin` and capitals are fine;
- a CustomResourceDefinition is named `<spec.names.plural>.<spec.group>`, an APIService
  `<spec.version>.<spec.group>`, and a CronJob's name has at most 52 characters (dro's
  Cluster at most 250: it is also the file name `clusters/<name>.yaml`);
- a kind, lowercased, is a DNS-1035 label (as a CRD's `spec.names.kind`), an API group a
  DNS-1123 subdomain and a version a DNS-1035 label.

dro adds one rule of its own for every kind: no control characters (newline, tab …) and no
backslash, since names become file names and appear in `FILE:LINE` reports; and no two objects
may share a rendered file (`shared_files`). This module is pure.

Called by `service.api.bodies`, `validate` and `validate.files`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.domain import Workload
from reconciler.errors import Problem

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
CRONJOB_NAME_MAX = 52
"""A CronJob's Jobs are named `<cronjob>-<11 characters>`, and a Job name is a 63-long label."""
CLUSTER_NAME_MAX = 250
"""dro's Cluster names its files `clusters/<name>.yaml`: 255 bytes at most with `.yaml`."""

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_DNS1035_LABEL = re.compile("[a-z]([-a-z0-9]*[a-z0-9])?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

RBAC = "rbac.authorization.k8s.io"
PATH_SEGMENT_KINDS = frozenset(
    {
        (RBAC, "Role"),
        (RBAC, "ClusterRole"),
        (RBAC, "RoleBinding"),
        (RBAC, "ClusterRoleBinding"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("apiregistration.k8s.io", "APIService"),
    }
)
"""Kinds whose names the API server checks only as path segments."""


def path_segment(name: str) -> str | None:
    """Why `name` is not a valid path segment (the rule for every kind), or None."""
    if name in (".", ".."):
        return f"may not be '{name}' (it would escape its folder)"
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain '{bad}' (it would escape its folder)"
    return None


def dns1123_label(name: str) -> str | None:
    """Why `name` is not a DNS-1123 label, or None."""
    if len(name) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters"
    if not _DNS1123_LABEL.fullmatch(name):
        return (
            "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def dns1123_subdomain(name: str) -> str | None:
    """Why `name` is not a DNS-1123 subdomain, or None."""
    if len(name) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        return (
            "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def dns1035_label(name: str) -> str | None:
    """Why `name` is not a DNS-1035 label, or None."""
    if len(name) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters"
    if not _DNS1035_LABEL.fullmatch(name):
        return (
            "must be a lowercase RFC 1035 label: lowercase letters, digits and '-', "
            "starting with a letter and ending with a letter or digit"
        )
    return None


def _dro_rule(name: str) -> str | None:
    """dro's own rule for every name: no control characters or backslash (file names)."""
    if _CONTROL.search(name):
        return "may not contain control characters such as a newline or a tab"
    if "\\" in name:
        return "may not contain '\\' (it would escape its folder)"
    return None


def name_problem(group: str, kind: str, name: Any, body: Mapping[str, Any]) -> str | None:
    """Why `name` is not a valid `metadata.name` for a `kind` of `group`, or None."""
    if not isinstance(name, str):
        return f"must be a string, got {type(name).__name__}"
    if not name:
        return "may not be empty"
    reason = _dro_rule(name) or path_segment(name)
    if reason or (group, kind) in PATH_SEGMENT_KINDS:
        return reason or _required_name(group, kind, name, body)
    if group == "" and kind == "Namespace":
        return dns1123_label(name)
    if group == "" and kind == "Service":
        return dns1035_label(name)
    return (
        dns1123_subdomain(name)
        or _length(group, kind, name)
        or _required_name(group, kind, name, body)
    )


def _length(group: str, kind: str, name: str) -> str | None:
    """The kinds whose names are shorter than a subdomain's 253 characters."""
    if group == "batch" and kind == "CronJob" and len(name) > CRONJOB_NAME_MAX:
        return f"must be no more than {CRONJOB_NAME_MAX} characters (a CronJob's Jobs add 11)"
    if group == "multicluster.io" and kind == "Cluster" and len(name) > CLUSTER_NAME_MAX:
        return (
            f"must be no more than {CLUSTER_NAME_MAX} characters "
            "(it names the file clusters/<name>.yaml)"
        )
    return None


def _required_name(group: str, kind: str, name: str, body: Mapping[str, Any]) -> str | None:
    """The name some kinds must have, derived from their spec."""
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return None
    if group == "apiextensions.k8s.io" and kind == "CustomResourceDefinition":
        names = spec.get("names")
        plural = names.get("plural") if isinstance(names, Mapping) else None
        wanted = f"{plural}.{spec.get('group')}"
        if isinstance(plural, str) and name != wanted:
            return f"must be spec.names.plural + '.' + spec.group: {wanted!r}"
    if group == "apiregistration.k8s.io" and kind == "APIService":
        wanted = f"{spec.get('version')}.{spec.get('group') or ''}"
        if name != wanted:
            return f"must be spec.version + '.' + spec.group: {wanted!r}"
    return None


def namespace_problem(namespace: Any) -> str | None:
    """Why `namespace` is not a valid `metadata.namespace`, or None ("" means the default)."""
    if not isinstance(namespace, str):
        return f"must be a string, got {type(namespace).__name__}"
    if namespace == "":
        return None
    return _dro_rule(namespace) or path_segment(namespace) or dns1123_label(namespace)


def api_version_problem(api_version: str) -> str | None:
    """Why `apiVersion` is not `[<group>/]<version>` with a valid group and version, or None."""
    reason = _dro_rule(api_version)
    if reason:
        return reason
    group, _, version = api_version.rpartition("/")
    if "/" in group:
        return "must be <version> or <group>/<version>, with one '/' at most"
    if group and dns1123_subdomain(group):
        return f"group {group!r} {dns1123_subdomain(group)}"
    if dns1035_label(version):
        return f"version {version!r} {dns1035_label(version)}"
    return None


def kind_problem(kind: str) -> str | None:
    """Why `kind` is not a kind Kubernetes allows (a CRD's `spec.names.kind` rule), or None."""
    reason = _dro_rule(kind)
    if reason:
        return reason
    if dns1035_label(kind.lower()):
        return (
            "may have mixed case, but must otherwise be a DNS-1035 label: letters, digits "
            f"and '-', starting with a letter, at most {DNS1123_LABEL_MAX} characters"
        )
    return None


def document_problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(JSON pointer, message) for each identity field of a document that breaks the rules.

    `body` has string `apiVersion` and `kind` and a `metadata` mapping with a `name`.
    """
    api_version, kind = str(body["apiVersion"]), str(body["kind"])
    found = []
    reason = api_version_problem(api_version)
    if reason:
        found.append(("/apiVersion", f"apiVersion {api_version!r} {reason}"))
    reason = kind_problem(kind)
    if reason:
        found.append(("/kind", f"kind {kind!r} {reason}"))
    if found:
        return found
    meta = body["metadata"]
    group = api_version.rpartition("/")[0]
    reason = name_problem(group, kind, meta["name"], body)
    if reason:
        found.append(("/metadata/name", f"metadata.name {meta['name']!r} {reason}"))
    if "namespace" in meta:
        reason = namespace_problem(meta["namespace"])
        if reason:
            found.append(
                ("/metadata/namespace", f"metadata.namespace {meta['namespace']!r} {reason}")
            )
    return found


def shared_files(
    objects: Sequence[Workload], stems: Sequence[tuple[str, str]] | None = None
) -> list[Problem]:
    """An error for each object whose rendered file name (`<namespace>/<kind>[.<group>]-<name>`,
    lowercase, `ResourceKey.file_stem`) is already another object's: one would overwrite the
    other (`v1 Deployment` beside `apps/v1 Deployment`, or a name crafted to equal a hash).
    `stems` are the objects' (folder, stem) when known already (`validate.memo.Facts`)."""
    if stems is None:
        stems = [(w.key.folder.lower(), w.key.file_stem) for w in objects]
    seen: dict[tuple[str, str], Workload] = {}
    problems = []
    for workload, where in zip(objects, stems, strict=True):
        first = seen.setdefault(where, workload)
        if first is not workload:
            problems.append(
                Problem(
                    path=workload.origin.path,
                    line=workload.origin.line_of("/metadata/name"),
                    pointer="/metadata/name",
                    message=f"{workload.key} would be written to the same file, "
                    f"{where[0]}/{where[1]}.yaml, as {first.key} "
                    f"({first.origin.path}:{first.origin.line})",
                )
            )
    return problems
