"""Whole-source checks: objects against their schemas, duplicates, cluster references, claims.

Each check appends `Problem`s naming the file and line of the offending document; nothing here
stops at the first problem.

Called by `validate`, `validate.files`, `validate.memo` and `validate.overridecheck`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.domain import (
    Cluster,
    Document,
    Origin,
    OverridePolicy,
    PlacementPolicy,
    ResourceKey,
    SchedulerConfig,
    Workload,
    claims,
    durations,
)
from reconciler.errors import Problem, Severity
from reconciler.kube import sealed, secrets
from reconciler.validate import quantitycheck, removedapis, schemacheck, workloads


def _problem(
    origin: Origin, pointer: str, message: str, severity: Severity = Severity.ERROR
) -> Problem:
    return Problem(
        path=origin.path,
        line=origin.line_of(pointer),
        pointer=pointer,
        message=message,
        severity=severity,
    )


def _crds(objects: Sequence[Document]) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    found: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for doc in objects:
        if is_crd(doc.body):
            group, kind, scope, schemas = workloads.crd_facts(doc.body)
            found[(group, kind)] = (scope, schemas)
    return found


CRDs = Mapping[tuple[str, str], tuple[str, dict[str, Any]]]
"""(group, kind) → (scope, version → openAPIV3Schema) of the CRDs in the repo."""


def crds_of(objects: Sequence[Document]) -> CRDs:
    """The CustomResourceDefinitions among the objects, by (group, kind)."""
    return _crds(objects)


def schema_errors(
    body: Mapping[str, Any], version: str, crds: CRDs
) -> list[schemacheck.SchemaError] | None:
    """A Kubernetes object checked against its built-in schema or its CRD in the repo; None
    when there is neither. A SOPS-encrypted Secret is checked without its `sops` metadata."""
    if sealed.is_sealed(body):
        body = sealed.without_metadata(body)
    api_version, kind = str(body["apiVersion"]), str(body["kind"])
    group, _, crd_version = api_version.rpartition("/")
    if schemacheck.has_kube_schema(version, api_version, kind):
        return schemacheck.check_kube(version, body)
    if (group, kind) in crds and crds[(group, kind)][1].get(crd_version):
        return schemacheck.check_openapi_v3(crds[(group, kind)][1][crd_version], body)
    return None


def _schema_problems(doc: Document, version: str, crds: CRDs, alone: bool) -> list[Problem]:
    api_version, kind = str(doc.body["apiVersion"]), str(doc.body["kind"])
    group = api_version.rpartition("/")[0]
    if sealed.is_sealed(doc.body):
        found = [_problem(doc.origin, p, m) for p, m in sealed.problems(doc.body)]
        plain = schema_errors(doc.body, version, crds) or []
        return found + [_problem(doc.origin, e.pointer, e.message) for e in plain]
    errors = schema_errors(doc.body, version, crds)
    removed = removedapis.removal(api_version, kind, version) if errors is None else ""
    if removed:
        return [_problem(doc.origin, "/apiVersion", removed)]
    if errors is None:
        return [
            _problem(
                doc.origin,
                "/kind",
                f"no schema for {api_version} {kind} in Kubernetes {version} and no "
                "CustomResourceDefinition for it in the repo; not validated",
                Severity.WARNING,
            )
        ]
    problems = [_problem(doc.origin, e.pointer, e.message) for e in errors]
    if not problems and kind == "Secret" and group == "":
        problems = [_problem(doc.origin, p, m) for p, m in secrets.encoding_problems(doc.body)]
        problems += _plaintext_warning(doc, alone)
    return problems


def _plaintext_warning(doc: Document, alone: bool) -> list[Problem]:
    """A warning for a Secret whose values are committed in plain text: how to encrypt it."""
    fields = [f for f in secrets.VALUE_FIELDS if doc.body.get(f)]
    if not fields:
        return []
    move = "" if alone else "move it to a file of its own and "
    message = (
        f"a plaintext Secret: its values are committed and rendered as written; {move}"
        "encrypt it with sops (sops --encrypt --age RECIPIENT --encrypted-regex "
        f"'^(data|stringData)$' --in-place {doc.origin.path}): dro decrypts it at apply"
    )
    return [_problem(doc.origin, f"/{fields[0]}", message, Severity.WARNING)]


@dataclass(frozen=True, slots=True)
class Checked:
    """One object document's own check: its problems, and the `Workload` it gives when none
    of them is an error (`lowered` is its identity as the API server compares names)."""

    problems: tuple[Problem, ...]
    workload: Workload | None = None
    lowered: tuple[str, str, str, str] = ("", "", "", "")


def is_crd(body: Mapping[str, Any]) -> bool:
    """Whether an object is a CustomResourceDefinition."""
    return body["kind"] == "CustomResourceDefinition" and str(body["apiVersion"]).startswith(
        "apiextensions.k8s.io/"
    )


def checked(doc: Document, version: str, crds: CRDs, alone: bool) -> Checked:
    """An object document against its schema and its quantities, and its scope; `alone`
    when it is the only document of its file. Depends on nothing else."""
    found = _schema_problems(doc, version, crds, alone)
    if not any(p.severity is Severity.ERROR for p in found):
        found += [_problem(doc.origin, p, m) for p, m in quantitycheck.findings(doc.body, version)]
    if any(p.severity is Severity.ERROR for p in found):
        return Checked(tuple(found))
    scopes = {key: scope for key, (scope, _) in crds.items()}
    cluster_scoped = workloads.is_cluster_scoped(
        str(doc.body["apiVersion"]), str(doc.body["kind"]), scopes
    )
    if cluster_scoped and (doc.body.get("metadata") or {}).get("namespace"):
        pointer = "/metadata/namespace"
        message = f"{doc.body['kind']} is cluster-scoped and takes no namespace"
        return Checked((*found, _problem(doc.origin, pointer, message)))
    item = workloads.workload(doc, cluster_scoped)
    lowered = (item.key.group, item.key.kind.lower(), item.key.namespace, item.key.name.lower())
    return Checked(tuple(found), item, lowered)


def unique_objects(
    results: Iterable[tuple[Document, Checked]], problems: list[Problem]
) -> list[Workload]:
    """The workloads of checked documents, in order, each problem reported and the second of
    two objects with one identity dropped and reported."""
    seen: dict[tuple[str, str, str, str], Origin] = {}
    result: list[Workload] = []
    for doc, found in results:
        problems.extend(found.problems)
        item = found.workload
        if item is None:
            continue
        if found.lowered in seen:
            first = seen[found.lowered]
            problems.append(
                _problem(
                    doc.origin,
                    "/metadata/name",
                    f"{item.key} is declared twice: first at {first.path}:{first.line}",
                )
            )
            continue
        seen[found.lowered] = doc.origin
        result.append(item)
    return result


def check_objects(
    objects: Sequence[Document], version: str, problems: list[Problem]
) -> list[Workload]:
    """Validate Kubernetes objects; return them as Workloads, reporting duplicates."""
    crds = _crds(objects)
    per_file = Counter(doc.origin.path for doc in objects)
    results = [(d, checked(d, version, crds, per_file[d.origin.path] == 1)) for d in objects]
    return unique_objects(results, problems)


def unique_clusters(found: Sequence[Cluster], problems: list[Problem]) -> list[Cluster]:
    """Drop and report clusters declared twice."""
    by_name: dict[str, Cluster] = {}
    for cluster in found:
        if cluster.name in by_name:
            first = by_name[cluster.name].origin
            problems.append(
                _problem(
                    cluster.origin,
                    "/metadata/name",
                    f"cluster {cluster.name!r} is declared twice: first at "
                    f"{first.path}:{first.line}",
                )
            )
            continue
        by_name[cluster.name] = cluster
    return list(by_name.values())


def _unknown(
    names: Iterable[str], known: set[str], origin: Origin, pointer: str, problems: list[Problem]
) -> None:
    for name in names:
        if name not in known:
            hint = ", ".join(sorted(known)[:8]) or "none declared"
            problems.append(
                _problem(origin, pointer, f"unknown cluster {name!r} (clusters/ declares: {hint})")
            )


def check_cluster_references(
    cluster_list: Sequence[Cluster],
    placement: Sequence[PlacementPolicy],
    overrides: Sequence[OverridePolicy],
    config: SchedulerConfig,
    datasets: Mapping[str, Document],
    topology: Document | None,
    problems: list[Problem],
) -> None:
    """Every cluster name a policy, dataset or topology mentions must be declared."""
    known = {c.name for c in cluster_list}
    for policy in placement:
        place = policy.placement
        for term in place.targets:
            _unknown(term.mentioned_names(), known, policy.origin, "/spec", problems)
        for weight_term, _ in place.replicas.static_weights:
            _unknown(weight_term.mentioned_names(), known, policy.origin, "/spec", problems)
        for affinity_term in place.affinity_terms:
            for affinity in (affinity_term.affinity, *(o for _, o in affinity_term.overflow)):
                _unknown(affinity.mentioned_names(), known, policy.origin, "/spec", problems)
    for override in overrides:
        for rule in override.rules:
            if rule.target is not None:
                _unknown(rule.target.mentioned_names(), known, override.origin, "/spec", problems)
    if config.origin is not None:
        for term in config.default_placement.targets:
            _unknown(
                term.mentioned_names(),
                known,
                config.origin,
                "/spec/defaultPlacement",
                problems,
            )
    for doc in datasets.values():
        for index, location in enumerate(doc.body["spec"]["locations"]):
            _unknown(
                [location["cluster"]],
                known,
                doc.origin,
                f"/spec/locations/{index}/cluster",
                problems,
            )
    if topology is not None:
        for index, link in enumerate(topology.body["spec"].get("links") or ()):
            for end in ("from", "to"):
                _unknown(
                    [link[end]], known, topology.origin, f"/spec/links/{index}/{end}", problems
                )


def check_requested_times(
    placement: Sequence[PlacementPolicy], config: SchedulerConfig, problems: list[Problem]
) -> None:
    """Every `rebalance.requestedAt` is a real time: the schema's pattern lets through
    `2026-13-45T99:00:00Z`, which would fail the schedule stage instead."""
    written = [
        (p.origin, "/spec/placement/rebalance/requestedAt", p.placement.rebalance_requested_at)
        for p in placement
    ]
    if config.origin is not None:
        pointer = "/spec/defaultPlacement/rebalance/requestedAt"
        written.append((config.origin, pointer, config.default_placement.rebalance_requested_at))
    for origin, pointer, value in written:
        if value is None:
            continue
        try:
            durations.epoch(str(value))
        except ValueError as error:
            problems.append(_problem(origin, pointer, f"{value!r} is not a valid time: {error}"))


def check_ceilings(
    placement: Sequence[PlacementPolicy], config: SchedulerConfig, problems: list[Problem]
) -> None:
    """Every `waterLevelCeiling` is at least the water-level limit that applies beside it,
    resource by resource (overflow fills from the limit up to the ceiling): dro.yaml's own
    pair, then each placement that writes either (a policy's, or dro.yaml's default one)
    against the values it falls back to."""
    if config.origin is not None:
        _ceilings(config.origin, "/spec", {}, {}, config, problems)
        default = config.default_placement
        at = "/spec/defaultPlacement"
        _ceilings(
            config.origin,
            at,
            default.water_level_limit,
            default.water_level_ceiling,
            config,
            problems,
        )
    for policy in placement:
        place = policy.placement
        _ceilings(
            policy.origin,
            "/spec/placement",
            place.water_level_limit,
            place.water_level_ceiling,
            config,
            problems,
        )


def _ceilings(
    origin: Origin,
    at: str,
    limits: Mapping[str, float],
    ceilings: Mapping[str, float],
    config: SchedulerConfig,
    problems: list[Problem],
) -> None:
    """A problem for each resource whose ceiling is below its limit, at the value written
    here (the ceiling when both are); `at` "/spec" checks dro.yaml's own pair."""
    own = at == "/spec"
    if own:
        limits, ceilings = config.water_level_limit, config.water_level_ceiling
    for resource in sorted(set(limits) | set(ceilings)):
        limit = limits.get(resource, config.water_level_limit.get(resource, 1.0))
        ceiling = ceilings.get(resource, config.water_level_ceiling.get(resource, 1.0))
        if ceiling >= limit:
            continue
        if (
            own
            and resource not in config.raw.get("waterLevelLimit", {})
            and (resource not in ceilings)
        ):
            continue  # the built-in default limit alone: nothing written here
        field = "waterLevelCeiling" if resource in ceilings else "waterLevelLimit"
        problems.append(
            _problem(
                origin,
                f"{at}/{field}/{resource}",
                f"waterLevelCeiling {ceiling:g} is below the water-level limit {limit:g} "
                f"({resource}): overflow fills from the limit up to the ceiling",
            )
        )


