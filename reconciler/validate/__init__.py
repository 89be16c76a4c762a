"""Validate a `Source` and turn it into a `Spec`, reporting every problem in one pass.

Each file is parsed safely (`yamlio`), routed by its folder, checked against dro's JSON Schemas
or the Kubernetes OpenAPI (`schemacheck`), normalised (`clusters`, `policies`, `workloads`), and
then checked as a whole: duplicate objects, references to unknown clusters, and two placement
policies that claim one workload with the same precedence. Any error fails the whole source:
nothing is scheduled, committed or applied from it.

Called by `laststate`, `pipeline`, `pipeline.sharded`, `service.api.store` and `simulate.trace`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reconciler import yamlio
from reconciler.domain import (
    DRO_API_VERSION,
    Cluster,
    Document,
    MoveBudget,
    Origin,
    Output,
    OverridePolicy,
    PlacementPolicy,
    Prediction,
    Rebalance,
    ResourceKey,
    SchedulerConfig,
    Scoring,
    Source,
    Spec,
    Workload,
    durations,
)
from reconciler.domain.data import DataAccess
from reconciler.errors import Problem, Severity, ValidationFailed
from reconciler.kube import movehooks
from reconciler.validate import (
    clusters,
    datamodel,
    defaulted,
    dependencies,
    guard,
    listkinds,
    locations,
    names,
    overridecheck,
    parsecache,
    policies,
    rollouts,
    schemacheck,
    sealedcheck,
)
from reconciler.validate import references as refs
from reconciler.validate.removed import removed_clusters as removed_clusters

DRO = DRO_API_VERSION


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What `check` found: the spec when there was no error, and every problem (warnings too)."""

    spec: Spec | None
    problems: tuple[Problem, ...]


class _Collector:
    """Accumulates problems and the normalised pieces while walking the documents."""

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
        self.sealed: dict[str, bytes] = {}
        """The source files that hold a SOPS-encrypted Secret alone, by path."""
        """Where the items of each expanded `kind: List` sit, for their problems' pointers."""

    def problem(
        self, doc: Document, pointer: str, message: str, severity: Severity = Severity.ERROR
    ) -> None:
        self.problems.append(
            Problem(
                path=doc.origin.path,
                line=doc.origin.line_of(pointer),
                pointer=pointer,
                message=message,
                severity=severity,
            )
        )


def _route(path: str) -> str | None:
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


def _shape_ok(doc: Document, into: _Collector) -> bool:
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


def _check_dro_doc(doc: Document, route: str, into: _Collector) -> bool:
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


def _accept(doc: Document, route: str, into: _Collector) -> None:
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


def _accept_cluster(doc: Document, into: _Collector) -> None:
    name = doc.body["metadata"]["name"]
    stem = doc.origin.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if stem != name:
        into.problem(
            doc,
            "/metadata/name",
            f"cluster {name!r} must be declared in clusters/{name}.yaml, not {doc.origin.path}",
        )
    into.cluster_list.append(clusters.cluster(doc, into.problems))


def _parse(source: Source, into: _Collector, parsed: parsecache.ParseCache | None) -> None:
    into.problems += source.problems
    for path, what in source.links:
        into.problems.append(
            Problem(
                path=path,
                line=1,
                message=f"{path} is {what}, which dro does not read: the objects it holds "
                "would silently drop out of the placement; commit the files themselves",
            )
        )
    for file in source.files:
        route = _route(file.path)
        if route is None:
            continue
        try:
            documents = (parsed.documents if parsed else yamlio.parse_documents)(
                file.path, file.data
            )
        except yamlio.YamlError as error:
            into.problems.append(error.problem)
            continue
        if route == "object":
            documents = listkinds.expand(documents, into.problems, into.list_spans)
            if sealedcheck.sealed_file(file, documents, into.problems):
                into.sealed[file.path] = file.data
        if route in ("config", "topology", "cluster", "dataset", "helm") and len(documents) > 1:
            into.problem(documents[1], "", f"{file.path} must hold exactly one document")
        for doc in documents:
            if _shape_ok(doc, into):
                _accept(doc, route, into)


def _scoring(raw: Mapping[str, Any]) -> Scoring:
    default = Scoring()
    return Scoring(
        adaptive=bool(raw.get("adaptive", default.adaptive)),
        low_water_level=float(raw.get("lowWaterLevel", default.low_water_level)),
        high_water_level=float(raw.get("highWaterLevel", default.high_water_level)),
    )


