"""The soak test's harness: `dro run` against a real `git daemon` and three API emulators,
with faults injected at random, and what the run leaves behind turned into checkable facts.

- `GitDaemon`: a `git daemon` that can be taken down and brought back on the same port.
- `RecordingAPI`: an API emulator that also notes, with the wall-clock time, every DELETE,
  every request answered with an error and every request held by an injected delay.
- `Tail`: the JSON events of one `dro run` log, read incrementally (the log grows to
  thousands of lines; re-reading it on every poll would starve the service of CPU).
- `Soak`: the driver: it starts everything, runs random steps until enough passes ran, ends
  with a clean pass on a last source commit, and keeps what the assertions need.
- `sub_passes`, `prune_phase`, `rendered_objects`: the analysis of the logs.

Everything binds 127.0.0.1; every process is started in its own session and killed by PID.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import SourceRepo, git, make_source_repo
from tests.livefleet import NAMES, deployment, source_files
from tests.service import Service, wait_for
from tests.soak_parts import (
    CLUSTER_TIMEOUT,
    INJECTED,
    OUTPUT_BRANCH,
    SLOW,
    GitDaemon,
    Instance,
    RecordingAPI,
    Tail,
    dro_child,
    rss_kib,
)

# --- the driver -----------------------------------------------------------------------------


@dataclass
class Source:
    """One commit of the source repository and what it holds."""

    sha: str
    web: int
    extras: frozenset[str]


@dataclass
class Figures:
    """What the run did, for the assertions and the report."""

    steps: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    tips: list[str] = field(default_factory=list)
    """The tip of the output branch after every step."""
    rss_warm: list[int] = field(default_factory=list)
    rss_end: list[int] = field(default_factory=list)
    rss_trail: list[tuple[int, int, int]] = field(default_factory=list)
    """(passes of the last process, its VmRSS, its RssAnon in KiB) after every step of the
    last phase: file-backed pages (the git cache's packs, mapped) grow as the repo grows."""
    metrics_check: tuple[int, int, int] | None = None
    seconds: float = 0.0


def extra_file(name: str, replicas: int) -> str:
    """A workload file: a Deployment and the ConfigMap it carries."""
    configmap = (
        "apiVersion: v1\nkind: ConfigMap\n"
        f"metadata: {{name: {name}, namespace: shop}}\ndata: {{owner: {name}}}\n"
    )
    return deployment(name, replicas) + "---\n" + configmap


WEB_REPLICAS = re.compile(r"replicas: \d+")


class Soak:
    """The soak run: `with Soak(tmp, passes, seed) as soak: soak.run()`."""

    def __init__(self, tmp: Path, passes: int, seed: int, warmup: int = 20) -> None:
        self.tmp = tmp
        self.target = passes
        self.seed = seed
        self.warmup = warmup
        self.rng = random.Random(seed)
        self.figures = Figures()
        self.instances: list[Instance] = []
        self.sources: dict[str, Source] = {}
        self.source_order: list[str] = []
        self.tips_log = tmp / "tips.log"
        self.daemon = GitDaemon(tmp / "served")
        self.apis: dict[str, RecordingAPI] = {}
        self.kubeconfig = tmp / "kubeconfig"
        self.repo: SourceRepo | None = None
        self.web = 6
        self.extras: dict[str, int] = {}
        self.next_extra = 1
        self.began = time.monotonic()

    # setup and teardown

    def __enter__(self) -> Soak:
        try:
            self._setup()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _setup(self) -> None:
        self.daemon.base.mkdir(parents=True)
        origin = make_source_repo(self.tmp / "origin", None)
        origin.write(source_files())
        origin.commit("fleet")
        served = self.daemon.base / "fleet.git"
        shutil.move(str(origin.bare), served)
        git(origin.work, "remote", "set-url", "origin", str(served))
        git(served, "symbolic-ref", "HEAD", "refs/heads/main")
        hook = served / "hooks" / "post-update"
        hook.write_text(
            "#!/bin/sh\n"
            'for ref in "$@"; do\n'
            f'  if [ "$ref" = refs/heads/{OUTPUT_BRANCH} ]; then\n'
            f'    echo "$(date +%s.%N) $(git rev-parse refs/heads/{OUTPUT_BRANCH})"'
            f" >> '{self.tips_log}'\n"
            "  fi\n"
            "done\n"
        )
        hook.chmod(0o755)
        self.repo = SourceRepo(bare=served, work=origin.work)
        self._remember(git(origin.work, "rev-parse", "HEAD"))
        self.daemon.start()
        for name in NAMES:
            api = RecordingAPI(name, nodes=2, rollouts=True)
            api.start()
            api.kubeconfig(self.kubeconfig, context=name)
            self.apis[name] = api
        self.start_instance()

    def __exit__(self, *_exc: object) -> None:
        for instance in self.instances:
            instance.service.close()
        for api in self.apis.values():
            api.stop()
        self.daemon.stop()

    @property
    def args(self) -> tuple[str, ...]:
        """The flags of every `dro run` of the soak."""
        return (
            *("--repo", self.daemon.url("fleet.git"), "--interval", "200ms"),
            *("--leader-elect=false", "--kubeconfig", str(self.kubeconfig)),
            *("--cluster-timeout", f"{CLUSTER_TIMEOUT:g}s", "--move-wait", "0s"),
            *("--status-interval", "1h", "--state-dir", str(self.tmp / "state")),
        )

    def start_instance(self) -> Instance:
        """A new `dro run` on the same state dir and repository."""
        service = Service(self.tmp, *self.args, env={"PYTHONFAULTHANDLER": "1"})
        instance = Instance(service=service, tail=Tail(service.log), started=time.time())
        self.instances.append(instance)
        return instance

    @property
    def current(self) -> Instance:
        """The running instance."""
        return self.instances[-1]

    def total_passes(self) -> int:
        """Passes ended, over every instance."""
        for instance in self.instances:
            if instance.end is None:
                instance.tail.poll()
        return sum(instance.tail.passes for instance in self.instances)

    def tip(self) -> str | None:
        """The output branch's tip in the served repository."""
        assert self.repo is not None
        return self.repo.branch_sha(OUTPUT_BRANCH)

    def elapsed(self) -> str:
        """Seconds since the start, for messages."""
        return f"{time.monotonic() - self.began:.1f}s"

    def context(self) -> str:
        """What a timeout message should say: seed, step, log."""
        last = self.figures.steps[-1] if self.figures.steps else "start"
        return f"(seed {self.seed}, step {len(self.figures.steps)} {last!r}, {self.elapsed()}; " + (
            f"log {self.current.service.log})"
        )

    # waiting

    def wait_passes(self, count: int, *, result: str | None = None, timeout: float = 60) -> None:
        """Wait until `count` more passes of the current instance ended (with `result`)."""
        tail = self.current.tail
        tail.poll()

        def counted() -> int:
            return tail.results[result] if result else tail.passes

        target = counted() + count

        def reached() -> bool:
            tail.poll()
            return counted() >= target

        what = f"{count} more passes" + (f" with result {result}" if result else "")
        wait_for(reached, f"{what} {self.context()}", timeout=timeout)

    def wait_event(self, name: str, *, within_passes: int = 3, timeout: float = 60) -> bool:
        """Wait for the next event `name` of the current instance; False when `within_passes`
        passes ended first."""
        tail = self.current.tail
        tail.poll()
        start = len(tail.events)
        limit = tail.passes + within_passes

        def seen() -> bool | str:
            tail.poll()
            if any(e.get("event") == name for e in tail.events[start:]):
                return True
            return "no" if tail.passes >= limit else False

        return wait_for(seen, f"event {name} {self.context()}", timeout=timeout) is True

    def wait_source_success(self, sha: str, timeout: float = 90) -> None:
        """Wait until a pass that loaded `sha` succeeded."""
        tail = self.current.tail

        def done() -> bool:
            tail.poll()
            return any(
                tail.ended.get(number) == "success" and sha in shas
                for number, shas in tail.sources.items()
            )

        wait_for(done, f"a successful pass of source {sha[:12]} {self.context()}", timeout)

    # source changes

    def _remember(self, sha: str) -> None:
        self.sources[sha] = Source(sha, self.web, frozenset(self.extras))
        self.source_order.append(sha)

    def commit(self, *changes: str) -> str:
        """Commit and push source changes (scale, add, remove); the new source sha."""
        assert self.repo is not None
        for change in changes:
            if change == "add":
                name = f"extra-{self.next_extra}"
                self.next_extra += 1
                self.extras[name] = self.rng.randint(2, 4)
                self.repo.write({f"workloads/{name}.yaml": extra_file(name, self.extras[name])})
            elif change == "remove":
                name = self.rng.choice(sorted(self.extras))
                del self.extras[name]
                self.repo.write({f"workloads/{name}.yaml": None})
            else:
                self.web = self.rng.choice([n for n in range(3, 10) if n != self.web])
                web = self.repo.work / "workloads" / "web.yaml"
                web.write_text(WEB_REPLICAS.sub(f"replicas: {self.web}", web.read_text(), count=1))
            self.figures.faults[f"commit_{change}"] += 1
        sha = self.repo.commit(f"{' '.join(changes)} ({len(self.figures.steps)})")
        self._remember(sha)
        return sha

    def prune_due(self) -> None:
        """Most of the time, while a fault is on: a commit that removes a workload (a prune
        is due) and scales another (an apply is due), so that the pass that sees it must
        hold the prune back."""
        if self.rng.random() < 0.75:
            self.commit("scale", "remove" if self.extras else "add")

    # the steps

    def step(self, action: str) -> None:
        """Do one step and wait for the passes it needs; faults it set are cleared after,
        except injected failures not yet served (they wait for their requests)."""
        self.figures.steps.append(action)
        getattr(self, f"_{action}")()
        self.figures.tips.append(self.tip() or "")

    def _commit(self) -> None:
        changes = ["scale"] + (["add"] if len(self.extras) < 4 else [])
        changes += ["remove"] * 2 if self.extras else []
        self.commit(self.rng.choice(changes))
        self.wait_passes(self.rng.randint(1, 2))

    def _commit_add(self) -> None:
        self.commit("add")
        self.wait_passes(1)

    def _commit_remove(self) -> None:
        if not self.extras:
            self.commit("add")
            self.wait_passes(1)
        self.commit("remove")
        self.wait_passes(1)

    def _git_down(self) -> None:
        self.daemon.stop()
        self.figures.faults["git_down"] += 1
        if self.rng.random() < 0.5:
            self.commit("scale")  # lands while dro cannot fetch it
        self.wait_passes(self.rng.randint(2, 4), result="failed")
        self.daemon.start()
        self.wait_passes(1)

    def _api_500(self, method: str | None = None) -> None:
        cluster = self.rng.choice(NAMES)
        count = self.rng.randint(1, 8)
        self.apis[cluster].faults.fail_next(count, 500, method, message=INJECTED)
        self.figures.faults["api_500" + (f"_{method.lower()}" if method else "")] += 1
        if method == "DELETE" and self.extras:
            self.commit("remove")  # a prune is due: the first DELETEs fail
        else:
            self.prune_due()
        self.wait_passes(self.rng.randint(1, 3))

    def _api_500_patch(self) -> None:
        self._api_500("PATCH")

    def _api_500_delete(self) -> None:
        self._api_500("DELETE")

    def _api_slow(self) -> None:
        api = self.apis[self.rng.choice(NAMES)]
        api.delay(SLOW)
        self.figures.faults["api_slow"] += 1
        self.prune_due()
        self.wait_passes(self.rng.randint(1, 2))
        api.delay(0)

    def _api_refused(self) -> None:
        api = self.apis[self.rng.choice(NAMES)]
        api.refuse()
        self.figures.faults["api_refused"] += 1
        self.prune_due()
        try:
            self.wait_passes(self.rng.randint(1, 3))
        finally:
            api.accept()

    KILL_POINTS = ("source_loaded", "planned", "committed", "applied")

    def _arm(self) -> str:
        """Wait for a random moment during a pass; where it was."""
        if self.rng.random() < 0.5:
            self.commit(self.rng.choice(["scale", "remove"] if self.extras else ["scale"]))
        point = self.rng.choice(self.KILL_POINTS)
        if not self.wait_event(point):
            point = "source_loaded"
            self.wait_event(point, within_passes=10)
        time.sleep(self.rng.uniform(0, 0.15))  # a random moment, not a synchronisation
        return point

    def _kill(self) -> None:
        point = self._arm()
        instance = self.current
        instance.service.kill()
        instance.ended, instance.end = time.time(), "killed"
        instance.tail.poll()
        self.figures.faults["killed"] += 1
        self.figures.faults[f"killed_after_{point}"] += 1
        self.start_instance()
        self.wait_passes(1)

    def _term(self) -> None:
        self._arm()
        self.terminate()
        self.figures.faults["terminated"] += 1
        self.start_instance()
        self.wait_passes(1)

    def terminate(self, timeout: float = 30) -> None:
        """One SIGTERM to the running dro process (as the kubelet sends; `Service.terminate`
        signals the `timeout` wrapper too, which forwards a second one), then wait for it;
        when it hangs, SIGABRT makes it dump every thread's stack into its log
        (PYTHONFAULTHANDLER), and the run fails."""
        instance = self.current
        child = dro_child(instance.service)
        os.kill(child, signal.SIGTERM)
        signalled = time.time()
        try:
            instance.exit_code = instance.service.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(child, signal.SIGABRT)
            instance.service.process.wait(timeout=10)
            raise AssertionError(
                f"dro run did not stop within {timeout:.0f}s of SIGTERM {self.context()}; "
                f"its threads' stacks:\n{instance.service.log.read_text()[-12000:]}"
            ) from None
        instance.ended, instance.end = signalled, "terminated"
        instance.tail.poll()

    # the run

    FAULTS = ("git_down", "api_500", "api_500_patch", "api_500_delete", "api_slow")
    FAULTS += ("api_refused",)
    WEIGHTS: Mapping[str, float] = {
        "commit": 4,
        "git_down": 1,
        "api_500": 2,
        "api_500_patch": 1,
        "api_500_delete": 1,
        "api_slow": 1,
        "api_refused": 1,
        "kill": 1.5,
        "term": 0.5,
    }

    def run(self) -> None:
        """Steps until `target` passes ran: first with kills and restarts, then a last
        instance that is never killed (its RSS is measured), then the end."""
        first = [*self.FAULTS, "kill", "term", "commit"]
        self.rng.shuffle(first)
        add_at = self.rng.randrange(len(first) // 2)
        first.insert(add_at, "commit_add")
        first.insert(self.rng.randrange(add_at + 1, len(first) + 1), "commit_remove")
        for action in first:
            self.step(action)
        while self.total_passes() < self.target // 2:
            self.step(self._pick(kills=True))
        self._kill()  # the last instance: lives until the end
        self.wait_passes(max(0, self.warmup - self.current.tail.passes), timeout=120)
        self.figures.rss_warm = self.rss_samples()
        while self.total_passes() < self.target or self.current.tail.passes < self.warmup + 10:
            self.step(self._pick(kills=False))
            pid = dro_child(self.current.service)
            trail = (self.current.tail.passes, rss_kib(pid), rss_kib(pid, "RssAnon"))
            self.figures.rss_trail.append(trail)
        self.finish()

    def _pick(self, *, kills: bool) -> str:
        actions = [a for a in self.WEIGHTS if kills or a not in ("kill", "term")]
        return self.rng.choices(actions, [self.WEIGHTS[a] for a in actions])[0]

    def rss_samples(self, count: int = 3) -> list[int]:
        """VmRSS of the running dro, read right after each of the next `count` passes."""
        pid = dro_child(self.current.service)
        samples = []
        for _ in range(count):
            self.wait_passes(1)
            samples.append(rss_kib(pid))
        return samples

    def finish(self) -> None:
        """No more faults; a last source commit; a successful pass of it; SIGTERM."""
        for api in self.apis.values():
            api.faults.clear()
            api.accept()  # a no-op when it listens
        if not self.daemon.up:
            self.daemon.start()
        self.figures.steps.append("finish")
        last = self.commit("scale")
        self.wait_source_success(last)
        self.figures.rss_end = self.rss_samples()
        tail = self.current.tail
        tail.poll()
        before = tail.passes
        counted = sum(
            int(self.current.service.metric("dro_reconcile_total", result=result))
            for result in ("success", "partial", "failed", "invalid", "interrupted")
        )
        tail.poll()
        self.figures.metrics_check = (before, counted, tail.passes)
        self.terminate()
        self.figures.tips.append(self.tip() or "")
        self.figures.seconds = time.monotonic() - self.began

    def published_tips(self) -> list[tuple[float, str]]:
        """Every tip the output branch ever had in the served repo (the post-update hook's
        log), with the time it was pushed."""
        if not self.tips_log.exists():
            return []
        found = []
        for line in self.tips_log.read_text().splitlines():
            stamp, sha = line.split()
            found.append((float(stamp), sha))
        return found
