"""Old template commits during a rollout: pass time with and without `laststate.MEMO`.

While a rollout is in progress, the clusters it has not reached keep the template of the source
commit that last finished one, so every pass reads that commit and validates it. `dro run`
keeps what each old commit gave across passes (`laststate.TemplateMemo`); this measures what
that saves. The source places `--workloads` Deployments (Duplicated) on 10 clusters, declared
only (offline passes: no cluster is observed, so each pass releases one wave of one cluster);
after a first placement, one Deployment's image changes and 8 `reconcile --once` passes run
in one process, the memo kept (as `dro run` does) or cleared before each pass (as before it
existed). The table gives the median pass and the validations of the old commit.

Run: `.venv/bin/python bench/templatememo.py [--json] [--workloads N]` from the repository
root.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconciler import laststate, pipeline, validate
from reconciler.cli import report
from reconciler.settings import Settings
from tests.conftest import make_source_repo

CLUSTERS = 10
PASSES = 8


def _deployment(index: int, image: str) -> str:
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app-{index:04d}, namespace: bench}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: app-{index:04d}}}}}
  template:
    metadata: {{labels: {{app: app-{index:04d}}}}}
    spec:
      containers:
        - name: app
          image: "{image}"
          resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}
"""


def _files(workloads: int, image: str) -> dict[str, str]:
    body = "apiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n"
    body += "".join(_deployment(i, image if i == 0 else "app:1") for i in range(workloads))
    clusters = {
        f"clusters/c{i:02d}.yaml": "apiVersion: multicluster.io/v1alpha1\nkind: Cluster\n"
        f"metadata: {{name: c{i:02d}, labels: {{env: prod}}}}\n"
        'spec:\n  capacity: {cpu: "1000", memory: 4000Gi, pods: "5000"}\n'
        for i in range(CLUSTERS)
    }
    dro = (
        "apiVersion: multicluster.io/v1alpha1\nkind: SchedulerConfiguration\n"
        "metadata: {name: dro}\nspec:\n  defaultPlacement:\n"
        '    targetClusters: [{selectorType: label, values: ["env=prod"]}]\n'
        "    replicaScheduling: {type: Duplicated}\n  rollout: {maxClusters: 1}\n"
    )
    return {"dro.yaml": dro, "workloads/apps.yaml": body} | clusters


def _run(workloads: int, tmp: Path, *, memo: bool) -> tuple[list[float], int]:
    """(each pass's seconds, validations of the old commit) over the rollout's passes."""
    repo = make_source_repo(tmp / "source", None)
    repo.write(_files(workloads, "web:1"))
    old = repo.commit("first placement").strip()
    settings = Settings(repo=str(repo.bare), state_dir=tmp / "state")
    pipeline.reconcile_once(settings)
    repo.write(_files(workloads, "web:2"))
    repo.commit("the change")
    calls: Counter[str | None] = Counter()
    real = validate.check

    def check(source: Any, **kwargs: Any) -> Any:
        calls[source.commit] += 1
        return real(source, **kwargs)

    validate.check = check  # type: ignore[assignment]
    laststate.MEMO.clear()
    seconds = []
    try:
        for _ in range(PASSES):
            if not memo:
                laststate.MEMO.clear()
            started = time.perf_counter()
            pipeline.reconcile_once(settings)
            seconds.append(time.perf_counter() - started)
    finally:
        validate.check = real  # type: ignore[assignment]
    return seconds, calls[old]


def main() -> int:
    """Run both sides and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--workloads", type=int, default=1000)
    args = parser.parse_args()
    report.configure_logging(quiet=True)
    with tempfile.TemporaryDirectory() as kept, tempfile.TemporaryDirectory() as cleared:
        with_memo, validated_with = _run(args.workloads, Path(kept), memo=True)
        without, validated_without = _run(args.workloads, Path(cleared), memo=False)
    result = {
        "workloads": args.workloads,
        "passes": PASSES,
        "median_pass_with_memo_s": round(statistics.median(with_memo), 3),
        "median_pass_without_memo_s": round(statistics.median(without), 3),
        "old_commit_validations_with_memo": validated_with,
        "old_commit_validations_without_memo": validated_without,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.workloads} workloads on {CLUSTERS} clusters, {PASSES} rollout passes")
    print(f"{'':24}{'median pass':>14}{'old commit validated':>24}")
    print(f"{'memo kept (dro run)':24}{result['median_pass_with_memo_s']:>13}s{validated_with:>24}")
    print(f"{'memo cleared':24}{result['median_pass_without_memo_s']:>13}s{validated_without:>24}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
