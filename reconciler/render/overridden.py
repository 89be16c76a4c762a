"""Overridden replicas: the count that runs where an override sets `spec.replicas`.

The division writes a workload's replicas into each cluster's manifest, then the override
policies apply, so an override of `spec.replicas` (dro's `fieldPatches` path `spec.replicas`,
Karmada's `plaintext` on `/spec/replicas`, or anything that replaces `/spec` or the whole
object) wins (DESIGN, "Overrides stack"). What runs is that rendered count, and it is what
dro shows and charges to the water level ("own replicas means the rendered count").

`Replicas` answers, for one spec, which workloads have such an override, and the count a
cluster's rendered manifest holds for a given divided count: the operations that can reach
`spec.replicas` are applied in render's order to the divided count; the others (images,
labels …) never change a count, so they are neither applied nor make a workload overridden.
A manifest whose override removes `spec.replicas` runs the API server's default, 1.
This module is pure.

Called by `schedule` and `schedule.engine`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from reconciler import render
from reconciler.domain import Decision, OverridePolicy, OverrideRule, ResourceKey, Spec, Workload
from reconciler.render import overrides

DEFAULT_REPLICAS = 1
"""What the API server sets when a Deployment, StatefulSet or ReplicaSet has no replicas."""

Rules = tuple[tuple[OverridePolicy, int, OverrideRule], ...]
Operations = tuple[tuple[str, Mapping[str, Any]], ...]


def reaches_replicas(operation: str, op: Mapping[str, Any]) -> bool:
    """Whether one override operation can set or remove `spec.replicas`."""
    if operation == "fieldPatch":
        try:
            tokens = overrides.parse_field_path(str(op.get("path", "")))
        except overrides.OverrideError:
            return False
        return tokens[:2] in (["spec"], ["spec", "replicas"])
    if operation == "plaintext":
        return str(op.get("path", "")) in ("", "/spec", "/spec/replicas")
    return False


class Replicas:
    """The overrides of `spec.replicas` in one spec, and the counts they render."""

    def __init__(self, spec: Spec) -> None:
        self._policies = spec.override_policies
        self._reaching = tuple(p for p in self._policies if any(_reaches(r) for r in p.rules))
        """The policies with a rule that can reach `spec.replicas`: most specs have none,
        and then no workload's rules need to be worked out here (nor indexed)."""
        reaching = bool(self._reaching)
        self._workloads = {w.key: w for w in spec.workloads} if reaching else {}
        self._index = render.RuleIndex(spec.clusters)
        self._rules: dict[ResourceKey, Mapping[str, Operations]] = {}
        self._counts: dict[tuple[ResourceKey, str, int], int] = {}
        self._reaching_ops: dict[int, Operations] = {}

    def _by_cluster(self, key: ResourceKey) -> Mapping[str, Operations]:
        """Cluster → the operations that can reach `spec.replicas` there, in stacking order,
        for the clusters where there are any; empty when there are none anywhere."""
        found = self._rules.get(key)
        if found is None:
            found = {}
            workload = self._workloads.get(key)
            if workload is not None and workload.replicas is not None and self._reaching:
                reaching = render.rules_for(workload, self._reaching)
                clusters = {
                    cluster
                    for _, _, rule in reaching
                    if _reaches(rule)
                    for cluster in self._index.targets(rule)
                }
                if clusters:
                    applied = self._index.by_cluster(render.rules_for(workload, self._policies))
                    found = {c: self._ops(applied[c]) for c in sorted(clusters) if c in applied}
            self._rules[key] = found
        return found

    def _ops(self, applied: Rules) -> Operations:
        """The operations of `applied` that can reach `spec.replicas`, in order (each rule's
        worked out once: its paths are parsed once per spec, not per cluster)."""
        found: list[tuple[str, Mapping[str, Any]]] = []
        for _, _, rule in applied:
            ops = self._reaching_ops.get(id(rule))
            if ops is None:
                ops = tuple((o, op) for o, op in rule.operations if reaches_replicas(o, op))
                self._reaching_ops[id(rule)] = ops
            found += ops
        return tuple(found)

    @property
    def reaching(self) -> bool:
        """Whether any override policy has a rule that can reach `spec.replicas`."""
        return bool(self._reaching)

    def touched(self, key: ResourceKey) -> bool:
        """Whether an override can set this workload's `spec.replicas` on some cluster."""
        return bool(self._reaching) and bool(self._by_cluster(key))

    def count(self, key: ResourceKey, cluster: str, divided: int) -> int:
        """The `spec.replicas` that the cluster's rendered manifest holds when the division
        writes `divided` there."""
        applied = self._by_cluster(key).get(cluster)
        if not applied:
            return divided
        memo = (key, cluster, divided)
        found = self._counts.get(memo)
        if found is None:
            found = self._render(self._workloads[key], applied, divided)
            self._counts[memo] = found
        return found

    def _render(self, workload: Workload, applied: Operations, divided: int) -> int:
        """The rendered `spec.replicas`: only the operations that can reach it change it, so
        only they are applied, in order, to the identity and the divided count (copying and
        patching the whole manifest for every workload on every cluster cost a pass more than
        the rest of scheduling on a fleet whose every Deployment has such an override)."""
        manifest: dict[str, Any] = {
            "apiVersion": workload.manifest.get("apiVersion"),
            "kind": workload.manifest.get("kind"),
            "spec": {"replicas": divided},
        }
        try:
            for operation, op in applied:
                overrides.apply(manifest, operation, op)
        except (overrides.OverrideError, KeyError, TypeError, ValueError):
            return divided  # `dro validate` reports it (`overridecheck`); render fails alike
        spec = manifest.get("spec")
        value = spec.get("replicas") if isinstance(spec, dict) else None
        if value is None:
            return DEFAULT_REPLICAS
        if isinstance(value, bool) or not isinstance(value, int):
            return divided  # not a count: the schema check refuses it at validate
        return value

    def of(self, decision: Decision) -> dict[str, int]:
        """Cluster → the count that runs, where an override makes it differ from the count
        the decision renders there (`Decision.rendered`)."""
        if not self.touched(decision.key):
            return {}
        result = {}
        for placed in decision.rendered():
            if placed.replicas is None:
                continue
            runs = self.count(decision.key, placed.cluster, placed.replicas)
            if runs != placed.replicas:
                result[placed.cluster] = runs
        return result


def _reaches(rule: OverrideRule) -> bool:
    return any(reaches_replicas(operation, op) for operation, op in rule.operations)


def annotate(replicas: Replicas, decisions: Sequence[Decision]) -> list[Decision]:
    """The decisions with `effective` set from the spec's overrides (and cleared where none
    applies any more)."""
    if not replicas.reaching:  # no override sets replicas: only old counts to clear
        return [replace(d, effective={}) if d.effective else d for d in decisions]
    result = []
    for decision in decisions:
        found = replicas.of(decision)
        result.append(
            replace(decision, effective=found) if found or decision.effective else decision
        )
    return result
