"""The rollout state machine (`render.rollout`), pass by pass with `now` passed in."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.domain import (
    Decision,
    Observation,
    Placed,
    Placement,
    PolicyRef,
    Source,
    Spec,
    Workload,
    durations,
)
from reconciler.domain import rollout as r
from reconciler.render import rollout
from tests.builders.schedule import cluster, deployment, spec_of

NAMES = ("a", "b", "c", "d", "e")
POLICY = PolicyRef(kind="ResourcePlacementPolicy", namespace=None, name="p")
T0 = 1_800_000_000.0


def _image(workload: Workload, image: str) -> Workload:
    manifest: dict[str, Any] = rollout_copy(workload.manifest)
    manifest["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return replace(workload, manifest=manifest)


def rollout_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: rollout_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rollout_copy(v) for v in value]
    return value


def _spec(setting: r.Rollout, image: str, commit: str) -> Spec:
    clusters = [cluster(n, region="eu" if n in "ab" else "us") for n in NAMES]
    web = _image(deployment("web", 5), image)
    spec = spec_of(clusters, [web], Placement(rollout=setting))
    return replace(spec, source=Source(files=(), commit=commit))


def _decision(spec: Spec) -> Decision:
    (web,) = spec.workloads
    placed = tuple(Placed(n, 1) for n in NAMES)
    return Decision(key=web.key, api_version="apps/v1", policy=POLICY, clusters=placed)


class Passes:
    """Successive passes over one workload, the last pass's decision carried over."""

    def __init__(self, setting: r.Rollout) -> None:
        self.setting = setting
        self.last: Decision | None = None

    def run(
        self,
        image: str,
        commit: str,
        at: float,
        observed: dict[str, Observation] | None = None,
    ) -> r.RolloutStatus:
        spec = _spec(self.setting, image, commit)
        before = {self.last.key: self.last} if self.last is not None else {}
        (decision,) = rollout.advance(spec, [_decision(spec)], before, observed, T0 + at)
        self.last = decision
        assert decision.rollout is not None
        return decision.rollout


def _healthy(spec_image: str, clusters: tuple[str, ...], *, revision: str) -> dict[str, Any]:
    web = deployment("web", 5).key
    return {
        name: Observation(
            cluster=name,
            capacity={},
            used={},
            health={web: ("Healthy", "")},
            revisions={web: revision},
        )
        for name in clusters
    }


def _revision(image: str) -> str:
    return rollout.revision(_image(deployment("web", 5), image).manifest)


def test_the_revision_ignores_replicas_and_dros_annotations_only() -> None:
    base = _image(deployment("web", 5), "web:1").manifest
    more = rollout_copy(base) | {"spec": {**base["spec"], "replicas": 9}}
    noted = rollout_copy(base)
    noted["metadata"]["annotations"] = {r.PROMOTE_ANNOTATION: "prod"}
    theirs = rollout_copy(base)
    theirs["metadata"]["annotations"] = {"team": "web"}
    assert rollout.revision(base) == rollout.revision(more) == rollout.revision(noted)
    assert rollout.revision(theirs) != rollout.revision(base)
    assert _revision("web:2") != _revision("web:1")


def test_waves_by_count_percent_names_and_labels() -> None:
    labels = {n: {"region": "eu" if n in "ab" else "us"} for n in NAMES}
    assert rollout.waves(r.Rollout(max_clusters=2), NAMES, labels) == [
        ("1", ("a", "b")),
        ("2", ("c", "d")),
        ("3", ("e",)),
    ]
    # 25% of 5 clusters rounds down to 1, never to none
    assert len(rollout.waves(r.Rollout(max_percent=25.0), NAMES, labels)) == 5
    named = r.Rollout(
        waves=(
            r.Wave(name="canary", clusters=("c",)),
            r.Wave(name="eu", labels=MappingProxyType({"region": "eu"})),
            r.Wave(name="gone", clusters=("z",)),
        )
    )
    assert rollout.waves(named, NAMES, labels) == [
        ("canary", ("c",)),
        ("eu", ("a", "b")),
        ("rest", ("d", "e")),
    ]


