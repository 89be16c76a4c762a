"""Validate a `Source` and turn it into a `Spec`, reporting every problem in one pass.

Each file is parsed safely (`yamlio`), routed by its folder, checked against dro's JSON Schemas
or the Kubernetes OpenAPI (`schemacheck`), normalised (`clusters`, `policies`, `workloads`), and
then checked as a whole: duplicate objects, references to unknown clusters, and two placement
policies that claim one workload with the same precedence. Any error fails the whole source:
nothing is scheduled, committed or applied from it.

Each file is walked on its own (`files`), and a `memo.Memo` kept between passes gives back
what an unchanged file and an unchanged object gave before, so a pass checks what changed
and joins the rest; with a fresh memo (the default) every file and object is checked.

Called by `laststate`, `pipeline`, `pipeline.sharded`, `service.api.store` and `simulate.trace`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reconciler.domain import (
    DRO_API_VERSION,
    Document,
    MoveBudget,
    Output,
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
    datamodel,
    defaulted,
    dependencies,
    files,
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
from reconciler.validate.memo import Facts
from reconciler.validate.memo import Memo as Memo
from reconciler.validate.removed import removed_clusters as removed_clusters

DRO = DRO_API_VERSION


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What `check` found: the spec when there was no error, and every problem (warnings too)."""

    spec: Spec | None
    problems: tuple[Problem, ...]


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


def _prediction(doc: Document, spec: Mapping[str, Any], into: files.Part) -> Prediction:
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


def _config(into: files.Part) -> SchedulerConfig:
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
    memo: Memo | None = None,
) -> Result:
    """Validate every file; return the Spec (None on any error) and all problems, sorted.
    `ceiling` is the operator's guard (`guard.load_ceiling`), which dro.yaml may narrow.
    `parsed` keeps each file's parse between passes, `memo` each file's and each object's
    own checks (both in `pipeline.Warm`); either only saves work, never changes the result."""
    memo = memo if memo is not None else Memo()
    into = memo.parts(source, parsed)
    config = memo.config(into, _config)
    version = config.kubernetes_version or schemacheck.kubernetes_versions()[-1]
    objects = memo.objects(version, into.problems)
    if into.sealed:
        objects = sealedcheck.attach(objects, into.sealed)
        memo.runs = None
    config_doc = into.config_docs[0] if into.config_docs else None
    narrowed, narrowing = guard.narrowing(config_doc, ceiling)
    layers = (ceiling,) if narrowed is None else (ceiling, narrowed)
    facts = memo.facts(objects, layers)
    into.problems += names.shared_files(objects, [f.stem for f in facts])
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
    data_access = _annotated_access(objects, facts, into)
    by_dependency, missing = dependencies.bundled(objects, memo.dependencies, memo.runs)
    into.problems += missing
    hooked = any(f.hook for f in facts)
    hooks = movehooks.find(objects) if hooked else movehooks.Hooks()
    into.problems += hooks.problems
    into.problems += datamodel.unknown_data_sets(into.data_refs, data_sets)
    refs.check_karmada_rules(into.placement, into.problems)
    into.problems += sealedcheck.override_problems(objects, into.overrides, cluster_list)
    refs.check_requested_times(into.placement, config, into.problems)
    refs.check_ceilings(into.placement, config, into.problems)
    claims = memo.claims(into.placement, objects)
    claimed_by = refs.claimed(into.placement, claims, into.problems)
    promoting = [w for w, f in zip(objects, facts, strict=True) if f.promote]
    into.problems += rollouts.promote_problems(promoting, claimed_by, config.rollout)
    defaulted_ones = [w for w, c in claims if c.policy is None]
    into.problems += defaulted.warnings(
        defaulted_ones, into.placement, claimed_by, by_dependency, config, cluster_list
    )
    into.problems += narrowing
    into.problems += [p for f in facts for p in f.guarded]
    into.problems += guard.check_placement(
        layers, cluster_list, into.placement_docs, config_doc, bool(defaulted_ones)
    )
    crds = memo.crds
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
        workloads=memo.ordered(objects),
        placement_policies=tuple(sorted(into.placement, key=lambda p: p.origin.path)),
        override_policies=tuple(sorted(into.overrides, key=lambda p: p.origin.path)),
        datasets=MappingProxyType({k: v.body for k, v in sorted(into.datasets.items())}),
        topology=into.topology.body if into.topology else None,
        data_sets=MappingProxyType(data_sets),
        links=links,
        data_access=MappingProxyType(data_access),
        dependents=by_dependency,
        sync_hooks=MappingProxyType(dict(hooks.by_workload)),
        claims=MappingProxyType(claimed_by),
    )
    return Result(spec=spec, problems=problems)


def _annotated_access(
    objects: Sequence[Workload], facts: Sequence[Facts], into: files.Part
) -> dict[ResourceKey, tuple[DataAccess, ...]]:
    """The data access each plain manifest declares in its `multicluster.io/data` annotation."""
    found = {}
    pointer = "/metadata/annotations/" + datamodel.DATA_ANNOTATION.replace("/", "~1")
    for workload, fact in zip(objects, facts, strict=True):
        if not fact.data and not fact.data_problems:
            continue
        into.problems += fact.data_problems
        if fact.data:
            found[workload.key] = fact.data
            into.data_refs += [(access, workload.origin, pointer) for access in fact.data]
    return found


def spec(
    source: Source,
    *,
    ceiling: guard.Guard = guard.BUILTIN,
    parsed: parsecache.ParseCache | None = None,
    memo: Memo | None = None,
) -> Spec:
    """The validated Spec of a source; raises `ValidationFailed` with every problem found
    (`parsed` and `memo` as in `check`)."""
    result = check(source, ceiling=ceiling, parsed=parsed, memo=memo)
    if result.spec is None:
        raise ValidationFailed(result.problems)
    return result.spec
