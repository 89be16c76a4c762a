"""Rollout benchmark: a template change rolled out over 100 emulated clusters in 4 waves.

The fleet is 100 `tests.kubeapi` emulators (real HTTP on 127.0.0.1, in this process, each
completing Deployment rollouts as they are written, so health waits are zero), one kubeconfig
with a context per cluster, and a source repository placing, as KubeFleet's report does, a
Namespace, a 1 KB ConfigMap and a Deployment with 0 replicas on every cluster, under
`spec.rollout: {maxClusters: 25, soak: 0s}`. After a first placement, the image changes and
`reconcile --once` passes run until the rollout is complete: the change's pass releases
wave 1, each later pass observes the last wave Healthy with the new revision and releases the
next, and a last pass records it complete. Each pass is timed whole (load, observe, schedule,
render, commit, push, apply on 100 clusters): that is dro's time per wave, since nothing here
waits for health. The same passes without a rollout setting give the baseline: the one pass
that takes the change everywhere at once, and steady passes.

The anchor (KubeFleet's early-2026 report): its first staged rollout over 100 clusters in 3
stages with no gates took p90 96 s, most of it its controllers' own overhead. The target: dro
adds under 1 s per wave. All servers and clients share one Python process (and its GIL), so
the figures include the emulators' own serving time.

Run: `.venv/bin/python bench/rollout.py [--json] [--clusters N]` from the repository root.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconciler import pipeline
from reconciler.cli import report
from reconciler.render import rollout
from reconciler.settings import Settings
from tests.conftest import SourceRepo, make_source_repo
from tests.kubeapi import KubeAPI
from tests.rolloutfleet import cluster_file, dro_yaml

KUBEFLEET_P90 = 96.0
"""Seconds: KubeFleet's p90 for its first staged rollout over 100 clusters in 3 stages."""
TARGET_PER_WAVE = 1.0
WAVES = 4


def _objects(image: str) -> str:
    data = "x" * 1000
    return f"""apiVersion: v1
kind: Namespace
metadata: {{name: bench}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: bench}}
data: {{blob: "{data}"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: pause, namespace: bench}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: pause}}}}
  template:
    metadata: {{labels: {{app: pause}}}}
    spec:
      containers: [{{name: pause, image: "{image}"}}]
"""


@dataclass(frozen=True)
class Timed:
    """One pass: its seconds in all, in the stages that talk to the clusters (observe,
    apply), and in the rollout engine (`render.rollout.advance`)."""

    total: float
    clusters: float
    engine: float

    @property
    def own(self) -> float:
        """dro's own time: load, validate, schedule, render, commit and push."""
        return self.total - self.clusters


