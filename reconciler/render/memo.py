"""What render keeps between the passes of one process, so that a pass re-renders only the
workloads whose inputs changed (`pipeline.Warm.render`).

Per workload, the files its decision renders (its manifests on every cluster, its decision
file, its Argo CD and KEP-5313 decisions, its Karmada output) are reused when every input they
are made of is equal to the last pass's:

- the workload: its key, apiVersion, manifest (with any move hook's environment already
  added), replica count and sealed bytes, but not where it was read from. The manifest is
  compared as JSON, which tells `1` from `1.0` and `true` (Python's `==` does not, and YAML
  writes them differently);
- the decision: every field but the diagnosis, and of the diagnosis its strategy (the Karmada
  policy reads it) and its written text. A decision read back from the branch carries that
  text (`Decision.recorded`); a freshly made diagnosis is never matched, and once rendered its
  text is cut from the file written, as the next pass reads it back;
- the override rules, by content, that target each cluster (which follows the clusters'
  names and labels), and the output settings (`spec.output`).

Where an input is not keyed, the workload is always rendered again: a rollout in progress
(its clusters keep a template read from an older source commit) and a placement whose
dispatching is suspended (its clusters keep the last rendered files). Nothing else is read
by `render._render_decision`, so a pass with a warm memo writes the same bytes as a cold one
(tests/test_render_memo.py checks it over a sequence of changes).

Shared documents (each cluster's kustomization and status file) are dumped again only when
the document, as JSON, differs from the one last dumped at that path: comparing two documents
costs a fraction of writing one.

A whole unsharded pass goes through `warm_tree` (`render.warmtree`): a decision that is the
very object the last pass rendered, of the very workload object, is not looked at at all, and
the tree is the last one patched where files changed.

Called by `pipeline.warm`, `render` and `render.shared`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reconciler import yamlio
from reconciler.branch import outputtree, paths, statefiles
from reconciler.domain import (
    Decision,
    OverridePolicy,
    OverrideRule,
    ResourceKey,
    Spec,
    Workload,
)
from reconciler.render import warmtree

Rules = Mapping[str, tuple[tuple[OverridePolicy, int, OverrideRule], ...]]
"""Cluster name → the override rules, in order, that target it (`render.RuleIndex`)."""

_DECISION_FIELDS = tuple(
    f.name for f in dataclasses.fields(Decision) if f.name not in ("diagnosis", "recorded")
)


@dataclasses.dataclass(frozen=True, slots=True)
class _Rendered:
    """One workload's rendered files and the inputs they were rendered from."""

    workload: tuple[Any, ...]
    decision: tuple[Any, ...]
    diagnosis: str | None
    """The diagnosis block as written in the decision file (None: none to match)."""
    rules: Mapping[str, tuple[str, ...]]
    context: Any
    files: Mapping[str, bytes]


