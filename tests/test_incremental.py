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
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconciler import pipeline
from reconciler.settings import Settings
from tests.conftest import SourceRepo, make_source_repo

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

    def run(self, monkeypatch: pytest.MonkeyPatch, when: float) -> str | None:
        """One pass at `when`; the output branch's sha after it."""
        monkeypatch.setattr(pipeline, "time", SimpleNamespace(time=lambda: when))
        warm = self.warm if self.warm is not None else pipeline.Warm(state_dir=None)
        pipeline.reconcile_once(self.settings, warm=warm)
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
