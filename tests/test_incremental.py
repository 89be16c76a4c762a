"""Incremental passes equal full ones: random change sequences through two deployments of dro.

Deployment A is `dro run`'s: one process whose `pipeline.Warm` carries every cache from pass
to pass. Deployment B is cold: a fresh `Warm`, and a state directory of its own, for every
pass. Both read the same source history (identical commits, so identical shas) in their own
bare repositories, at the same pass times. After every step the output branch of A must be
the very commit B made: same tree, same message, same parents, byte for byte.

The steps are what a fleet sees: a workload scaled, its image changed (a rollout starts), a
workload added and removed, a cluster's usage and a policy's water-level limit changed, and
time passing with nothing changed (the no-op pass, and the time-driven one: rollout waits,
cooldowns, status refreshes).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconciler import load, pipeline
from reconciler.domain import Decision, Move, Placed
from reconciler.domain.disruption import Disruption, DisruptionBudget
from reconciler.domain.reasons import MoveCode, MoveReason
from reconciler.domain.rollout import PROGRESSING, RolloutStatus
from reconciler.domain.spec import Prediction
from reconciler.pipeline import idle
from reconciler.settings import Settings
from tests.conftest import EXAMPLE, SourceRepo, make_source_repo

START = 1_767_600_000.0  # 2026-01-05T08:00:00Z
CART = "workloads/shop/cart.yaml"
EXTRA = "workloads/shop/cart-canary.yaml"
EU = "clusters/eu-west-1.yaml"
PAYMENTS = "policies/payments.yaml"


@dataclass
class Deployment:
    """One dro deployment: its source repo, its settings and (for A) its long-lived Warm."""

    repo: SourceRepo
    settings: Settings
    warm: pipeline.Warm | None

    def run(
        self, monkeypatch: pytest.MonkeyPatch, when: float, stages: list[str] | None = None
    ) -> str | None:
        """One pass at `when` (its stages appended to `stages`); the output branch's sha
        after it."""
        monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda: when))
        warm = self.warm if self.warm is not None else pipeline.Warm(state_dir=None)
        seen = stages if stages is not None else []
        pipeline.reconcile_once(self.settings, warm=warm, on_stage=seen.append)
        return self.repo.branch_sha(self.settings.output_branch)


def _sub(path: str, pattern: str, replacement: str) -> Callable[[Path], None]:
    def change(work: Path) -> None:
        target = work / path
        text, count = re.subn(pattern, replacement, target.read_text(), count=1)
        assert count == 1, f"{pattern} not in {path}"
        target.write_text(text)

    return change


def _add_canary(work: Path) -> None:
    (work / EXTRA).write_text((work / CART).read_text().replace("cart", "cart-canary"))


def _remove_canary(work: Path) -> None:
    (work / EXTRA).unlink(missing_ok=True)


CHANGES: dict[str, Callable[[int], Callable[[Path], None]]] = {
    "scale": lambda n: _sub(CART, r"replicas: \d+", f"replicas: {2 + n % 7}"),
    "image": lambda n: _sub(CART, r"cart:[\d.]+", f"cart:1.{9 + n}.0"),
    "usage": lambda n: _sub(EU, r'allocated: \{cpu: "\d+"', f'allocated: {{cpu: "{60 + 40 * n}"'),
    "limit": lambda n: _sub(PAYMENTS, r"\{cpu: 0\.\d+", f"{{cpu: 0.{70 + 5 * (n % 5)}"),
    "add": lambda _n: _add_canary,
    "remove": lambda _n: _remove_canary,
    "time": lambda _n: lambda _work: None,
}


def _deployments(root: Path) -> tuple[Deployment, Deployment]:
    made = []
    for name, warm in (("warm", pipeline.Warm(state_dir=root / "warm-state")), ("cold", None)):
        repo = make_source_repo(root / name)
        state = warm.state_dir if warm is not None else root / "cold-state"
        assert state is not None
        made.append(Deployment(repo, Settings(repo=str(repo.bare), state_dir=state), warm))
    return made[0], made[1]


def _fresh_cold_state(cold: Deployment) -> None:
    """B keeps nothing between passes but what the output branch holds: its state directory
    (its git caches and any on-disk cache) is removed before each pass."""
    shutil.rmtree(cold.settings.state_dir, ignore_errors=True)


@settings(
    max_examples=5,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a pass is slow: no shrinking
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(sorted(CHANGES)), st.integers(0, 3), st.sampled_from([0, 600])),
        min_size=2,
        max_size=5,
    )
)
@pytest.mark.slow
def test_a_warm_pass_equals_a_cold_pass_after_every_change(
    monkeypatch: pytest.MonkeyPatch, steps: list[tuple[str, int, int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        warm, cold = _deployments(Path(tmp))
        when = START
        assert warm.run(monkeypatch, when) == cold.run(monkeypatch, when)
        for number, (kind, n, later) in enumerate(steps):
            for deployment in (warm, cold):
                CHANGES[kind](n)(deployment.repo.work)
                deployment.repo.commit(f"step {number}: {kind}")
            assert warm.repo.branch_sha("main") == cold.repo.branch_sha("main")
            when += later
            _fresh_cold_state(cold)
            made = warm.run(monkeypatch, when)
            assert made == cold.run(monkeypatch, when), f"diverged at step {number}: {kind}"


def test_the_same_input_twice_makes_no_commit_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-op pass: a second pass on the same source at the same time commits nothing."""
    warm, _ = _deployments(tmp_path)
    first = warm.run(monkeypatch, START)
    settled = warm.run(monkeypatch, START)
    assert warm.run(monkeypatch, START) == settled
    assert first is not None