def _rebalance(spec: Mapping[str, Any]) -> Rebalance:
    raw = spec.get("rebalance") or {}
    default = Rebalance()
    moves = raw.get("maxMovesPerPass")
    return Rebalance(
        threshold=float(raw.get("threshold", default.threshold)),
        max_moves=default.max_moves if moves is None else MoveBudget.parse(moves),
        cooldown=_seconds(raw.get("cooldown"), default.cooldown),
        unschedulable_after=_seconds(raw.get("unschedulableAfter"), default.unschedulable_after),
        failover_after=_seconds((spec.get("failover") or {}).get("after"), default.failover_after),
    )


def _prediction(doc: Document, spec: Mapping[str, Any], into: _Collector) -> Prediction:
    raw = spec.get("prediction") or {}
    default = Prediction()
    result = Prediction(
        enabled=bool(raw.get("enabled", default.enabled)),
        horizon=_seconds(raw.get("horizon"), default.horizon),
        window=_seconds(raw.get("window"), default.window),
        step=_seconds(raw.get("step"), default.step),
        band=float(raw.get("band", default.band)),
    )
    for key in ("horizon", "window", "step"):
        if getattr(result, key) <= 0:
            into.problem(doc, f"/spec/prediction/{key}", f"prediction {key} must be above 0")
            return default
    if result.step > result.horizon or result.horizon > result.window:
        into.problem(
            doc,
            "/spec/prediction",
            "prediction needs step <= horizon <= window (the history must cover the horizon "
            "at least once, on a grid finer than the horizon)",
        )
        return default
    return result


def _output(raw: Mapping[str, Any]) -> Output:
    return Output(
        karmada=bool(raw.get("karmada", False)),
        cluster_profile_namespace=raw.get("clusterProfileNamespace"),
    )


def _seconds(text: str | None, default: float) -> float:
    return default if text is None else durations.seconds(text)


def _config(into: _Collector) -> SchedulerConfig:
    if not into.config_docs:
        return SchedulerConfig()
    doc = into.config_docs[0]
    spec: Mapping[str, Any] = doc.body.get("spec") or {}
    limit = dict(SchedulerConfig().water_level_limit)
    limit.update(spec.get("waterLevelLimit") or {})
    version = spec.get("kubernetesVersion")
    if version is not None:
        minor = ".".join(str(version).split(".")[:2])
        if minor not in schemacheck.kubernetes_versions():
            into.problem(
                doc,
                "/spec/kubernetesVersion",
                f"Kubernetes {version} has no bundled schema; choose one of "
                f"{', '.join(schemacheck.kubernetes_versions())}",
            )
            version = None
        else:
            version = minor
    return SchedulerConfig(
        origin=doc.origin,
        water_level_limit=MappingProxyType(limit),
        water_level_ceiling=MappingProxyType(dict(spec.get("waterLevelCeiling") or {})),
        default_placement=policies.default_placement(spec.get("defaultPlacement") or {}),
        plugin_weights=MappingProxyType(dict(spec.get("pluginWeights") or {})),
        scoring=_scoring(spec.get("scoring") or {}),
        rebalance=_rebalance(spec),
        prediction=_prediction(doc, spec, into),
        output=_output(spec.get("output") or {}),
        disruption=policies.disruption_budget(spec),
        kubernetes_version=version,
        rollout=rollouts.parse(spec.get("rollout")),
        raw=spec,
    )


