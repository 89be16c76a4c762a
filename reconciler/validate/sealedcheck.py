"""SOPS-encrypted Secrets in the source: kept byte for byte, and never changed by an override.

sops' MAC covers every value of the file it wrote, in order (`kube.sealed`), so dro renders an
encrypted Secret as the bytes of its source file: `sealed_file` keeps those bytes when the
encrypted Secret is the only document of its file (a MAC over several documents could not
survive splitting them), and `attach` gives them to the workload. An override policy whose
rules would change an encrypted Secret on any cluster is an error at the policy
(`override_problems`); a policy that selects it but changes nothing (an image override, say)
is fine.

Called by `validate` and `validate.files`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from reconciler import render
from reconciler.domain import (
    Cluster,
    Document,
    OverridePolicy,
    OverrideRule,
    SourceFile,
    Workload,
)
from reconciler.errors import Problem, ValidationFailed
from reconciler.kube import sealed
from reconciler.render import overrides


def sealed_file(file: SourceFile, documents: Sequence[Document], problems: list[Problem]) -> bool:
    """Whether `file` holds an encrypted Secret that dro can render as it is (alone in its
    file); reports the ones that are not alone."""
    found = [doc for doc in documents if sealed.is_sealed(doc.body)]
    if not found:
        return False
    if len(documents) == 1:
        return True
    for doc in found:
        problems.append(
            Problem(
                path=doc.origin.path,
                line=doc.origin.line,
                pointer="/sops",
                message="an encrypted Secret must be the only document of its file: sops' "
                "MAC covers the whole file, and dro renders it as written",
            )
        )
    return False


def attach(workloads: Sequence[Workload], files: Mapping[str, bytes]) -> list[Workload]:
    """The workloads, each encrypted Secret carrying its source file's bytes."""
    return [
        replace(w, sealed=files[w.origin.path])
        if w.origin.path in files and sealed.is_sealed(w.manifest)
        else w
        for w in workloads
    ]


def override_problems(
    workloads: Sequence[Workload],
    policies: Sequence[OverridePolicy],
    clusters: Sequence[Cluster],
) -> list[Problem]:
    """An error at each override rule that would change an encrypted Secret on a cluster."""
    found: dict[tuple[str, int, str], Problem] = {}
    for workload in workloads:
        if not workload.sealed:
            continue
        for policy, _, rule in render.rules_for(workload, policies):
            for cluster in clusters:
                targeted = rule.target is None or rule.target.matches(cluster.name, cluster.labels)
                if not targeted or not _changes(workload, policy, rule, cluster.name):
                    continue
                pointer = rule.pointers[0] if rule.pointers else "/spec"
                found[(policy.origin.path, policy.origin.line_of(pointer), pointer)] = Problem(
                    path=policy.origin.path,
                    line=policy.origin.line_of(pointer),
                    pointer=pointer,
                    message=f"{policy.ref} would change the SOPS-encrypted Secret "
                    f"{workload.key} ({workload.origin.path}) on cluster {cluster.name}: "
                    "sops' MAC covers every value, so dro renders it as written; change "
                    "the Secret itself, or narrow the policy's resourceSelectors",
                )
                break
    return list(found.values())


def _changes(workload: Workload, policy: OverridePolicy, rule: OverrideRule, cluster: str) -> bool:
    manifest: dict[str, Any] = render.plain_copy(workload.manifest)
    try:
        overrides.apply_rule(manifest, policy, rule, cluster=cluster, key=workload.key)
    except ValidationFailed:
        return True
    return manifest != workload.manifest