def _timed(settings: Settings) -> tuple[Timed, pipeline.PassResult]:
    """One `reconcile --once`, its stages timed by the pass's stage hook."""
    marks: list[tuple[str, float]] = []
    engine = [0.0]
    advance = rollout.advance

    def counted(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return advance(*args, **kwargs)
        finally:
            engine[0] += time.perf_counter() - started

    pipeline.rollout.advance = counted  # type: ignore[attr-defined]
    try:
        started = time.perf_counter()
        result = pipeline.reconcile_once(
            settings, on_stage=lambda stage: marks.append((stage, time.perf_counter()))
        )
        ended = time.perf_counter()
    finally:
        pipeline.rollout.advance = advance  # type: ignore[attr-defined]
    clusters = 0.0
    for (stage, at), (_, following) in zip(marks, [*marks[1:], ("end", ended)], strict=True):
        if stage in (pipeline.Stage.OBSERVE, pipeline.Stage.APPLY):
            clusters += following - at
    return Timed(total=ended - started, clusters=clusters, engine=engine[0]), result


def _run(names: list[str], setting: str | None, tmp: Path) -> list[Timed]:
    """Each pass after the change until the output branch stops changing (the last of
    them a steady pass), then two more steady passes."""
    repo: SourceRepo = make_source_repo(tmp / "source", None)
    repo.write(
        {"dro.yaml": dro_yaml(setting), "workloads/bench.yaml": _objects("pause:3.9")}
        | {f"clusters/{n}.yaml": cluster_file(n) for n in names}
    )
    repo.commit("first placement")
    kubeconfig = tmp / "kubeconfig"
    with ExitStack() as stack:
        for name in names:
            api = stack.enter_context(KubeAPI(nodes=1, rollouts=True))
            api.kubeconfig(kubeconfig, context=name)
        settings = Settings(
            repo=str(repo.bare),
            state_dir=tmp / "state",
            kubeconfig=kubeconfig,
            cluster_timeout=30.0,
            move_wait=0.0,
        )
        pipeline.reconcile_once(settings)
        pipeline.reconcile_once(settings)  # steady
        repo.write({"workloads/bench.yaml": _objects("pause:3.10")})
        repo.commit("the change")
        passes = []
        for _ in range(WAVES + 3):
            timed, result = _timed(settings)
            passes.append(timed)
            if result.commit is None:
                break
        passes += [_timed(settings)[0] for _ in range(2)]
        return passes


def main() -> int:
    """Run both sides and print the table (or JSON); exit 1 when dro's own time in a wave's
    pass exceeds a steady pass's by 1 s or more."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clusters", type=int, default=100)
    args = parser.parse_args()
    report.configure_logging(quiet=True)
    names = [f"member-{i:03d}" for i in range(args.clusters)]
    size = max(1, args.clusters // WAVES)
    with tempfile.TemporaryDirectory() as rolled, tempfile.TemporaryDirectory() as plain:
        passes = _run(names, f"{{maxClusters: {size}, soak: 0s}}", Path(rolled))
        at_once = _run(names, None, Path(plain))
    steady = min(passes[WAVES + 1 :], key=lambda p: p.own)
    waves = passes[:WAVES]
    added = [p.own - steady.own for p in waves]
    result = {
        "clusters": args.clusters,
        "waves": WAVES,
        "wave_pass_s": [round(p.total, 3) for p in waves],
        "wave_own_s": [round(p.own, 3) for p in waves],
        "wave_clusters_s": [round(p.clusters, 3) for p in waves],
        "added_own_per_wave_s": [round(a, 3) for a in added],
        "engine_ms": [round(p.engine * 1000, 2) for p in waves],
        "steady_pass_s": round(steady.total, 3),
        "steady_own_s": round(steady.own, 3),
        "change_without_rollout_s": round(at_once[0].total, 3),
        "change_without_rollout_own_s": round(at_once[0].own, 3),
        "whole_rollout_s": round(sum(p.total for p in passes[: WAVES + 1]), 3),
        "kubefleet_p90_s": KUBEFLEET_P90,
        "target_added_per_wave_s": TARGET_PER_WAVE,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"rollout over {args.clusters} emulated clusters in {WAVES} waves (health waits: 0)")
        print("         pass    dro's own  (over steady)  observe+apply  rollout engine")
        for index, (timed, more) in enumerate(zip(waves, added, strict=True), start=1):
            print(
                f"  wave {index} {timed.total:6.2f} s  {timed.own:6.2f} s   ({more:+.2f} s)"
                f"      {timed.clusters:6.2f} s     {timed.engine * 1000:5.1f} ms"
            )
        print(f"  steady {steady.total:6.2f} s  {steady.own:6.2f} s")
        print(
            f"  the same change without a rollout: one pass of {at_once[0].total:.2f} s "
            f"({at_once[0].own:.2f} s dro's own)"
        )
        print(
            f"  whole rollout: {result['whole_rollout_s']:.1f} s; KubeFleet's p90 for 3 stages "
            f"over 100 clusters: {KUBEFLEET_P90:.0f} s"
        )
    return 0 if max(added) < TARGET_PER_WAVE else 1


if __name__ == "__main__":
    sys.exit(main())
