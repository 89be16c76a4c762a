"""What each source file contributes to a pass on its own: its documents routed by folder,
shaped, checked against dro's schemas and normalised (clusters, policies, datasets, objects).

A file's `Part` depends on its path and its bytes alone, so `validate.memo` keeps it between
passes and a pass rebuilds only the parts of files whose bytes changed; `validate` joins the
parts in the source's file order, which gives the same lists a walk of every file gives.

Called by `validate` and `validate.memo`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from reconciler import yamlio
from reconciler.domain import (
    DRO_API_VERSION,
    Cluster,
    Document,
    Origin,
    OverridePolicy,
    PlacementPolicy,
    SourceFile,
)
from reconciler.domain.data import DataAccess
from reconciler.errors import Problem, Severity
from reconciler.validate import (
    clusters,
    datamodel,
    listkinds,
    locations,
    names,
    policies,
    references,
    rollouts,
    schemacheck,
    sealedcheck,
)

DRO = DRO_API_VERSION


class Part:
    """The problems and the normalised pieces of one file, or of the whole source once every
    file's part is `join`ed in the source's file order."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.config_docs: list[Document] = []
        self.cluster_list: list[Cluster] = []
        self.placement: list[PlacementPolicy] = []
        self.placement_docs: list[Document] = []
        self.overrides: list[OverridePolicy] = []
        self.objects: list[Document] = []
        self.datasets: dict[str, Document] = {}
        self.topology: Document | None = None
        self.data_refs: list[tuple[DataAccess, Origin, str]] = []
        """Every data access a policy or an annotation declares, where it is written."""
        self.list_spans: list[listkinds.Span] = []
        """Where the items of each expanded `kind: List` sit, for their problems' pointers."""
        self.sealed: dict[str, bytes] = {}
        """The source files that hold a SOPS-encrypted Secret alone, by path."""
        self.crds: list[Document] = []
        """The CustomResourceDefinitions among `objects`."""

    def problem(
        self, doc: Document, pointer: str, message: str, severity: Severity = Severity.ERROR
    ) -> None:
        """Record a problem at `pointer` of `doc`."""
        self.problems.append(
            Problem(
                path=doc.origin.path,
                line=doc.origin.line_of(pointer),
                pointer=pointer,
                message=message,
                severity=severity,
            )
        )

    def join(self, other: Part) -> None:
        """Append a later file's part, as if its documents had been walked after these."""
        self.problems += other.problems
        self.config_docs += other.config_docs
        self.cluster_list += other.cluster_list
        self.placement += other.placement
        self.placement_docs += other.placement_docs
        self.overrides += other.overrides
        self.objects += other.objects
        self.crds += other.crds
        self.datasets.update(other.datasets)
        if other.topology is not None:
            self.topology = other.topology
        self.data_refs += other.data_refs
        self.list_spans += other.list_spans
        self.sealed.update(other.sealed)


def route(path: str) -> str | None:
    """What a source path holds, by its folder; None for a path dro does not read."""
    if path == "dro.yaml":
        return "config"
    if path == "topology.yaml":
        return "topology"
    top = path.split("/", 1)[0]
    if top == "workloads" and path.rsplit("/", 1)[-1] == "dro-helm.yaml":
        return "helm"  # beside a Helm chart: how load.builds renders it
    return {
        "clusters": "cluster",
        "datasets": "dataset",
        "workloads": "object",
        "policies": "policy",
    }.get(top)


_EXPECTED = {
    "config": {"SchedulerConfiguration"},
    "topology": {"Topology"},
    "cluster": {"Cluster"},
    "dataset": {"DataSet"},
    "helm": {"HelmRelease"},
}


def part(file: SourceFile, kind: str, documents: Sequence[Document] | Problem) -> Part:
    """The part of one routed file (`kind` from `route`), from its parsed documents or the
    problem that makes it unreadable."""
    into = Part()
    if isinstance(documents, Problem):
        into.problems.append(documents)
        return into
    if kind == "object":
        documents = listkinds.expand(documents, into.problems, into.list_spans)
        if sealedcheck.sealed_file(file, documents, into.problems):
            into.sealed[file.path] = file.data
    if kind in ("config", "topology", "cluster", "dataset", "helm") and len(documents) > 1:
        into.problem(documents[1], "", f"{file.path} must hold exactly one document")
    for doc in documents:
        if _shape_ok(doc, into):
            _accept(doc, kind, into)
    into.crds = [doc for doc in into.objects if references.is_crd(doc.body)]
    return into