def test_unobserved_clusters_move_one_wave_per_pass() -> None:
    passes = Passes(r.Rollout(max_clusters=2, soak=3600.0))
    first = passes.run("web:1", "c1", 0)
    assert not first.in_progress
    started = passes.run("web:2", "c2", 10)
    assert (started.phase, started.wave, started.waves) == (r.PROGRESSING, 1, 3)
    assert started.previous == _revision("web:1")
    assert started.revision == _revision("web:2")
    assert {c.cluster: c.commit for c in started.clusters} == {
        "a": "c2",
        "b": "c2",
        "c": "c1",
        "d": "c1",
        "e": "c1",
    }
    assert passes.run("web:2", "c2", 11).wave == 2  # no soak without observations
    assert passes.run("web:2", "c2", 12).wave == 3
    done = passes.run("web:2", "c2", 13)
    assert done == r.RolloutStatus(revision=_revision("web:2"), commit="c2")


def test_an_observed_wave_waits_for_health_with_the_new_revision_and_its_soak() -> None:
    passes = Passes(r.Rollout(max_clusters=2, soak=600.0, health_timeout=3600.0))
    passes.run("web:1", "c1", 0)
    passes.run("web:2", "c2", 0)
    new = _revision("web:2")
    stale_revision = _healthy("web:1", ("a", "b"), revision=_revision("web:1"))
    assert passes.run("web:2", "c2", 100, stale_revision).wave == 1  # Healthy, old template
    soaking = passes.run("web:2", "c2", 200, _healthy("web:2", ("a", "b"), revision=new))
    assert {c.cluster: c.state for c in soaking.clusters if c.wave == 1} == {
        "a": r.SOAKING,
        "b": r.SOAKING,
    }
    assert soaking.cluster("a") is not None
    assert soaking.cluster("a").healthy_since == durations.rfc3339(T0 + 200)
    assert passes.run("web:2", "c2", 799, _healthy("web:2", ("a", "b"), revision=new)).wave == 1
    assert passes.run("web:2", "c2", 800, _healthy("web:2", ("a", "b"), revision=new)).wave == 2


def test_an_unreachable_cluster_holds_its_wave_until_the_timeout() -> None:
    passes = Passes(r.Rollout(max_clusters=2, soak=0.0, health_timeout=600.0))
    passes.run("web:1", "c1", 0)
    passes.run("web:2", "c2", 0)
    seen = _healthy("web:2", ("a", "b"), revision=_revision("web:2"))
    seen["b"] = replace(seen["b"], stale=True)
    assert passes.run("web:2", "c2", 300, seen).phase == r.PROGRESSING
    paused = passes.run("web:2", "c2", 601, seen)
    assert paused.phase == r.PAUSED
    assert paused.wave == 1
    assert paused.message is not None
    assert "on b:" in paused.message


def test_rollback_gives_the_failed_wave_its_previous_template() -> None:
    setting = r.Rollout(max_clusters=2, soak=0.0, health_timeout=600.0, on_failure="Rollback")
    passes = Passes(setting)
    passes.run("web:1", "c1", 0)
    passes.run("web:2", "c2", 0)
    passes.run("web:2", "c2", 1)  # unobserved: wave 2 (c, d) released
    failing = {n: replace(o, health={}) for n, o in _healthy("", ("c", "d"), revision="").items()}
    back = passes.run("web:2", "c2", 700, failing)
    assert back.phase == r.ROLLED_BACK
    assert {c.cluster: (c.commit, c.state) for c in back.clusters} == {
        "a": ("c2", r.UPDATED),
        "b": ("c2", r.UPDATED),
        "c": ("c1", r.ROLLED_BACK_CLUSTER),
        "d": ("c1", r.ROLLED_BACK_CLUSTER),
        "e": ("c1", r.WAITING),
    }
    assert passes.run("web:2", "c2", 5000) == back  # it stays rolled back


def test_a_new_change_mid_rollout_starts_from_what_each_cluster_runs() -> None:
    passes = Passes(r.Rollout(max_clusters=2, soak=0.0))
    passes.run("web:1", "c1", 0)
    passes.run("web:2", "c2", 0)  # a, b on web:2
    restarted = passes.run("web:3", "c3", 1)
    assert restarted.wave == 1
    assert {c.cluster: (c.from_commit, c.commit) for c in restarted.clusters} == {
        "a": ("c2", "c3"),
        "b": ("c2", "c3"),
        "c": ("c1", "c1"),
        "d": ("c1", "c1"),
        "e": ("c1", "c1"),
    }
    assert rollout.in_force(replace(passes.last, rollout=restarted), "c") == (
        _revision("web:1"),
        "c1",
    )
    assert rollout.in_force(replace(passes.last, rollout=restarted), "a") is None