def test_a_pass_after_a_fixed_point_is_idle_until_the_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a pass made no commit, the next one on the same source stops after loading; a
    new source commit, or an output branch moved by someone else, makes a full pass again."""
    warm, _ = _deployments(tmp_path)
    shas = [warm.run(monkeypatch, START + 60 * i) for i in range(4)]
    assert shas[-1] == shas[-2], "the example fleet settles within three passes"
    stages: list[str] = []
    assert warm.run(monkeypatch, START + 300, stages) == shas[-1]
    assert stages == ["load"], "an idle pass stops after loading"
    assert warm.warm is not None
    again = pipeline.reconcile_once(warm.settings, warm=warm.warm)
    assert again.idle
    assert again.commit is None
    CHANGES["scale"](3)(warm.repo.work)
    warm.repo.commit("scaled")
    stages.clear()
    assert warm.run(monkeypatch, START + 360, stages) != shas[-1]
    assert stages[-1] == "commit"
    turns = warm.warm.turns
    assert 0 < turns.reused < len(turns.turns), "the scaled workload alone is decided again"


def _steady_plan(tmp_path: Path) -> pipeline.Planned:
    planned, _ = pipeline.plan(load.from_directory(EXAMPLE), now=START)
    return planned


WAITING: dict[str, Callable[[Decision], Decision]] = {
    "a move in its cooldown": lambda d: replace(
        d, moves=(Move("a", "b", 1, MoveReason(MoveCode.WATER_LEVEL), "2026-01-05T08:00:00Z"),)
    ),
    "a copy retiring": lambda d: replace(d, retiring=(Placed("eu-west-1", 1),)),
    "replicas over the limit": lambda d: replace(d, over_limit=(Placed("eu-west-1", 1),)),
    "replicas pending": lambda d: replace(d, pending=2),
    "a rollout in progress": lambda d: replace(
        d, rollout=RolloutStatus(revision="r2", commit="c2", phase=PROGRESSING)
    ),
    "a step held by the budget": lambda d: replace(
        d, disruption=Disruption(budget=DisruptionBudget(count=1), allowed=1, leaving=("a",))
    ),
}


@pytest.mark.parametrize("why", sorted(WAITING))
def test_a_plan_that_waits_on_a_clock_is_no_fixed_point(tmp_path: Path, why: str) -> None:
    """Each thing a later pass decides by the clock keeps the next pass from being idle."""
    planned = _steady_plan(tmp_path)
    decisions = planned.decisions
    assert idle.fixed_point(None, True, planned.spec, decisions, frozenset())
    changed = (WAITING[why](decisions[0]), *decisions[1:])
    assert not idle.fixed_point(None, True, planned.spec, changed, frozenset())


def test_prediction_filling_clusters_and_commits_are_never_a_fixed_point(tmp_path: Path) -> None:
    planned = _steady_plan(tmp_path)
    spec, decisions = planned.spec, planned.decisions
    assert not idle.fixed_point(None, False, spec, decisions, frozenset())
    assert not idle.fixed_point(None, True, spec, decisions, frozenset({"eu-west-1"}))
    assert not idle.fixed_point("a1b2", True, spec, decisions, frozenset())
    predicting = replace(spec, config=replace(spec.config, prediction=Prediction(enabled=True)))
    assert not idle.fixed_point(None, True, predicting, decisions, frozenset())


TAINTED = {
    "dro.yaml": """apiVersion: multicluster.io/v1alpha1
