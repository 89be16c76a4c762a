"""A warm validation equals a cold one: random change sequences through `validate.check` with
the memo and the parse cache a `dro run` process keeps (`pipeline.Warm`), each step compared
with a fresh check of the same source, problem for problem and value for value.

The steps are what a repository sees: a workload scaled, given a bad value and fixed again,
its file's documents shifted or reordered, a second file declaring the same object, a file
that does not parse, objects a workload names added and removed, a policy's selector and
priority changed, a cluster added and removed, the Kubernetes version changed, a CRD and its
custom resource added, and a plaintext Secret's file (never kept) changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import load, validate
from reconciler.domain import ResourceKey, Source, SourceFile, Spec
from reconciler.validate import dependencies, memo, parsecache
from tests.conftest import EXAMPLE

Files = dict[str, bytes]
CART = "workloads/shop/cart.yaml"
CANARY = "workloads/shop/cart-canary.yaml"
SHOP = "policies/shop.yaml"
EXTRA_CLUSTER = "clusters/eu-north-1.yaml"
CRD = "workloads/platform/widgets.yaml"
SECRET = "workloads/payments/ledger-db.yaml"
HOOK = "workloads/analytics/warehouse-db-sync.yaml"
NOTE = "  annotations: {multicluster.io/data: "


def _base() -> Files:
    return {f.path: f.data for f in load.from_directory(EXAMPLE).files}


def _sub(path: str, pattern: str, replacement: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        if path in files:
            files[path] = re.sub(pattern.encode(), replacement.encode(), files[path], count=1)

    return change


def _copy(path: str, to: str, old: str, new: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        files[to] = _base()[path].replace(old.encode(), new.encode())

    return change


def _drop(path: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        files.pop(path, None)

    return change


def _restore(path: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        files[path] = _base()[path]

    return change


def _swap_documents(files: Files) -> None:
    parts = files[CART].split(b"\n---\n")
    files[CART] = b"\n---\n".join([*parts[1:], parts[0]])


def _add_crd(files: Files) -> None:
    files[CRD] = b"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties: {size: {type: integer}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
spec: {size: 3}
"""


def _add_widget_error(files: Files) -> None:
    files[CRD.replace("widgets", "widget-bad")] = b"""apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, namespace: shop}
spec: {size: big}
"""


STEPS: dict[str, Callable[[Files], None]] = {
    "scale": _sub(CART, r"replicas: \d+", "replicas: 7"),
    "scale back": _sub(CART, r"replicas: \d+", "replicas: 4"),
    "replicas true": _sub(CART, r"replicas: \d+", "replicas: true"),
    "replicas float": _sub(CART, r"replicas: \d+", "replicas: 1.0"),
    "replicas one": _sub(CART, r"replicas: [^\n]+", "replicas: 1"),
    "bad quantity": _sub(CART, r"cpu: 250m", "cpu: 2cores"),
    "good quantity": _sub(CART, r"cpu: 2cores", "cpu: 250m"),
    "shift lines": _sub(CART, r"^", "# moved down a line\n"),
    "swap documents": _swap_documents,
    "broken yaml": _sub(CART, r"$", "\nbad: [\n"),
    "restore cart": _restore(CART),
    "no configmap": _sub(CART, r"\n---\napiVersion: v1\nkind: ConfigMap", "\n---\n#"),
    "service selector": _sub(
        CART,
        r"selector:\n    app.kubernetes.io/name: cart",
        "selector:\n    app.kubernetes.io/name: kart",
    ),
    "canary": _copy(CART, CANARY, "cart", "cart-canary"),
    "duplicate": _copy(CART, CANARY, "replicas: 4", "replicas: 2"),
    "no canary": _drop(CANARY),
    "policy label": _sub(
        SHOP, r"app.kubernetes.io/part-of: shop\}\}", "app.kubernetes.io/part-of: shops}}"
    ),
    "policy priority": _sub(SHOP, r"spec:\n", "spec:\n  priority: 5\n"),
    "restore policy": _restore(SHOP),
    "cluster": _copy("clusters/eu-west-2.yaml", EXTRA_CLUSTER, "eu-west-2", "eu-north-1"),
    "no cluster": _drop(EXTRA_CLUSTER),
    "no eu-west-1": _drop("clusters/eu-west-1.yaml"),
    "restore eu-west-1": _restore("clusters/eu-west-1.yaml"),
    "kubernetes 1.25": _sub(
        "dro.yaml", r'kubernetesVersion: "[0-9.]+"', 'kubernetesVersion: "1.25"'
    ),
    "kubernetes 1.32": _sub(
        "dro.yaml", r'kubernetesVersion: "[0-9.]+"', 'kubernetesVersion: "1.32"'
    ),
    "crd": _add_crd,
    "widget error": _add_widget_error,
    "no crd": _drop(CRD),
    "secret value": _sub(SECRET, r"stringData:\n", "stringData:\n  EXTRA: more\n"),
    "guard": _sub("dro.yaml", r"\nspec:\n", "\nspec:\n  guard: {namespaces: {deny: [shop]}}\n"),
    "restore dro.yaml": _restore("dro.yaml"),
    "data annotation": _sub(
        CART, r"namespace: shop\n", f"namespace: shop\n{NOTE}clickstream:read:5Gi/d}}\n"
    ),
    "bad data annotation": _sub(CART, r"namespace: shop\n", f"namespace: shop\n{NOTE}nope}}\n"),
    "promote": _sub(
        CART,
        r"namespace: shop\n",
        "namespace: shop\n  annotations: {multicluster.io/rollout-promote: canary}\n",
    ),
    "hook elsewhere": _sub(HOOK, r"StatefulSet/warehouse-db", "StatefulSet/warehouse-db2"),
    "no hook": _drop(HOOK),
    "restore hook": _restore(HOOK),
}


