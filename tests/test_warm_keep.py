"""The on-disk caches of `dro run` are written at most once per `keep_every`, and when it stops.

At 10,000 workloads the parse and read-back caches are 40 MB; `dro reconcile --once` writes
them after its pass (the next process starts from them), `dro run` once a minute and at its
end, so a restart finds them at most that old.
"""

from __future__ import annotations

from pathlib import Path

from reconciler import pipeline
from reconciler.load import cachefile
from reconciler.pipeline.warm import PARSED
from reconciler.service import Runner, RunOptions, metrics
from reconciler.settings import Settings

REPO = "file:///srv/fleet.git"


def parse(warm: pipeline.Warm, text: str) -> None:
    """A pass that parses one source file."""
    warm.begin(REPO)
    warm.parsed.documents("workloads/app.yaml", text.encode())


def written(state: Path) -> list[str]:
    entries = cachefile.read(state, REPO, PARSED) or {}
    return [key.partition("/")[2] for key in entries]


def test_a_warm_of_dro_run_writes_its_caches_once_per_interval_and_when_it_stops(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    warm = pipeline.Warm(state_dir=state, keep_every=3600.0)
    parse(warm, "a: 1\n")
    warm.keep()
    assert cachefile.read(state, REPO, PARSED) is None, "the pass itself writes nothing"
    warm.flush_due()
    first = cachefile.read(state, REPO, PARSED)
    assert written(state) == ["workloads/app.yaml"]
    parse(warm, "a: 2\n")
    warm.keep()
    warm.flush_due()
    assert cachefile.read(state, REPO, PARSED) == first, "written again within the interval"
    with warm:
        pass
    after = cachefile.read(state, REPO, PARSED)
    assert after is not None
    assert after != first, "the stopping process writes what changed"
    assert len(after) == 1, "only the last pass's file is kept"


def test_reconcile_once_writes_its_caches_after_every_pass(tmp_path: Path) -> None:
    state = tmp_path / "state"
    warm = pipeline.Warm(state_dir=state)
    parse(warm, "a: 1\n")
    warm.keep()
    first = cachefile.read(state, REPO, PARSED)
    parse(warm, "a: 2\n")
    warm.keep()
    assert cachefile.read(state, REPO, PARSED) not in (None, first)


def test_dro_run_writes_its_caches_after_the_pass_has_ended(tmp_path: Path) -> None:
    """The 40 MB of a large fleet's caches are written between passes, not inside one: the
    pass's own time to its commit has no cache write in it."""
    state = tmp_path / "state"
    seen_in_pass: list[object] = []

    def one_pass(_settings: Settings, hook: pipeline.StageHook) -> pipeline.PassResult:
        hook(pipeline.Stage.LOAD)
        parse(loop.warm, "a: 1\n")
        loop.warm.keep()
        seen_in_pass.append(cachefile.read(state, REPO, PARSED))
        raise ValueError("the pass ends here")  # reported as a crash; the loop goes on

    loop = Runner(
        Settings(repo=REPO, state_dir=state), RunOptions(), metrics.Metrics(), run_pass=one_pass
    )
    loop.leading.set()
    loop.attempt()
    assert seen_in_pass == [None]
    assert written(state) == ["workloads/app.yaml"]
