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

import functools
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
from reconciler.kube import inventory, movehooks
from reconciler.render import (
    decisionout,
    karmadaout,
    memo,
    overrides,
    rollout,
    services,
    shared,
)
from reconciler.render.held import Held
from reconciler.render.held import Kept as Kept
from reconciler.render.held import Templates as Templates
from reconciler.render.shared import placed_requests as placed_requests

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
    held = Held(spec, kept, templates)
    seen = observations or {}
    documents = {
        name: status.cluster_status(seen[name], suspended=name in suspended)
        for name in sorted(seen)
    }
    steps = _Steps(
        spec, decisions, held, templates, remembered, seen, documents, filling, forecasts
    )
    if remembered is not None and parts == 1:
        return remembered.warm_tree(spec, decisions, steps)
    files: dict[str, bytes] = {}
    ordered = steps.ordered
    mine = ordered[part::parts]
    for decision in mine:
        files.update(steps.files(decision, steps.workload(decision)[1]))
    files.update(status.workload_files(mine, seen, locations.cities(spec.clusters)))
    if part == 0:
        files.update(
            shared.files(spec, ordered, documents, filling, held, forecasts or {}, remembered)
        )
    return dict(sorted(files.items()))


class _Steps:
    """How this pass renders one decision, and the files shared by all (`warmtree.Renderer`)."""

    def __init__(
        self,
        spec: Spec,
        decisions: Sequence[Decision],
        held: Held,
        templates: Templates | None,
        remembered: memo.Memo | None,
        seen: Mapping[str, Observation],
        documents: Mapping[str, Mapping[str, Any]],
        filling: Collection[str],
        forecasts: Forecasts | None,
    ) -> None:
        self.spec, self._decisions, self._held, self._templates = spec, decisions, held, templates
        self._memo, self._seen, self._documents = remembered, seen, documents
        self._filling, self._forecasts = filling, forecasts or {}
        self._index = RuleIndex(spec.clusters)
        self._clusters = {c.name: c for c in spec.clusters}

    @functools.cached_property
    def ordered(self) -> list[Decision]:
        """The decisions in key order."""
        return sorted(self._decisions, key=lambda d: d.key.sort_key)

    @functools.cached_property
    def _workloads(self) -> dict[ResourceKey, Workload]:
        return {w.key: w for w in self.spec.workloads}

    @functools.cached_property
    def _hooked(self) -> dict[ResourceKey, tuple[str, str, ResourceKey]]:
        spec = self.spec
        return movehooks.hook_env(spec.sync_hooks, self.ordered) if spec.sync_hooks else {}

    def workload(
        self, decision: Decision, source: Workload | None = None
    ) -> tuple[Workload, Workload]:
        """The decision's workload in the spec (`source` when known), and as rendered (a
        move hook's environment)."""
        workload = source = source if source is not None else self._workloads[decision.key]
        move = self._hooked.get(decision.key)
        if move is not None:
            workload = replace(workload, manifest=movehooks.with_move_env(workload.manifest, *move))
        return source, workload

    def files(self, decision: Decision, workload: Workload) -> Mapping[str, bytes]:
        """The decision's own files, through the memo when there is one."""
        spec, index, held = self.spec, self._index, self._held
        rules = index.by_cluster(rules_for(workload, spec.override_policies))
        made = partial(
            _render_decision, spec, workload, decision, index, rules, held, self._templates
        )
        if self._memo is None or held.holds(decision):
            return made()
        output = spec.config.output
        return self._memo.decision_files(workload, decision, rules, index.key, output, made)

    def hooked(self) -> Collection[ResourceKey]:
        """The workloads a sync hook adds a move's environment to this pass."""
        return self._hooked.keys()

    def listing(self, decision: Decision) -> list[tuple[str, str]]:
        """Where the decision's manifests are on the branch."""
        return shared.listing(decision, self._held)

    def volatile(self, decision: Decision) -> bool:
        """Whether the render reads the branch or an older source (rendered every pass)."""
        in_progress = decision.rollout is not None and decision.rollout.in_progress
        return in_progress or self._held.holds(decision)

    def mcs(
        self, decisions: Sequence[Decision]
    ) -> tuple[Sequence[services.CrossCluster], dict[str, bytes]]:
        """The Services called across clusters, and their MCS objects' files."""
        crossing = services.cross_cluster(self.spec.workloads, decisions)
        return crossing, shared.mcs_files(self.spec, crossing)

    def argocd(self, decisions: Sequence[Decision]) -> dict[str, bytes]:
        """The Argo CD folder's shared files."""
        return decisionout.shared_files(decisions)

    def readme(self, decisions: Sequence[Decision], crossing: Any) -> bytes:
        """The README."""
        return shared.readme(self.spec, decisions, crossing)

    def health(self, decisions: Sequence[Decision]) -> dict[str, bytes]:
        """`status/workloads/` of the decisions on observed clusters."""
        if not self._seen:
            return {}
        return status.workload_files(decisions, self._seen, locations.cities(self.spec.clusters))

    def status(self, name: str) -> tuple[Any, Callable[[Mapping[str, float] | None], Any]]:
        """What the cluster's status file is made of but `placed`, and its document."""
        cluster = self._clusters[name]
        observed, filling = self._documents.get(name), name in self._filling
        forecast = self._forecasts.get(name)

        def document(placed: Mapping[str, float] | None) -> dict[str, Any]:
            return summary.observation(
                cluster, observed, filling=filling, placed=placed, forecast=forecast
            )

        return (cluster, observed, filling, forecast), document

    def dumped(self, path: str, document: Any, *, sealed: bool = False) -> bytes:
        """`document` as the file's bytes (the memo's when unchanged)."""
        return memo.dumped(self._memo, path, document, sealed=sealed)


def _render_decision(
    spec: Spec,
    workload: Workload,
    decision: Decision,
    index: RuleIndex,
    applicable: memo.Rules,
    held: Held,
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
