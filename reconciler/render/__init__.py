"""Render: the output-branch tree, from the spec and the decisions, as path → bytes.

`tree` is the one assembly of that tree: `pipeline.plan` commits what it returns, and
`dro render` (`cli.render`) writes it, one shard per worker, so both hold the same files.

For every decision and each of its clusters, the source manifest gets the divided replicas,
dro's label and placement annotation, then the override policies in their stacking order. A
SOPS-encrypted Secret is the exception: its source file is rendered byte for byte (sops' MAC
covers every value), and apply adds dro's label and annotation after decrypting it.
Renders that come out identical (same replicas, same overrides) are dumped once and shared.
Fields a server owns (status, uid, resourceVersion …) are dropped. Nothing time- or
commit-dependent is written: provenance lives in the commit trailers, so a steady pass renders
the same bytes and makes no commit.

Each decision is also written for other tools: an Argo CD cluster decision and a KEP-5313
PlacementDecision (`decisionout`), and with `spec.output.karmada` a Karmada template and
policies that pin it (`karmadaout`).

Called by 8 modules, among them `cli.render`, `foresee`, `laststate`, `pipeline`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from reconciler import yamlio
from reconciler.branch import locations, paths, statefiles, status, summary
from reconciler.domain import (
    Cluster,
    Decision,
    Observation,
    OverridePolicy,
    OverrideRule,
    ResourceKey,
    Spec,
    Workload,
    claims,
)
from reconciler.domain import rollout as rollouts
from reconciler.domain.forecast import Forecasts
from reconciler.kube import demand, inventory, movehooks
from reconciler.render import (
    decisionout,
    karmadaout,
    memo,
    overrides,
    rollout,
    rolloutview,
    services,
)

MANAGED_BY = inventory.MANAGED_BY
PLACEMENT_ANNOTATION = inventory.PLACEMENT_ANNOTATION
SERVER_FIELDS = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def rules_for(
    workload: Workload, policies: Sequence[OverridePolicy]
) -> list[tuple[OverridePolicy, int, OverrideRule]]:
    """Override rules that apply to a workload, in stacking order (DESIGN: Overrides stack)."""

    def selects(policy: OverridePolicy) -> int:
        if policy.namespaced and policy.ref.namespace != workload.key.namespace:
            return 0
        if not policy.selectors:
            return 1
        return claims.best_specificity(policy.selectors, workload)

    chosen = [(p, selects(p)) for p in policies]
    ordered = sorted(
        ((p, s) for p, s in chosen if s > 0),
        key=lambda item: (item[0].namespaced, item[1], item[0].ref.name, item[0].origin.path),
    )
    return [(p, index, rule) for p, _ in ordered for index, rule in enumerate(p.rules)]


def plain_copy(value: Any) -> Any:
    """A deep copy of parsed YAML (dicts, lists, scalars), several times faster than deepcopy."""
    if isinstance(value, Mapping):
        return {key: plain_copy(child) for key, child in value.items()}
    if isinstance(value, list):
        return [plain_copy(child) for child in value]
    return value


def base_manifest(workload: Workload) -> dict[str, Any]:
    """The source manifest as every cluster gets it before overrides: server fields dropped,
    the namespace set, dro's label and placement annotation added."""
    manifest: dict[str, Any] = plain_copy(workload.manifest)
    manifest.pop("status", None)
    metadata = manifest.setdefault("metadata", {})
    for field in SERVER_FIELDS:
        metadata.pop(field, None)
    if workload.key.namespace:
        metadata["namespace"] = workload.key.namespace
    metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_BY[0]: MANAGED_BY[1]}
    placement = inventory.placement_name(workload.key)
    for owner in (manifest, _pod_template(manifest)):
        if owner is None:
            continue
        meta = owner.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), PLACEMENT_ANNOTATION: placement}
    return manifest