class Memo:
    """Rendered files per workload and dumped shared documents per path, from the last pass.

    `hits` and `misses` count the workloads reused and rendered since the memo was made.
    """

    def __init__(self) -> None:
        self._rendered: dict[ResourceKey, _Rendered] = {}
        self._documents: dict[str, tuple[str, bytes]] = {}
        self._contents: dict[int, tuple[Rules, Mapping[str, tuple[str, ...]]]] = {}
        self._listings: dict[ResourceKey, list[tuple[str, str]]] = {}
        self._current: set[ResourceKey] = set()
        self.assembly = warmtree.Assembly()
        """The last whole tree and each decision's part of it (`render.warmtree`)."""
        self.hits = 0
        self.misses = 0

    def decision_files(
        self,
        workload: Workload,
        decision: Decision,
        rules: Rules,
        rule_key: Callable[[OverrideRule], str],
        context: Any,
        render: Callable[[], dict[str, bytes]],
    ) -> Mapping[str, bytes]:
        """The files of `decision`: the last pass's when every input is equal, else
        `render()`'s, remembered for the next pass. `rule_key` gives a rule's content."""
        if decision.rollout is not None and decision.rollout.in_progress:
            self._rendered.pop(decision.key, None)
            self.misses += 1
            return render()
        self._current.add(decision.key)
        inputs = _Rendered(
            workload=_workload_inputs(workload),
            decision=_decision_inputs(decision),
            diagnosis=decision.recorded if isinstance(decision.recorded, str) else None,
            rules=self._content(rules, rule_key),
            context=context,
            files={},
        )
        known = self._rendered.get(decision.key)
        if (
            known is not None
            and inputs.diagnosis is not None
            and known.diagnosis == inputs.diagnosis
            and known.decision == inputs.decision
            and known.workload == inputs.workload
            and known.rules == inputs.rules
            and known.context == inputs.context
        ):
            self.hits += 1
            return known.files
        self.misses += 1
        self._listings.pop(decision.key, None)
        files = render()
        written = inputs.diagnosis
        if written is None:
            written = _diagnosis_text(files.get(paths.decision_path(decision.key)))
        self._rendered[decision.key] = dataclasses.replace(inputs, diagnosis=written, files=files)
        return files

    def listed(
        self, key: ResourceKey, listing: Callable[[], list[tuple[str, str]]]
    ) -> list[tuple[str, str]]:
        """`listing()`, the workload's manifests as its clusters' kustomizations list them:
        the last pass's list when this pass reused the workload's files, else computed."""
        if key not in self._current:
            return listing()
        found = self._listings.get(key)
        if found is None:
            found = self._listings[key] = listing()
        return found

    def _content(
        self, rules: Rules, rule_key: Callable[[OverrideRule], str]
    ) -> Mapping[str, tuple[str, ...]]:
        """Cluster → the content of the rules that target it; once per rule list and pass
        (`render.RuleIndex.by_cluster` gives one object per list)."""
        known = self._contents.get(id(rules))
        if known is not None and known[0] is rules:
            return known[1]
        content = {
            name: tuple(rule_key(rule) for _, _, rule in chosen) for name, chosen in rules.items()
        }
        self._contents[id(rules)] = (rules, content)
        return content

    def dumped(self, path: str, document: Any, *, sealed: bool = False) -> bytes:
        """`document` as YAML bytes (`statefiles.seal`ed when `sealed`): the bytes last
        written at `path` when the document is equal to the one they were written from."""
        typed = _typed(document)
        known = self._documents.get(path)
        if known is not None and known[0] == typed:
            return known[1]
        data = yamlio.dump(document).encode()
        if sealed:
            data = statefiles.seal(data)
        self._documents[path] = (typed, data)
        return data

    def warm_tree(
        self, spec: Spec, decisions: Sequence[Decision], renderer: warmtree.Renderer
    ) -> outputtree.Tree:
        """The whole tree of a pass, made from the last pass's where the decisions are the
        same (`render.warmtree`); the memo then forgets the workloads that are gone."""
        tree, gone = self.assembly.tree(spec, decisions, renderer)
        self.hits += self.assembly.reused
        self._contents.clear()
        self._current.clear()
        for key in gone:
            self._rendered.pop(key, None)
            self._listings.pop(key, None)
        return tree


def dumped(memo: Memo | None, path: str, document: Any, *, sealed: bool = False) -> bytes:
    """`Memo.dumped` when there is a memo; else `document` dumped (and sealed) afresh."""
    if memo is not None:
        return memo.dumped(path, document, sealed=sealed)
    data = yamlio.dump(document).encode()
    return statefiles.seal(data) if sealed else data


def _workload_inputs(workload: Workload) -> tuple[Any, ...]:
    """What of a workload its render reads: everything but where it was read from."""
    return (
        workload.key,
        workload.api_version,
        _typed(workload.manifest),
        workload.replicas,
        workload.sealed,
    )


def _typed(value: Any) -> str:
    """Parsed YAML as JSON: equal text, equal YAML (`yamlio.dump` sorts keys itself, so key
    order only costs a render)."""
    return json.dumps(value, separators=(",", ":"), default=repr, check_circular=False)


def _decision_inputs(decision: Decision) -> tuple[Any, ...]:
    """What of a decision its render reads, but the diagnosis's text: every other field,
    and the strategy (`karmadaout.pinned`)."""
    return (
        *(getattr(decision, name) for name in _DECISION_FIELDS),
        decision.diagnosis.strategy,
    )


def _diagnosis_text(data: bytes | None) -> str | None:
    """The diagnosis block of a rendered decision file, as `statefiles.decision` cuts it
    when the next pass reads the file back; None when there is none."""
    if data is None:
        return None
    text = data.partition(b"\n")[2].decode("utf-8")  # after the seal line `render` wrote
    return yamlio.cut_block(text, "diagnosis", 2)[1]