def check(
    source: Source,
    *,
    ceiling: guard.Guard = guard.BUILTIN,
    parsed: parsecache.ParseCache | None = None,
) -> Result:
    """Validate every file; return the Spec (None on any error) and all problems, sorted.
    `ceiling` is the operator's guard (`guard.load_ceiling`), which dro.yaml may narrow.
    `parsed` keeps each file's parse between passes (`pipeline.Warm`); the checks run all
    the same."""
    into = _Collector()
    _parse(source, into, parsed)
    config = _config(into)
    version = config.kubernetes_version or schemacheck.kubernetes_versions()[-1]
    objects = refs.check_objects(into.objects, version, into.problems)
    objects = sealedcheck.attach(objects, into.sealed)
    into.problems += names.shared_files(objects)
    cluster_list = refs.unique_clusters(into.cluster_list, into.problems)
    rollout_docs = [(d, "/spec/placement/rollout") for d in into.placement_docs]
    rollout_docs += [(d, "/spec/rollout") for d in into.config_docs]
    into.problems += rollouts.unknown_clusters(rollout_docs, {c.name for c in cluster_list})
    into.problems += locations.unknown_cities(cluster_list, into.placement_docs)
    refs.check_cluster_references(
        cluster_list,
        into.placement,
        into.overrides,
        config,
        into.datasets,
        into.topology,
        into.problems,
    )
    data_sets = datamodel.data_sets(into.datasets, into.problems)
    links = datamodel.topology(into.topology, into.problems)
    data_access = _annotated_access(objects, into)
    bundled = dependencies.find(objects)
    into.problems += bundled.missing
    hooks = movehooks.find(objects)
    into.problems += hooks.problems
    into.problems += datamodel.unknown_data_sets(into.data_refs, data_sets)
    refs.check_karmada_rules(into.placement, into.problems)
    into.problems += sealedcheck.override_problems(objects, into.overrides, cluster_list)
    refs.check_requested_times(into.placement, config, into.problems)
    refs.check_ceilings(into.placement, config, into.problems)
    claimed_by = refs.check_claims(into.placement, objects, into.problems)
    into.problems += rollouts.promote_problems(objects, claimed_by, config.rollout)
    into.problems += defaulted.warnings(
        objects, into.placement, claimed_by, bundled.by_dependency, config, cluster_list
    )
    layers = _check_guard(ceiling, into, objects, cluster_list, None in claimed_by.values())
    crds = refs.crds_of(into.objects)
    into.problems += overridecheck.problems(
        objects, into.overrides, cluster_list, version, crds, layers
    )
    located = listkinds.relocated(into.problems, into.list_spans)
    problems = tuple(sorted(located, key=lambda p: p.sort_key))
    if any(p.severity is Severity.ERROR for p in problems):
        return Result(spec=None, problems=problems)
    spec = Spec(
        source=source,
        config=config,
        clusters=tuple(sorted(cluster_list, key=lambda c: c.name)),
        workloads=tuple(sorted(objects, key=lambda w: w.key.sort_key)),
        placement_policies=tuple(sorted(into.placement, key=lambda p: p.origin.path)),
        override_policies=tuple(sorted(into.overrides, key=lambda p: p.origin.path)),
        datasets=MappingProxyType({k: v.body for k, v in sorted(into.datasets.items())}),
        topology=into.topology.body if into.topology else None,
        data_sets=MappingProxyType(data_sets),
        links=links,
        data_access=MappingProxyType(data_access),
        dependents=bundled.by_dependency,
        sync_hooks=MappingProxyType(dict(hooks.by_workload)),
        claims=MappingProxyType(claimed_by),
    )
    return Result(spec=spec, problems=problems)


def _annotated_access(
    objects: Iterable[Workload], into: _Collector
) -> dict[ResourceKey, tuple[DataAccess, ...]]:
    """The data access each plain manifest declares in its `multicluster.io/data` annotation."""
    found = {}
    for workload in objects:
        annotations = (workload.manifest.get("metadata") or {}).get("annotations") or {}
        declared = datamodel.annotated(annotations, workload.origin, into.problems)
        if declared:
            found[workload.key] = declared
            pointer = "/metadata/annotations/" + datamodel.DATA_ANNOTATION.replace("/", "~1")
            into.data_refs += [(access, workload.origin, pointer) for access in declared]
    return found


def _check_guard(
    ceiling: guard.Guard,
    into: _Collector,
    objects: list[Workload],
    cluster_list: list[Cluster],
    default_used: bool,
) -> tuple[guard.Guard, ...]:
    """The guard's layers (the operator's ceiling, then dro.yaml's narrowing) over every
    object and placement target; returns the layers, for the override check."""
    config_doc = into.config_docs[0] if into.config_docs else None
    narrowed, problems = guard.narrowing(config_doc, ceiling)
    layers = (ceiling,) if narrowed is None else (ceiling, narrowed)
    into.problems += problems
    into.problems += guard.check_objects(layers, objects)
    into.problems += guard.check_placement(
        layers, cluster_list, into.placement_docs, config_doc, default_used
    )
    return layers


def spec(
    source: Source,
    *,
    ceiling: guard.Guard = guard.BUILTIN,
    parsed: parsecache.ParseCache | None = None,
) -> Spec:
    """The validated Spec of a source; raises `ValidationFailed` with every problem found
    (`parsed` as in `check`)."""
    result = check(source, ceiling=ceiling, parsed=parsed)
    if result.spec is None:
        raise ValidationFailed(result.problems)
    return result.spec
