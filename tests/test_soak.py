"""Soak test of `dro run`: two replicas electing a leader on a Lease, passes back to back
against a real `git daemon` and three API emulators, with faults injected at random: git down,
API 500s (any request, applies, prunes), API requests slower than `--cluster-timeout`, refused
connections, the leader killed (SIGKILL) or stopped (SIGTERM) in the middle of a pass and
started again on the same state, or paused (SIGSTOP) past its Lease until the other replica
took over and ran a pass, then continued (SIGCONT).

It asserts that
1. no commit is lost and none is duplicated: every tip the output branch ever had is in the
   final history, the branch only moved forward, no two consecutive commits have the same
   tree or the same trailers, and the last one renders the last source commit;
2. nothing is pruned unless the pass's apply was clean: a (sub-)pass that logged a prune had
   every cluster reachable and no failure before the prune gate, every DELETE an emulator
   received (killed passes included) came from a pass whose observation reached every
   cluster and during which no inventory read or apply failed before it, and every DELETE
   of a pass that logged its apply is audited as a prune. (A pass may still end `partial`
   after pruning: when a DELETE or the inventory write fails *after* the gate opened.)
3. every pass is accounted for: pass numbers have no gaps, a process stopped by SIGTERM
   counted in its metrics exactly the passes it logged, and so does `/metrics` at the end;
4. the RSS of the last phase's leader is flat after a warm-up (`rss_flat`);
5. the faults did happen, and enough passes ran;
6. one writer at a time: every write a cluster received came from the process that held the
   Lease then (`soak_writers.double_writes`), and no DELETE is attributed to another
   process's pass;
7. no orphan: every object carrying dro's label on every cluster is in the final rendered
   tree.

The default run is short (40 passes, about half a minute) and runs with the other tests.
`pytest -m soak` runs the soak, 500 passes (about ten minutes on two cores):

    .venv/bin/python -m pytest -m soak -s tests/test_soak.py

`DRO_SOAK_SEED=<n>` replays the random choices of a run (its seed is printed and is in every
message; the timing of the passes is not replayed). `-s` prints the run's figures.
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import git
from tests.soak import Soak
from tests.soak_analysis import (
    SubPass,
    pass_of,
    prune_phase,
    rendered_objects,
    sub_passes,
    tip_at,
    tree_at,
)
from tests.soak_parts import INVENTORY_NAME, INVENTORY_NAMESPACE, Event, Noted, when
from tests.soak_writers import double_writes, orphans

SOAK_PASSES = 500
"""Passes of the soak under `pytest -m soak` (DRO_SOAK_PASSES overrides either)."""
SHORT_PASSES = 40
SEED = int(os.environ.get("DRO_SOAK_SEED") or random.SystemRandom().randrange(1 << 32))
INVENTORY_PATH = f"/api/v1/namespaces/{INVENTORY_NAMESPACE}/configmaps/{INVENTORY_NAME}"
INVENTORY_WRITES = {INVENTORY_PATH, f"/api/v1/namespaces/{INVENTORY_NAMESPACE}"}
FAULT_KINDS = ("git_down", "api_500", "api_500_patch", "api_500_delete", "api_slow")
FAULT_KINDS += ("api_refused", "killed", "terminated", "stopped", "commit_add", "commit_remove")


@dataclass
class Run:
    """A finished soak run and what the checks read from it."""

    soak: Soak
    subs: list[SubPass]
    noted: list[Noted]
    published: list[tuple[float, str]]
    results: Counter[str]
    context: str
    passes: int = 0

    @property
    def prunes(self) -> list[Event]:
        """Every prune audited, over every process."""
        return [event for sub in self.subs for event in sub.prunes]

    @property
    def deletes(self) -> list[Noted]:
        """Every DELETE an emulator received."""
        return [n for n in self.noted if n.method == "DELETE"]


def passes_wanted(config: pytest.Config) -> int:
    """500 under `-m soak`, 40 otherwise; DRO_SOAK_PASSES overrides."""
    if os.environ.get("DRO_SOAK_PASSES"):
        return int(os.environ["DRO_SOAK_PASSES"])
    return SOAK_PASSES if "soak" in str(config.getoption("markexpr") or "") else SHORT_PASSES


@pytest.mark.soak
def test_soak(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    passes = passes_wanted(pytestconfig)
    about = f"seed {SEED}, {passes} passes; replay with DRO_SOAK_SEED={SEED}"
    print(f"\nsoak: {about}")
    with Soak(tmp_path, passes, SEED) as soak:
        soak.run()
    run = analysed(soak, about, tmp_path)
    run.passes = passes
    faults_happened(run)
    no_lost_or_duplicate_commits(run)
    no_prune_without_a_clean_apply(run)
    every_pass_accounted_for(run)
    one_writer_at_a_time(run)
    no_orphans(run)
    rss_flat(run)


def analysed(soak: Soak, about: str, logs: Path) -> Run:
    """The run's events, emulator notes and figures; the figures are printed."""
    subs = []
    results: Counter[str] = Counter()
    for index, instance in enumerate(soak.instances, 1):
        instance.tail.poll()
        subs += sub_passes(index, instance.tail.events, instance.ended)
        results.update(instance.tail.results)
    noted = sorted((n for api in soak.apis.values() for n in api.noted), key=lambda n: n.at)
    published = soak.published_tips()
    figures = soak.figures
    unreachable = sum(
        1 for i in soak.instances for e in i.tail.events if e.get("event") == "cluster_unreachable"
    )
    run = Run(soak, subs, noted, published, results, "")
    trail = figures.rss_trail[:: max(1, len(figures.rss_trail) // 12)]
    text = "\n".join(
        [
            f"{about}; {figures.seconds:.0f}s; {len(soak.instances)} processes",
            f"passes: {sum(results.values())} {dict(results)}",
            f"faults: {dict(sorted(figures.faults.items()))}",
            f"emulators: {sum(n.injected for n in noted)} injected 500s served, "
            f"{sum(n.delayed for n in noted)} requests held past the timeout, "
            f"{unreachable} cluster_unreachable events",
            f"prunes: {len(run.prunes)} audited, {len(run.deletes)} DELETEs received",
            f"output branch: {len(published)} tips published, {len(soak.sources)} sources",
            f"RSS KiB after warm-up {figures.rss_warm}, at the end {figures.rss_end}",
            f"(pass, RSS, anonymous RSS) KiB of the last process: {trail}",
        ]
    )
    print(text)
    run.context = f"\n{text}\nlogs: {logs}"
    return run


def faults_happened(run: Run) -> None:
    """5. Enough passes ran, and every kind of fault was injected and took effect."""
    figures, context = run.soak.figures, run.context
    total = sum(run.results.values())
    assert total >= run.passes, f"only {total} passes ran{context}"
    missing = [kind for kind in FAULT_KINDS if not figures.faults[kind]]
    assert not missing, f"faults never injected: {missing}{context}"
    assert run.results["failed"] >= figures.faults["git_down"], f"git down failed nothing{context}"
    assert any(n.injected for n in run.noted), f"no injected 500 was served{context}"
    assert any(n.delayed for n in run.noted), f"no request was held past the timeout{context}"
    assert any(sub.planned and sub.planned["unreachable"] for sub in run.subs), (
        f"no cluster was ever unreachable{context}"
    )
    assert run.prunes, f"nothing was pruned: the prune checks would be vacuous{context}"


def no_lost_or_duplicate_commits(run: Run) -> None:
    """1. The output branch only moved forward, kept every commit it ever had, holds no two
    consecutive commits with the same tree or trailers, and ends on the last source."""
    soak, context = run.soak, run.context
    bare = soak.repo.bare if soak.repo else Path()
    final = soak.figures.tips[-1]
    assert final, f"nothing was ever committed{context}"
    fields = "%H%x00%T%x00%P%x00%(trailers:key=Dro-Source-Commit,valueonly)"
    fields += "%x00%(trailers:key=Dro-Observations,valueonly)"
    history = [
        [part.strip() for part in line.split("\0")]
        for line in git(bare, "log", f"--format={fields}%x1e", final).split("\x1e")
        if line.strip()
    ]
    order = {commit[0]: position for position, commit in enumerate(reversed(history))}
    merges = [commit[0] for commit in history if len(commit[2].split()) > 1]
    assert not merges, f"merges on the output branch: {merges}{context}"
    tips = {tip for tip in soak.figures.tips if tip} | {tip for _, tip in run.published}
    lost = sorted(tip for tip in tips if tip not in order)
    assert not lost, f"tips not in the final history (lost commits): {lost}{context}"
    for tip in sorted(tips)[:3]:  # the same check, the git way, for a few
        git(bare, "merge-base", "--is-ancestor", tip, final)
    positions = [order[tip] for _, tip in run.published]
    rewound = [(a, b) for a, b in itertools.pairwise(positions) if b <= a]
    assert not rewound, f"the branch moved backwards or was pushed unchanged: {rewound}{context}"
    same_tree = [(a[0], b[0]) for a, b in itertools.pairwise(history) if a[1] == b[1]]
    assert not same_tree, f"consecutive commits with the same tree: {same_tree}{context}"
    # the same source and cluster observations twice in a row is a duplicate, unless only
    # workloads' observed health changed (`status/workloads/`: not in Dro-Observations)
    same_trailers = [
        (a[0], b[0])
        for a, b in itertools.pairwise(history)
        if a[3:] == b[3:]
        and not all(
            path.startswith("status/workloads/")
            for path in git(bare, "diff", "--name-only", b[0], a[0]).splitlines()
        )
    ]
    assert not same_trailers, f"consecutive commits with the same trailers: {same_trailers}"
    unknown = [commit[3] for commit in history if commit[3] not in soak.sources]
    assert not unknown, f"commits of sources never committed: {unknown}{context}"
    assert history[0][3] == soak.source_order[-1], (
        f"the final commit renders {history[0][3]}, not the last source commit "
        f"{soak.source_order[-1]}{context}"
    )


def blocks_the_gate(noted: Noted) -> bool:
    """A failed request that only the apply phase makes (before the prune gate): reading the
    inventory, or a (dry-run) apply of a rendered object. Either leaves its cluster not ok,
    and then nothing may be pruned anywhere in that pass."""
    if not (noted.injected or noted.delayed or noted.status >= 500):
        return False
    if noted.method == "GET":
        return noted.path == INVENTORY_PATH
    return noted.method == "PATCH" and noted.path not in INVENTORY_WRITES


def deleted(noted: Noted) -> tuple[str, str, str, str]:
    """(cluster, plural, namespace, name) of a DELETE's path."""
    parts = noted.path.strip("/").split("/")
    namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts[:-2] else ""
    return noted.cluster, parts[-2], namespace, parts[-1]


def audited(event: Event) -> tuple[str, str, str, str]:
    """(cluster, plural, namespace, name) of a prune audit event."""
    kind, _, where = str(event["object"]).partition(" ")
    namespace, _, name = where.rpartition("/")
    return str(event["cluster"]), kind.lower() + "s", namespace, name


def no_prune_without_a_clean_apply(run: Run) -> None:
    """2. From dro's log, and from what the emulators received (which covers the passes of
    killed processes that died before logging their apply)."""
    soak, context = run.soak, run.context
    bare = soak.repo.bare if soak.repo else Path()
    trees: dict[str, dict[str, str]] = {}
    problems = [p for sub in run.subs if sub.prunes for p in gate_problems(sub, bare, run, trees)]
    assert not problems, "pruned after a failed apply:\n" + "\n".join(problems) + context
    by_start = sorted(run.subs, key=lambda sub: sub.start)
    names = {index: instance.name for index, instance in enumerate(soak.instances, 1)}
    for delete in run.deletes:
        # the sender's own pass: with two replicas, another's may have started since
        own = [sub for sub in by_start if names[sub.instance] == delete.user]
        sub = pass_of(own, delete.at)
        where = f"DELETE {delete.path} on {delete.cluster} at {delete.at:.3f} by {delete.user}"
        assert sub is not None, f"{where}: in no pass{context}"
        assert sub.planned is not None, f"{where}: in {sub.key}, before its plan{context}"
        assert not sub.planned["unreachable"], (
            f"{where} in {sub.key}, whose observation missed {sub.planned['unreachable']}{context}"
        )
        before = [
            n
            for n in run.noted
            if sub.start <= n.at < delete.at and n.user == delete.user and blocks_the_gate(n)
        ]
        assert not before, f"{where} in {sub.key} after failed applies: {before}{context}"
    for sub in run.subs:
        if not sub.applied:
            continue  # killed before it logged its apply: covered by the loop above
        end = sub.end or float("inf")
        done = Counter(
            deleted(n)
            for n in run.deletes
            if sub.start <= n.at < end
            and n.user == names[sub.instance]
            and n.status == 200
            and not n.delayed
        )
        assert done == Counter(audited(e) for e in sub.prunes), (
            f"{sub.key}: DELETEs received {dict(done)}, prunes audited "
            f"{[e['object'] for e in sub.prunes]}{context}"
        )
    partial = [
        sub.key
        for sub in run.subs
        if sub.prunes and soak.instances[sub.instance - 1].tail.ended.get(sub.number) != "success"
    ]
    print(f"passes that pruned after a clean apply, then failed in the prune phase: {partial}")


def gate_problems(
    sub: SubPass, bare: Path, run: Run, trees: dict[str, dict[str, str]]
) -> list[str]:
    """Why a sub-pass that pruned should not have: a cluster unreachable when observed or
    when applied, or a failure that only the apply phase (before the gate) can make. Whether
    a failed read was of a rendered object (apply phase) or a stale one (prune phase) is
    told by the rendered tree the pass applied: its commit, or the branch tip then."""
    if sub.planned is None or sub.committed is None:
        return [f"{sub.key}: pruned without a plan or a commit"]
    problems = []
    if sub.planned["unreachable"]:
        problems.append(f"{sub.key}: pruned though {sub.planned['unreachable']} unreachable")
    commit = sub.committed.get("commit") or tip_at(run.published, when(sub.committed))
    if commit is None:
        return [*problems, f"{sub.key}: no output branch tip when it committed"]
    tree = tree_at(bare, str(commit), trees)
    for report in sub.applied:
        cluster = str(report["cluster"])
        if not report["reachable"]:
            problems.append(f"{sub.key}: pruned though {cluster} could not be reached")
        rendered = rendered_objects(tree, cluster)
        before_gate = [f for f in report["failed"] if not prune_phase(f, rendered)]
        if before_gate:
            problems.append(f"{sub.key}: pruned though {cluster} failed {before_gate}")
    return problems


def every_pass_accounted_for(run: Run) -> None:
    """3. No gaps in pass numbers; the metrics count what the log shows."""
    for index, instance in enumerate(run.soak.instances, 1):
        tail = instance.tail
        ended = sorted(tail.ended)
        name = f"process {index} ({instance.end}, {instance.service.log.name})"
        seen = max((int(e["pass"]) for e in tail.events if "pass" in e), default=0)
        assert ended == list(range(1, len(ended) + 1)), f"{name}: gaps in {ended}{run.context}"
        open_passes = 1 if instance.end == "killed" else 0
        assert len(ended) <= seen <= len(ended) + open_passes, (
            f"{name}: passes up to {seen} seen, {len(ended)} ended{run.context}"
        )
        if instance.end != "terminated":
            continue
        assert instance.exit_code == 0, f"{name}: exit code {instance.exit_code}{run.context}"
        stopped = [e for e in tail.events if e.get("event") == "loop_stopped"]
        assert len(stopped) == 1, f"{name}: {len(stopped)} loop_stopped events{run.context}"
        assert stopped[0]["counted"] == dict(tail.results), (
            f"{name}: the metrics counted {stopped[0]['counted']}, the log shows "
            f"{dict(tail.results)}{run.context}"
        )
        assert stopped[0]["passes"] == len(ended), f"{name}: {stopped[0]}{run.context}"
    assert run.soak.figures.metrics_check is not None
    logged_before, counted, logged_after = run.soak.figures.metrics_check
    assert logged_before <= counted <= logged_after + 1, (
        f"/metrics counted {counted} passes, the log {logged_before}..{logged_after}{run.context}"
    )


RSS_TOLERANCE = 0.10
"""Flat RSS: the last phase's leader's RSS (the median of three readings after passes) ends
within this fraction of its value after warm-up. Measured in two runs of 500 passes (about
250 of them by that leader): +4.9% and +5.2% VmRSS, +4.1% and +4.4% anonymous, most of it in
the first 70 passes after warm-up; file-backed pages grow with the git cache's packs. The
tolerance is about twice that."""


def rss_flat(run: Run) -> None:
    """4. The RSS of the last phase's leader is flat (`RSS_TOLERANCE`)."""
    figures = run.soak.figures
    warm, end = statistics.median(figures.rss_warm), statistics.median(figures.rss_end)
    assert end < (1 + RSS_TOLERANCE) * warm, (
        f"RSS grew from {warm:.0f} KiB after warm-up to {end:.0f} KiB at the end "
        f"({end / warm - 1:+.1%}){run.context}"
    )


def one_writer_at_a_time(run: Run) -> None:
    """6. Every write came from the Lease's holder; a write that had passed its fence when
    its sender was stopped is the one allowance (reported)."""
    soak = run.soak
    written = [w for api in soak.apis.values() for w in api.written]
    problems, in_flight = double_writes(written, soak.lease.holders, soak.instances)
    print(
        f"writes: {len(written)}, by {len({w.user for w in written})} processes; "
        f"Lease holders {len(soak.lease.holders)}; in flight at a SIGSTOP: {in_flight}"
    )
    assert written, f"no write was recorded{run.context}"
    assert not problems, (
        "writes by a process without the Lease:\n" + "\n".join(problems[:20]) + run.context
    )


def no_orphans(run: Run) -> None:
    """7. Every object carrying dro's label is in the final rendered tree."""
    soak = run.soak
    bare = soak.repo.bare if soak.repo else Path()
    tree = tree_at(bare, soak.figures.tips[-1], {})
    left = orphans(soak.apis, tree)
    assert not left, f"objects dro applied that the final tree does not hold: {left}{run.context}"