def check_karmada_rules(placement: Sequence[PlacementPolicy], problems: list[Problem]) -> None:
    """Karmada's own validation: namespaces of PP selectors, and spread constraint rules."""
    for policy in placement:
        if policy.namespaced and policy.api_version.startswith("policy.karmada.io"):
            for index, selector in enumerate(policy.selectors):
                if selector.namespace != policy.ref.namespace:
                    problems.append(
                        _problem(
                            policy.origin,
                            f"/spec/resourceSelectors/{index}/namespace",
                            f"a PropagationPolicy in namespace {policy.ref.namespace!r} cannot "
                            f"select resources in {selector.namespace!r}",
                        )
                    )
        spread = policy.placement.spread
        fields = [s.by for s in spread if not s.by_label]
        for index, constraint in enumerate(spread):
            if constraint.max_groups and constraint.max_groups < constraint.min_groups:
                problems.append(
                    _problem(
                        policy.origin,
                        "/spec/placement",
                        f"spread constraint {index} ({constraint.by}): "
                        "maxGroups is lower than minGroups",
                    )
                )
        if len(fields) != len(set(fields)):
            problems.append(
                _problem(policy.origin, "/spec/placement", "a spread field may appear only once")
            )
        karmada = policy.api_version.startswith("policy.karmada.io")
        if karmada and fields and "cluster" not in fields:
            problems.append(
                _problem(
                    policy.origin,
                    "/spec/placement/spreadConstraints",
                    "spreading by a field needs a 'cluster' constraint too",
                )
            )