def parsed(
    path: str, data: bytes, parse: Callable[[str, bytes], list[Document]]
) -> list[Document] | Problem:
    """A file's documents by `parse`, or the problem that makes it unreadable."""
    try:
        return parse(path, data)
    except yamlio.YamlError as error:
        return error.problem


def _shape_ok(doc: Document, into: Part) -> bool:
    body = doc.body
    if not isinstance(body, Mapping):
        into.problem(doc, "", f"a document must be a mapping, got {type(body).__name__}")
        return False
    ok = True
    for field in ("apiVersion", "kind"):
        if not isinstance(body.get(field), str) or not body.get(field):
            into.problem(doc, f"/{field}" if field in body else "", f"missing or empty {field}")
            ok = False
    meta = body.get("metadata")
    if not isinstance(meta, Mapping) or "name" not in meta:
        into.problem(doc, "/metadata" if "metadata" in body else "", "missing metadata.name")
        return False
    if not ok:
        return False
    for pointer, message in names.document_problems(body):
        into.problem(doc, pointer, message)
        ok = False
    return ok


def _check_dro_doc(doc: Document, route: str, into: Part) -> bool:
    api_version, kind = doc.body["apiVersion"], doc.body["kind"]
    if route in _EXPECTED and (api_version != DRO or kind not in _EXPECTED[route]):
        into.problem(
            doc,
            "/kind",
            f"{doc.origin.path} must hold a {DRO} "
            f"{' or '.join(sorted(_EXPECTED[route]))}, got "
            f"{api_version} {kind}",
        )
        return False
    if route == "policy" and not (
        policies.is_placement_kind(api_version, kind)
        or policies.is_override_kind(api_version, kind)
    ):
        into.problem(
            doc,
            "/kind",
            f"unknown policy kind {api_version} {kind}; expected "
            "ResourcePlacementPolicy, ClusterOverridePolicy or "
            "PropagationPolicy (multicluster.io/v1alpha1), or Karmada's "
            "PropagationPolicy, ClusterPropagationPolicy, OverridePolicy "
            "or ClusterOverridePolicy (policy.karmada.io/v1alpha1)",
        )
        return False
    errors = schemacheck.check_dro(api_version, kind, doc.body)
    for error in errors:
        into.problem(doc, error.pointer, error.message)
    unsupported = policies.karmada_problems(doc.body) if route == "policy" else []
    unsupported += locations.problems(doc.body) if route == "policy" else []
    for pointer, message in unsupported:
        into.problem(doc, pointer, message)
    return not errors and not unsupported


def _accept(doc: Document, route: str, into: Part) -> None:
    if route == "object" and policies.is_policy_document(doc.body["apiVersion"], doc.body["kind"]):
        route = "policy"  # Karmada's tutorials keep a policy beside its workload
    if route == "policy" and doc.body["apiVersion"].startswith(policies.KARMADA_POLICY_GROUP + "/"):
        doc = dataclasses.replace(doc, body=policies.without_nulls(doc.body))
    if route == "object":
        into.objects.append(doc)
        return
    if not _check_dro_doc(doc, route, into):
        return
    if route == "config":
        into.config_docs.append(doc)
        raw_rollout = (doc.body.get("spec") or {}).get("rollout")
        for pointer, message in rollouts.problems(raw_rollout, "/spec/rollout"):
            into.problem(doc, pointer, message)
    elif route == "topology":
        into.topology = doc
    elif route == "helm":
        return
    elif route == "dataset":
        into.datasets[doc.body["metadata"]["name"]] = doc
    elif route == "cluster":
        _accept_cluster(doc, into)
    elif policies.is_placement_kind(doc.body["apiVersion"], doc.body["kind"]):
        into.placement.append(policies.placement_policy(doc))
        into.placement_docs.append(doc)
        placement = (doc.body.get("spec") or {}).get("placement") or {}
        for pointer, message in rollouts.problems(
            placement.get("rollout"), "/spec/placement/rollout"
        ):
            into.problem(doc, pointer, message)
        raw = placement.get("data") or ()
        pointer = "/spec/placement/data"
        for index, access in enumerate(datamodel.accesses(raw, doc.origin, pointer, into.problems)):
            into.data_refs.append((access, doc.origin, f"{pointer}/{index}/dataSet"))
    else:
        into.overrides.append(policies.override_policy(doc))


def _accept_cluster(doc: Document, into: Part) -> None:
    name = doc.body["metadata"]["name"]
    stem = doc.origin.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if stem != name:
        into.problem(
            doc,
            "/metadata/name",
            f"cluster {name!r} must be declared in clusters/{name}.yaml, not {doc.origin.path}",
        )
    into.cluster_list.append(clusters.cluster(doc, into.problems))
