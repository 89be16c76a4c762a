"""A warm render (`render.warmtree`: the last pass's tree patched where decisions changed)
equals a cold one, path for path and byte for byte, over random change sequences; the paths
it says changed cover every difference from the last tree; and a broken assembly is caught.

Unchanged decisions are handed over as the very objects of the last pass (as the scheduler
keeps them), or as equal copies (as a read-back gives them); changed ones as new objects.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import load, render, schedule, validate
from reconciler.branch import outputtree, paths, statefiles
from reconciler.domain import Decision, Placed, Spec
from reconciler.render import warmtree
from tests.conftest import EXAMPLE


def _read_back(tree: dict[str, bytes], decisions: Sequence[Decision]) -> list[Decision]:
    """The decisions as the next pass has them: their diagnosis is the text written."""
    return [
        replace(d, recorded=statefiles.decision(path, tree[path]).recorded)
        for d in decisions
        for path in [paths.decision_path(d.key)]
    ]


def _start() -> tuple[Spec, list[Decision]]:
    spec = validate.spec(load.from_directory(EXAMPLE))
    placed = schedule.place(spec)
    return spec, _read_back(render.tree(spec, placed), placed)


def _scaled(decision: Decision, by: int) -> Decision:
    clusters = tuple(
        p if p.replicas is None else Placed(p.cluster, max(0, p.replicas + by))
        for p in decision.clusters
    )
    return replace(decision, clusters=clusters)


def _step(
    rng: random.Random, kind: str, spec: Spec, decisions: list[Decision], removed: list[Decision]
) -> tuple[Spec, list[Decision]]:
    """One change: a decision scaled or moved off a cluster, a manifest edited, a workload
    removed or brought back, equal copies of every decision, or nothing."""
    at = rng.randrange(len(decisions))
    if kind == "scale":
        decisions = [*decisions]
        decisions[at] = _scaled(decisions[at], rng.choice([-1, 1, 2]))
    elif kind == "leave" and len(decisions[at].clusters) > 1:
        decisions = [*decisions]
        decisions[at] = replace(decisions[at], clusters=decisions[at].clusters[1:])
    elif kind == "edit":
        key = decisions[at].key
        workloads = tuple(
            replace(w, manifest={**w.manifest, "metadata": {**w.manifest["metadata"], "x": at}})
            if w.key == key
            else w
            for w in spec.workloads
        )
        spec = replace(spec, workloads=workloads)
    elif kind == "remove" and len(decisions) > 3:
        removed.append(decisions[at])
        decisions = [d for i, d in enumerate(decisions) if i != at]
    elif kind == "copies":
        decisions = [replace(d) for d in decisions]
    return spec, decisions


KINDS = ["scale", "leave", "edit", "remove", "copies", "nothing"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=8))
def test_a_warm_tree_equals_a_cold_one_after_every_change(seed: int, kinds: list[str]) -> None:
    rng = random.Random(seed)
    spec, decisions = _start()
    memo = render.memo.Memo()
    last = render.tree(spec, decisions, remembered=memo)
    assert isinstance(last, outputtree.Tree)
    assert last == render.tree(spec, decisions)
    removed: list[Decision] = []
    for number, kind in enumerate(kinds):
        spec, decisions = _step(rng, kind, spec, decisions, removed)
        if kind == "nothing" and removed:  # a removed workload comes back, as it was
            decisions = [*decisions, removed.pop()]
        warm = render.tree(spec, decisions, remembered=memo)
        cold = render.tree(spec, decisions)
        assert warm == cold, f"step {number}: {kind}"
        assert isinstance(warm, outputtree.Tree)
        differ = {p for p in {*warm, *last} if warm.get(p) != last.get(p)}
        assert differ <= warm.changed, f"step {number}: {kind}: untold {differ - warm.changed}"
        assert warm.under(paths.STATUS) == tuple(sorted(p for p in cold if paths.is_status(p)))
        last = warm


def test_an_unchanged_pass_reuses_every_decision_and_a_scale_renders_one() -> None:
    spec, decisions = _start()
    memo = render.memo.Memo()
    render.tree(spec, decisions, remembered=memo)
    again = render.tree(spec, decisions, remembered=memo)
    assert memo.assembly.reused == len(decisions)
    assert again.changed == frozenset()
    at = next(i for i, d in enumerate(decisions) if any(p.replicas for p in d.clusters))
    decisions[at] = _scaled(decisions[at], 2)
    scaled = render.tree(spec, decisions, remembered=memo)
    assert memo.assembly.reused == len(decisions) - 1
    assert scaled == render.tree(spec, decisions)
    key = decisions[at].key
    touched = {p for p in scaled.changed if p.endswith(f"{key.name}.yaml")}
    assert paths.decision_path(key) in scaled.changed
    assert touched, "the workload's own files are among the changed paths"


def test_an_assembly_that_forgets_a_decisions_clusters_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The comparison above would see a broken assembly: one that does not mark the
    clusters of a changed decision for their kustomization and status files to be remade."""
    spec, decisions = _start()
    memo = render.memo.Memo()
    render.tree(spec, decisions, remembered=memo)
    monkeypatch.setattr(warmtree.Assembly, "_take", lambda *_args, **_kwargs: None)
    at = next(i for i, d in enumerate(decisions) if len(d.clusters) > 1)
    decisions[at] = replace(decisions[at], clusters=decisions[at].clusters[1:])
    assert render.tree(spec, decisions, remembered=memo) != render.tree(spec, decisions)


def test_an_output_tree_is_read_only() -> None:
    tree = outputtree.Tree({"a": b"1", "status/x": b"2"})
    for change in (
        lambda: tree.__setitem__("a", b"3"),
        lambda: tree.update({"a": b"3"}),
        lambda: tree.pop("a"),
        lambda: tree.__delitem__("a"),
    ):
        with pytest.raises(TypeError):
            change()
    assert tree.under("status/") == ("status/x",)
    patched = outputtree.Tree.patched(tree, {"status/y": b"3"}, ["status/x"])
    assert dict(patched) == {"a": b"1", "status/y": b"3"}
    assert patched.under("status/") == ("status/y",)
    assert patched.changed == {"status/x", "status/y"}
    assert patched.previous is tree