def check_claims(
    placement: Sequence[PlacementPolicy], objects: Sequence[Workload], problems: list[Problem]
) -> dict[ResourceKey, PlacementPolicy | None]:
    """Two policies claiming one workload with the same precedence: name both files, once.

    Returns the claiming policy of every workload (None: the default placement applies).
    """
    claimer = claims.Claims(placement)
    return claimed(placement, [(w, claimer.claim(w)) for w in objects], problems)


def claimed(
    placement: Sequence[PlacementPolicy],
    found: Iterable[tuple[Workload, claims.Claim]],
    problems: list[Problem],
) -> dict[ResourceKey, PlacementPolicy | None]:
    """`check_claims` from each workload's claim, made against `placement`."""
    found = list(found)
    claimed_by = {workload.key: claim.policy for workload, claim in found}
    tied: dict[tuple[str, str], list[Workload]] = {}
    policies: dict[str, PlacementPolicy] = {
        p.origin.path + f":{p.origin.line}": p for p in placement
    }
    for workload, claim in found:
        if claim.policy is None or not claim.tied_with:
            continue
        for other in claim.tied_with:
            pair = sorted([claim.policy, other], key=lambda p: (p.origin.path, p.origin.line))
            ids = (
                f"{pair[0].origin.path}:{pair[0].origin.line}",
                f"{pair[1].origin.path}:{pair[1].origin.line}",
            )
            tied.setdefault(ids, []).append(workload)
    for (first_id, second_id), held in sorted(tied.items()):
        first, second = policies[first_id], policies[second_id]
        more = f" and {len(held) - 1} more" if len(held) > 1 else ""
        problems.append(
            _problem(
                second.origin,
                "/spec",
                f"{second.ref} and {first.ref} ({first_id}) both claim {held[0].key}{more} "
                f"with equal precedence (namespacing, priority {second.priority}, selector "
                "specificity); set spec.priority or narrow a selector",
            )
        )
    return claimed_by
