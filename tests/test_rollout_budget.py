"""Rollouts under a placement disruption budget: a wave's clusters start in batches the budget
allows (`schedule.disruption.rollout_room`), and a drain in flight holds the rollout back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from reconciler.domain import Decision, DisruptionBudget, Observation, Placed
from reconciler.domain import rollout as r
from reconciler.render import rollout
from reconciler.schedule import disruption
from tests.builders.schedule import deployment
from tests.test_rollout import NAMES, POLICY, T0, _image, _revision, _spec


def _budgeted(setting: r.Rollout, image: str, commit: str, budget: int | None) -> Any:
    spec = _spec(setting, image, commit)
    (policy,) = spec.placement_policies
    limit = DisruptionBudget(count=budget) if budget is not None else None
    placement = replace(policy.placement, disruption=limit)
    return replace(spec, placement_policies=(replace(policy, placement=placement),))


def _decision(spec: Any, retiring: tuple[str, ...] = ()) -> Decision:
    (web,) = spec.workloads
    return Decision(
        key=web.key,
        api_version="apps/v1",
        policy=POLICY,
        clusters=tuple(Placed(n, 1) for n in NAMES),
        retiring=tuple(Placed(n, 1) for n in retiring),
    )


def _seen(states: dict[str, tuple[str, str]]) -> dict[str, Observation]:
    """Cluster → (health, revision) of the workload there."""
    web = deployment("web", 5).key
    return {
        name: Observation(
            cluster=name, capacity={}, used={}, health={web: (h, "")}, revisions={web: rev}
        )
        for name, (h, rev) in states.items()
    }


class Passes:
    """Passes over one budgeted workload; `room` from the budget, as the pipeline asks it."""

    def __init__(self, setting: r.Rollout, budget: int | None) -> None:
        self.setting, self.budget = setting, budget
        self.last: Decision | None = None

    def run(
        self,
        image: str,
        at: float,
        seen: dict[str, Observation] | None = None,
        retiring: tuple[str, ...] = (),
    ) -> r.RolloutStatus:
        commit = "c-" + image
        spec = _budgeted(self.setting, image, commit, self.budget)
        before = {self.last.key: self.last} if self.last is not None else {}
        room = disruption.rollout_room(spec, seen)
        decided = [_decision(spec, retiring)]
        (decision,) = rollout.advance(spec, decided, before, seen, T0 + at, room=room)
        self.last = decision
        assert decision.rollout is not None
        return decision.rollout


def _started(status: r.RolloutStatus, new: str) -> set[str]:
    return {c.cluster for c in status.clusters if c.revision == new}


def test_a_wave_starts_in_batches_the_budget_allows() -> None:
    """One wave of five clusters, unobserved: budget 2 starts 2, 2 then 1 over three passes;
    without a budget all five start at once."""
    new = _revision("web:2")
    passes = Passes(r.Rollout(max_clusters=5), budget=2)
    passes.run("web:1", 0)
    first = passes.run("web:2", 10)
    assert _started(first, new) == {"a", "b"}
    assert first.message is not None
    assert "3 clusters wait for the disruption budget" in first.message
    assert _started(passes.run("web:2", 11), new) == {"a", "b", "c", "d"}
    assert _started(passes.run("web:2", 12), new) == set(NAMES)
    assert not passes.run("web:2", 13).in_progress

    unlimited = Passes(r.Rollout(max_clusters=5), budget=None)
    unlimited.run("web:1", 0)
    assert _started(unlimited.run("web:2", 10), new) == set(NAMES)


def test_a_budget_of_one_keeps_one_cluster_out_of_service_at_a_time() -> None:
    """Observed clusters: the next one starts only when the last is Healthy with the new
    revision; never two clusters started and not yet Healthy."""
    new, old = _revision("web:2"), _revision("web:1")
    passes = Passes(r.Rollout(max_clusters=5, soak=0.0, health_timeout=3600.0), budget=1)
    healthy_old = dict.fromkeys(NAMES, ("Healthy", old))
    passes.run("web:1", 0, _seen(healthy_old))
    status = passes.run("web:2", 10, _seen(healthy_old))
    assert _started(status, new) == {"a"}
    states = dict(healthy_old)
    for step in range(1, 30):
        started = _started(status, new)
        # the clusters it started roll out: Progressing for one pass, then Healthy
        for name in sorted(started):
            _health, revision = states[name]
            states[name] = ("Healthy", new) if revision == new else ("Progressing", new)
        out = [n for n in NAMES if states[n][0] != "Healthy"]
        assert len(out) <= 1, (step, states)
        status = passes.run("web:2", 10 + step, _seen(states))
        if not status.in_progress:
            break
    assert not status.in_progress
    assert all(states[n] == ("Healthy", new) for n in NAMES)


def test_a_drain_in_flight_holds_the_rollout_back_under_a_budget_of_one() -> None:
    """A move off `e` still has retiring copies: with budget 1 no cluster starts the new
    template; once the move has finished, one does."""
    new = _revision("web:2")
    passes = Passes(r.Rollout(max_clusters=5), budget=1)
    passes.run("web:1", 0)
    held = passes.run("web:2", 10, retiring=("e",))
    assert _started(held, new) == set()
    assert held.message is not None
    assert "wait for the disruption budget" in held.message
    assert _started(passes.run("web:2", 11), new) == {"a"}


def test_the_image_helper_changes_the_revision() -> None:
    """The tests above rely on two images giving two revisions."""
    web = deployment("web", 5)
    assert rollout.revision(_image(web, "web:1").manifest) != rollout.revision(
        _image(web, "web:2").manifest
    )