def _pod_template(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template of a workload (`spec.template`, or a CronJob's job template's), whose
    pods then carry the placement annotation: observe traces pending pods by it."""
    spec = manifest.get("spec")
    if not isinstance(spec, dict):
        return None
    job = spec.get("jobTemplate")
    if isinstance(job, dict) and isinstance(job.get("spec"), dict):
        spec = job["spec"]
    template = spec.get("template")
    return template if isinstance(template, dict) else None


def _render_one(
    base: Mapping[str, Any],
    replicas: int | None,
    rules: Iterable[tuple[OverridePolicy, int, OverrideRule]],
    cluster: str,
    key: ResourceKey,
) -> bytes:
    manifest: dict[str, Any] = plain_copy(base)
    if replicas is not None:
        manifest.setdefault("spec", {})["replicas"] = replicas
    for policy, _, rule in rules:  # `dro validate` has tried them all (`overridecheck`)
        overrides.apply_rule(manifest, policy, rule, cluster=cluster, key=key)
    return yamlio.dump(manifest).encode("utf-8")


class RuleIndex:
    """Which clusters each override rule targets, computed once per rule, and its content key.

    Two clusters whose rules have equal content render identically, so the content key (not
    the rule's identity) decides when a render can be shared.
    """

    def __init__(self, clusters: Sequence[Cluster]) -> None:
        self.clusters = clusters
        self._targets: dict[int, frozenset[str]] = {}
        self._keys: dict[int, str] = {}
        self._by_cluster: dict[tuple[int, ...], Mapping[str, tuple[Any, ...]]] = {}

    def targets(self, rule: OverrideRule) -> frozenset[str]:
        """The names of the clusters the rule targets."""
        found = self._targets.get(id(rule))
        if found is None:
            found = frozenset(
                c.name
                for c in self.clusters
                if rule.target is None or rule.target.matches(c.name, c.labels)
            )
            self._targets[id(rule)] = found
        return found

    def by_cluster(
        self, rules: Sequence[tuple[OverridePolicy, int, OverrideRule]]
    ) -> Mapping[str, tuple[tuple[OverridePolicy, int, OverrideRule], ...]]:
        """Cluster name → the rules (in order) that target it; cached per rule list."""
        cache_key = tuple(id(rule) for _, _, rule in rules)
        found = self._by_cluster.get(cache_key)
        if found is None:
            grouped: dict[str, list[tuple[OverridePolicy, int, OverrideRule]]] = {}
            for item in rules:
                for name in self.targets(item[2]):
                    grouped.setdefault(name, []).append(item)
            found = {name: tuple(items) for name, items in grouped.items()}
            self._by_cluster[cache_key] = found
        return found

    def key(self, rule: OverrideRule) -> str:
        """The rule's content as canonical JSON: equal keys, equal renders."""
        found = self._keys.get(id(rule))
        if found is None:
            found = json.dumps(
                [[name, dict(op)] for name, op in rule.operations], sort_keys=True, default=str
            )
            self._keys[id(rule)] = found
        return found


def tree(
    spec: Spec,
    decisions: Sequence[Decision],
    *,
    observations: Mapping[str, Observation] | None = None,
    suspended: Collection[str] = (),
    shard: tuple[int, int] = (0, 1),
    filling: Collection[str] = (),
    kept: Kept | None = None,
    forecasts: Forecasts | None = None,
    templates: Templates | None = None,
    remembered: memo.Memo | None = None,
) -> dict[str, bytes]:
    """The output-branch tree: manifests, kustomizations, decisions, status, README.

    A cluster in `observations` gets its observation as its status file (`suspended` ones
    marked unreachable and suspended), the others their declared figures; every workload with a
    rollout placed on an observed cluster gets its health under `status/workloads/`. Clusters
    in `filling` are marked `phase: Filling` in their status file. Every status file records
    `placed`, the requests of the replicas the decisions render there, and with `forecasts`
    (prediction on) the cluster's `forecast`.

    With `shard=(i, n)` only the i-th of n interleaved slices of the decisions is rendered
    (their manifests, decisions and workload health), and the shared files (kustomizations,
    cluster status, README) only in slice 0; the union of all slices is exactly the whole tree.

    Where a Karmada policy suspends dispatching (`Placement.dispatch_suspended`), a cluster
    keeps the manifest it had: `kept(path)` gives the last rendered file at that path, or
    None when there was none, and then nothing is rendered there (Karmada creates the Work
    suspended, so nothing reaches the member). Without `kept` no earlier file is known.
    A cluster that leaves the placement is pruned as usual: Karmada deletes a removed
    cluster's Work whether or not dispatching is suspended.

    A cluster that a decision's rollout has not reached yet keeps the template in force:
    `templates(commit, key)` gives the workload's manifest at that source commit
    (`render.rollout.in_force`); without it every cluster gets the source's template. When it
    gives None (the commit is gone) the cluster keeps the file last rendered there (`kept`),
    or nothing (`render.rolloutgone`).

    `remembered` holds the last pass's renders (`render.memo`): a workload whose inputs are
    all unchanged gets the files it had, and the memo then holds this pass's.
    """
    part, parts = shard
    workloads = {w.key: w for w in spec.workloads}
    index = RuleIndex(spec.clusters)
    held = _Held(spec, kept, templates)
    files: dict[str, bytes] = {}
    ordered = sorted(decisions, key=lambda d: d.key.sort_key)
    hooked = movehooks.hook_env(spec.sync_hooks, ordered) if spec.sync_hooks else {}
    mine = ordered[part::parts]
    for decision in mine:
        workload = workloads[decision.key]
        move = hooked.get(decision.key)
        if move is not None:
            workload = replace(workload, manifest=movehooks.with_move_env(workload.manifest, *move))
        rules = index.by_cluster(rules_for(workload, spec.override_policies))
        render = partial(_render_decision, spec, workload, decision, index, rules, held, templates)
        if remembered is None or held.holds(decision):
            files.update(render())
        else:
            context = spec.config.output
            files.update(
                remembered.decision_files(workload, decision, rules, index.key, context, render)
            )
    seen = observations or {}
    files.update(status.workload_files(mine, seen, locations.cities(spec.clusters)))
    if part == 0:
        documents = {
            name: status.cluster_status(seen[name], suspended=name in suspended)
            for name in sorted(seen)
        }
        shared = _shared_files(spec, ordered, documents, filling, held, forecasts or {}, remembered)
        files.update(shared)
        if remembered is not None and parts == 1:
            remembered.retain({d.key for d in ordered}, shared)
    return dict(sorted(files.items()))


Kept = Callable[[str], bytes | None]
"""The last rendered file at an output-branch path, or None (`pipeline` reads it lazily)."""
Templates = Callable[[str, ResourceKey], Mapping[str, Any] | None]
"""A workload's manifest at a source commit, or None (`laststate` reads it lazily)."""


class _Held:
    """Which rendered paths a suspended dispatch holds back, and what they keep."""

    def __init__(self, spec: Spec, kept: Kept | None, templates: Templates | None = None) -> None:
        self._templates = templates
        self._placements = {
            p.ref: p.placement
            for p in spec.placement_policies
            if p.placement.suspended_dispatching or p.placement.suspended_on
        }
        self._kept = kept
        self._read: dict[str, bytes | None] = {}

    def holds(self, decision: Decision) -> bool:
        """Whether a suspended dispatch may hold back changes to the decision's workload."""
        return decision.policy is not None and decision.policy in self._placements

    def suspended(self, decision: Decision, cluster: str) -> bool:
        """Whether changes to the decision's workload are held back from `cluster`."""
        placement = self._placements.get(decision.policy) if decision.policy else None
        return placement is not None and placement.dispatch_suspended(cluster)

    def gone(self, decision: Decision, cluster: str) -> bool:
        """Whether `cluster` keeps a rollout's template in force from a source commit that is
        gone: it keeps the file last rendered there, if any (`rolloutgone`), never the new
        template."""
        force = rollout.in_force(decision, cluster)
        return (
            force is not None
            and self._templates is not None
            and self._templates(force[1], decision.key) is None
        )

    def previous(self, path: str) -> bytes | None:
        """The file last rendered at `path`, read once."""
        if self._kept is None:
            return None
        if path not in self._read:
            self._read[path] = self._kept(path)
        return self._read[path]


def _render_decision(
    spec: Spec,
    workload: Workload,
    decision: Decision,
    index: RuleIndex,
    applicable: memo.Rules,
    held: _Held,
    templates: Templates | None,
) -> dict[str, bytes]:
    document = yamlio.dump(summary.decision_document(decision)).encode()
    files = {paths.decision_path(decision.key): statefiles.seal(document)}
    files.update(decisionout.files(decision, spec.config.output.cluster_profile_namespace))
    if not decision.clusters and not decision.retiring:
        return files
    bases: dict[tuple[str, str] | None, dict[str, Any]] = {}
    rendered: dict[tuple[object, int | None, tuple[str, ...]], bytes] = {}
    for placed in decision.rendered():
        path = paths.object_path(placed.cluster, decision.key)
        if held.suspended(decision, placed.cluster) or held.gone(decision, placed.cluster):
            previous = held.previous(path)
            if previous is not None:
                files[path] = previous
            continue
        if workload.sealed:  # SOPS-encrypted: its MAC covers every value (`kube.sealed`)
            files[path] = workload.sealed
            continue
        applied = applicable.get(placed.cluster, ())
        force = rollout.in_force(decision, placed.cluster)
        if force not in bases:
            bases[force] = _rollout_base(workload, decision, force, templates)
        keys = tuple(index.key(rule) for _, _, rule in applied)
        fingerprint = (force, placed.replicas, keys)
        if fingerprint not in rendered:
            rendered[fingerprint] = _render_one(
                bases[force], placed.replicas, applied, placed.cluster, decision.key
            )
        files[path] = rendered[fingerprint]
    if spec.config.output.karmada:
        base = bases.get(None) or _rollout_base(workload, decision, None, templates)
        files.update(karmadaout.files(workload, decision, base, files))
    return files


def _rollout_base(
    workload: Workload,
    decision: Decision,
    force: tuple[str, str] | None,
    templates: Templates | None,
) -> dict[str, Any]:
    """The base manifest of one template: the source's, or under a rollout the one in force
    (`force`: revision and source commit), marked with its revision for observe."""
    if decision.rollout is None:
        return base_manifest(workload)
    revision = decision.rollout.revision
    old = templates(force[1], decision.key) if force is not None and templates else None
    if force is not None and old is not None:
        workload, revision = replace(workload, manifest=old), force[0]
    base = base_manifest(workload)
    meta = base["metadata"]
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        rollouts.REVISION_ANNOTATION: revision,
    }
    return base


def _shared_files(
    spec: Spec,
    decisions: Sequence[Decision],
    observations: Mapping[str, Mapping[str, Any]],
    filling: Collection[str],
    held: _Held,
    forecasts: Forecasts,
    remembered: memo.Memo | None,
) -> dict[str, bytes]:
    per_cluster: dict[str, list[str]] = {c.name: [] for c in spec.clusters}
    for decision in decisions:
        listing = partial(_listing, decision, held)
        listed = remembered.listed(decision.key, listing) if remembered else listing()
        for name, relative in listed:
            per_cluster[name].append(relative)
    files: dict[str, bytes] = {}
    crossing = services.cross_cluster(spec.workloads, decisions)
    for path, data in _mcs_files(spec, crossing).items():
        files[path] = data
        mcs = _in_cluster(path)
        per_cluster[mcs.cluster].append(mcs.relative)
    for name, resources in per_cluster.items():
        path = paths.kustomization_path(name)
        files[path] = memo.dumped(remembered, path, summary.kustomization(sorted(resources)))
    requests = placed_requests(spec, decisions)
    for cluster in spec.clusters:
        document = summary.observation(
            cluster,
            observations.get(cluster.name),
            filling=cluster.name in filling,
            placed=requests.get(cluster.name),
            forecast=forecasts.get(cluster.name),
        )
        path = paths.cluster_status_path(cluster.name)
        files[path] = memo.dumped(remembered, path, document, sealed=True)
    files.update(decisionout.shared_files(decisions))
    files[paths.README] = (
        summary.readme(spec, decisions)
        + services.readme_section(crossing)
        + rolloutview.readme_section(decisions)
        + decisionout.readme_section(spec.config.output.karmada)
    ).encode()
    return files


def _listing(decision: Decision, held: _Held) -> list[tuple[str, str]]:
    """(cluster, path in its folder) of each manifest the decision has on the branch."""
    listed = []
    for placed in decision.rendered():
        path = paths.object_path(placed.cluster, decision.key)
        kept = held.suspended(decision, placed.cluster) or held.gone(decision, placed.cluster)
        if kept and held.previous(path) is None:
            continue
        listed.append((placed.cluster, _in_cluster(path).relative))
    return listed


def placed_requests(spec: Spec, decisions: Sequence[Decision]) -> dict[str, dict[str, float]]:
    """Cluster → resource → the requests of dro's replicas the decisions render there (the
    target plus retiring copies, the count that runs where an override sets it)."""
    needs = {w.key: demand.per_replica(w) for w in spec.workloads}
    result: dict[str, dict[str, float]] = {}
    for decision in decisions:
        need = needs.get(decision.key)
        if not need:
            continue
        for placed in decision.rendered():
            runs = decision.effective.get(placed.cluster, placed.replicas)
            if not runs:
                continue
            into = result.setdefault(placed.cluster, {})
            for resource, amount in need.items():
                into[resource] = into.get(resource, 0.0) + amount * runs
    return result


def _in_cluster(path: str) -> paths.ClusterFile:
    """A rendered manifest's cluster folder and its path there (what the kustomization lists)."""
    placed = paths.cluster_file(path)
    assert placed is not None  # `paths.object_path` made the path
    return placed


def _mcs_files(spec: Spec, crossing: Sequence[services.CrossCluster]) -> dict[str, bytes]:
    """ServiceExport where a called Service runs, ServiceImport where its callers run."""
    if not crossing:
        return {}
    manifests = {w.key: w.manifest for w in spec.workloads if w.key.kind == "Service"}
    files = {}
    for cluster, objects in services.mcs_objects(crossing, manifests).items():
        for obj in objects:
            files[paths.object_path(cluster, ResourceKey.of(obj))] = yamlio.dump(obj).encode()
    return files