def test_a_reverted_change_is_complete_at_once() -> None:
    passes = Passes(r.Rollout(max_clusters=1))
    passes.run("web:1", "c1", 0)
    passes.run("web:2", "c2", 0)  # only a has web:2
    reverted = passes.run("web:1", "c3", 1)
    assert reverted.phase == r.PROGRESSING  # a must go back to web:1: its wave is released
    assert reverted.wave == 1
    assert reverted.cluster("a").revision == _revision("web:1")
    assert not passes.run("web:1", "c3", 2).in_progress  # nothing else runs another template


def test_approval_is_not_taken_from_the_change_itself() -> None:
    setting = r.Rollout(
        waves=(
            r.Wave(name="one", clusters=("a",)),
            r.Wave(name="all", clusters=NAMES, approval=True),
        )
    )
    passes = Passes(setting)
    passes.run("web:1", "c1", 0)
    spec = _spec(setting, "web:2", "c2")
    (web,) = spec.workloads
    manifest = rollout_copy(web.manifest)
    manifest["metadata"]["annotations"] = {r.PROMOTE_ANNOTATION: "all"}
    spec = replace(spec, workloads=(replace(web, manifest=manifest),))
    before = {passes.last.key: passes.last}
    (started,) = rollout.advance(spec, [_decision(spec)], before, None, T0)
    (next_pass,) = rollout.advance(spec, [_decision(spec)], {started.key: started}, None, T0 + 1)
    assert next_pass.rollout is not None
    assert next_pass.rollout.phase == r.AWAITING_APPROVAL
    assert next_pass.rollout.message is not None
    assert "rollout-promote: all" in next_pass.rollout.message


HEALTH = st.sampled_from(("Healthy", "Progressing", "stale", "unobserved"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(("web:1", "web:2", "web:3")),
            st.integers(min_value=0, max_value=900),
            st.lists(HEALTH, min_size=len(NAMES), max_size=len(NAMES)),
        ),
        min_size=1,
        max_size=14,
    ),
    on_failure=st.sampled_from(("Pause", "Rollback")),
)
def test_no_cluster_ever_runs_anything_but_its_template_or_the_newest(
    steps: list[tuple[str, int, list[str]]], on_failure: str
) -> None:
    """Whatever the changes, health and timing: a cluster keeps its template, takes the
    newest, or (rolled back) gets back the one it had; only released waves run the newest; a
    rollout's wave never goes back; a complete rollout leaves every cluster on the newest."""
    setting = r.Rollout(
        max_clusters=2,
        soak=300.0,
        health_timeout=600.0,
        on_failure=on_failure,  # type: ignore[arg-type]
    )
    passes = Passes(setting)
    passes.run("web:1", "c0", 0)
    runs = dict.fromkeys(NAMES, _revision("web:1"))
    at, last = 0.0, passes.last
    for index, (image, wait, healths) in enumerate(steps, start=1):
        at += wait
        target = _revision(image)
        seen = {}
        for name, how in zip(NAMES, healths, strict=True):
            if how == "unobserved":
                continue
            live = runs[name]
            observed = _healthy("", (name,), revision=live)[name]
            if how == "stale":
                observed = replace(observed, stale=True)
            elif how == "Progressing":
                observed = replace(observed, health={deployment("web", 5).key: ("Progressing", "")})
            seen[name] = observed
        before = last.rollout if last is not None else None
        status = passes.run(image, f"c{index}", at, seen)
        last = passes.last
        assert last is not None
        for name in NAMES:
            held = rollout.in_force(last, name)
            now_runs = held[0] if held is not None else status.revision
            entry = status.cluster(name)
            allowed = {runs[name], target}
            if entry is not None:
                allowed.add(entry.from_revision)
            assert now_runs in allowed, (name, runs[name], now_runs, target)
            if now_runs == target and now_runs != runs[name] and status.in_progress:
                assert entry is not None
                assert entry.wave <= status.wave
            runs[name] = now_runs
        if not status.in_progress:
            assert status.clusters == ()
            assert set(runs.values()) == {status.revision}
        same = before is not None and before.revision == status.revision
        if same and before is not None and before.in_progress and status.in_progress:
            assert status.wave >= before.wave