kind: SchedulerConfiguration
metadata: {name: dro}
spec:
  defaultPlacement:
    targetClusters: [{selectorType: label, values: ["env=prod"]}]
""",
    "clusters/a.yaml": """apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {name: a, labels: {env: prod}}
spec:
  capacity: {cpu: "16", memory: 64Gi}
  taints: [{key: maintenance, effect: NoExecute, timeAdded: "2026-01-05T08:00:00Z"}]
""",
    "clusters/b.yaml": """apiVersion: multicluster.io/v1alpha1
kind: Cluster
metadata: {name: b, labels: {env: prod}}
spec:
  capacity: {cpu: "16", memory: 64Gi}
""",
    "workloads/web.yaml": """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "web:1", resources: {requests: {cpu: "1"}}}]
""",
    "policies/web.yaml": """apiVersion: multicluster.io/v1alpha1
kind: ResourcePlacementPolicy
metadata: {name: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: shop}]
  targetClusters: [{selectorType: label, values: ["env=prod"]}]
  placement:
    replicaScheduling: {type: Divided, division: StaticWeight}
    tolerations:
      - {key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 600}
""",
}
"""Cluster `a` tainted NoExecute at START; the workload tolerates it for 600 s, so it keeps
its replicas there until START + 600 and leaves at the first pass after."""


def test_a_tolerated_taint_running_out_ends_the_fixed_point_though_no_state_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NoExecute taint tolerated for `tolerationSeconds` evicts when they run out. Nothing
    in the plan before then is a state the hand list of clock-bound states names (no move,
    no rollout, nothing pending), so by that list alone the fixed point would stand for ever
    and the eviction never happen; the instant the toleration runs out is consulted by the
    scheduler, and the fixed point holds only until it."""
    repo = make_source_repo(tmp_path / "tainted", None)
    repo.write(TAINTED)
    repo.commit("a cluster in maintenance")
    settings = Settings(repo=str(repo.bare), state_dir=tmp_path / "state")
    deployment = Deployment(repo, settings, pipeline.Warm(state_dir=settings.state_dir))
    shas = [deployment.run(monkeypatch, START + 60 * i) for i in range(1, 4)]
    assert shas[-1] == shas[-2], "the fleet settles"
    assert deployment.warm is not None
    assert deployment.warm.steady is not None
    steady = deployment.warm.steady
    placed = {p.cluster for p in steady.planned.decisions[0].clusters}
    assert "a" in placed, "tolerated for now: the replicas stay on the tainted cluster"
    assert not idle.waits_on_time(steady.planned.spec, steady.planned.decisions, frozenset())
    assert steady.until == pytest.approx(START + 600, abs=0.01)
    stages: list[str] = []
    assert deployment.run(monkeypatch, START + 599, stages) == shas[-1]
    assert stages == ["load"], "before the toleration runs out, the pass is idle"
    stages.clear()
    evicted = deployment.run(monkeypatch, START + 601, stages)
    assert "schedule" in stages, "once it has run out, the pass runs whole"
    assert evicted != shas[-1], "and the eviction is committed"
    cold = pipeline.reconcile_once(settings, warm=pipeline.Warm())
    assert cold.commit is None, "a cold pass at the same time finds the tree committed"
    assert "a" not in {p.cluster for p in cold.planned.decisions[0].clusters}