def _source(files: Files) -> Source:
    return Source(files=tuple(SourceFile(path=p, data=d) for p, d in sorted(files.items())))


def _same(warm: validate.Result, cold: validate.Result, step: str) -> None:
    assert warm.problems == cold.problems, step
    assert [p.severity for p in warm.problems] == [p.severity for p in cold.problems], step
    assert repr(warm.spec) == repr(cold.spec), step
    assert warm.spec == cold.spec, step
    if cold.spec is not None:  # the kept per-workload results equal the whole-repo walks
        keys = {(k.group, k.kind.lower(), k.namespace, k.name.lower()) for k in _keys(cold.spec)}
        assert len(keys) == len(cold.spec.workloads), step
        found = dependencies.find(cold.spec.workloads)
        assert cold.spec.dependents == found.by_dependency, step
        assert set(found.missing) <= set(cold.problems), step


def _keys(spec: Spec) -> list[ResourceKey]:
    return [w.key for w in spec.workloads]


def _replay(steps: list[str]) -> None:
    files = _base()
    kept, parsed = memo.Memo(), parsecache.ParseCache()
    for step in ["start", *steps]:
        if step != "start":
            STEPS[step](files)
        source = _source(files)
        parsed.begin()
        warm = validate.check(source, parsed=parsed, memo=kept)
        _same(warm, validate.check(source), step)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=10))
def test_a_warm_check_equals_a_cold_one_after_any_changes(steps: list[str]) -> None:
    _replay(steps)


def test_an_unchanged_file_gives_the_same_objects_and_a_changed_one_keeps_its_equal_documents() -> (
    None
):
    files = _base()
    kept = memo.Memo()
    first = validate.check(_source(files), memo=kept).spec
    STEPS["scale"](files)
    second = validate.check(_source(files), memo=kept).spec
    assert first is not None
    assert second is not None
    before = {w.key: w for w in first.workloads}
    changed = [w for w in second.workloads if w is not before[w.key]]
    secret_file = [w for w in changed if w.origin.path == SECRET]
    assert len(secret_file) == 3  # a file holding a Secret is never kept
    edited = [w for w in changed if w.origin.path != SECRET]
    assert [str(w.key) for w in edited] == ["shop/Deployment.apps/cart"]
    assert edited[0].replicas == 7
    assert [c is d for c, d in zip(first.clusters, second.clusters, strict=True)] == [True] * 7
    assert all(
        p is q for p, q in zip(first.placement_policies, second.placement_policies, strict=True)
    )
    assert first.config is second.config
    files.pop(SECRET)  # its file is never kept, so its objects are new on every pass
    third, fourth = (validate.check(_source(files), memo=kept).spec for _ in range(2))
    assert third is not None
    assert fourth is not None
    assert fourth.workloads is third.workloads  # nothing changed: the very tuple


def test_a_touched_parse_cache_keeps_the_entries_of_unchanged_files() -> None:
    files = _base()
    kept, parsed = memo.Memo(), parsecache.ParseCache()
    for _ in range(2):
        parsed.begin()
        validate.check(_source(files), parsed=parsed, memo=kept)
    assert not parsed.changed
    once = parsecache.ParseCache()
    validate.check(_source(files), parsed=once)
    assert parsed.exported() == once.exported()
    assert not any(key.endswith(SECRET) for key in once.exported())


@pytest.mark.parametrize(
    ("sabotage", "steps"),
    [
        ("_identical", ["replicas float"]),
        ("_same_context", ["widget error", "crd"]),
        ("_same_items", ["policy priority"]),
        ("_same_layers", ["guard"]),
        ("dependencies._same", ["no configmap"]),
    ],
)
def test_a_memo_keyed_wrong_is_caught(
    monkeypatch: pytest.MonkeyPatch, sabotage: str, steps: list[str]
) -> None:
    module, _, name = sabotage.rpartition(".")
    monkeypatch.setattr(dependencies if module else memo, name, lambda *_: True)
    with pytest.raises(AssertionError):
        _replay(steps)


def test_the_example_repo_replays_without_problems_beyond_its_own(tmp_path: Path) -> None:
    source = _source(_base())
    assert validate.check(source, memo=memo.Memo()).problems == validate.check(source).problems


def _declared_twice(kept: memo.Memo) -> list[str]:
    """The duplicate problems of a pass with the canary declaring cart's objects again,
    after a pass of the example repo with `kept`."""
    validate.check(_source(_base()), memo=kept)
    files = _base()
    STEPS["duplicate"](files)
    problems = validate.check(_source(files), memo=kept).problems
    return [p.message for p in problems if "declared twice" in p.message]


def test_a_duplicate_in_a_changed_file_is_found_by_the_kept_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert len(_declared_twice(memo.Memo())) == 3  # cart, its Service and its ConfigMap

    def forgetful(self: memo.Memo, by_part: dict[int, object]) -> None:
        self._by_part = by_part  # type: ignore[assignment]

    monkeypatch.setattr(memo.Memo, "_count", forgetful)  # counts kept wrong: caught above
    assert _declared_twice(memo.Memo()) == []
