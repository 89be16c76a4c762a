"""The soak test's harness: `dro run` against a real `git daemon` and three API emulators,
with faults injected at random, and what the run leaves behind turned into checkable facts.

- `GitDaemon`: a `git daemon` that can be taken down and brought back on the same port.
- `RecordingAPI`: an API emulator that also notes, with the wall-clock time, every DELETE,
  every request answered with an error and every request held by an injected delay.
- `Tail`: the JSON events of one `dro run` log, read incrementally (the log grows to
  thousands of lines; re-reading it on every poll would starve the service of CPU).
- `SoakFleet` (`tests/soak_fleet.py`): the processes: two `dro run` replicas electing a
  leader on a Lease, each with a kubeconfig user of its own so the emulators name the sender.
- `Soak`: the driver: it runs random steps until enough passes ran, ends with a clean pass
  on a last source commit, and keeps what the assertions need.
- `sub_passes`, `prune_phase`, `rendered_objects`: the analysis of the logs.

Everything binds 127.0.0.1; every process is started in its own session and killed by PID.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Mapping

from tests.livefleet import NAMES, deployment
from tests.service import wait_for
from tests.soak_fleet import SoakFleet, Source
from tests.soak_parts import INJECTED, SLOW, dro_child, rss_kib

# --- the driver -----------------------------------------------------------------------------


def extra_file(name: str, replicas: int) -> str:
    """A workload file: a Deployment and the ConfigMap it carries."""
    configmap = (
        "apiVersion: v1\nkind: ConfigMap\n"
        f"metadata: {{name: {name}, namespace: shop}}\ndata: {{owner: {name}}}\n"
    )
    return deployment(name, replicas) + "---\n" + configmap


WEB_REPLICAS = re.compile(r"replicas: \d+")


class Soak(SoakFleet):
    """The soak run: `with Soak(tmp, passes, seed) as soak: soak.run()`."""

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
        self.start_instance(self.slot_of(instance))
        self.wait_passes(1, timeout=90)

    def _term(self) -> None:
        self._arm()
        instance = self.current
        slot = self.slot_of(instance)
        self.terminate(instance)
        self.figures.faults["terminated"] += 1
        self.start_instance(slot)
        self.wait_passes(1)

    def _stop(self) -> None:
        """SIGSTOP the leader at a random moment of a pass, until the other replica took the
        Lease and ended a pass of its own; then SIGCONT (its fence must keep it from writing)."""
        point = self._arm()
        instance = self.current
        child = dro_child(instance.service)
        os.kill(child, signal.SIGSTOP)
        stopped = time.time()
        self.figures.faults["stopped"] += 1
        self.figures.faults[f"stopped_after_{point}"] += 1
        try:
            (rival,) = [i for i in self.live() if i is not instance]
            wait_for(lambda: self.lease.holder() == rival.name, f"a takeover {self.context()}")
            self.wait_passes(1, of=rival)
        finally:
            os.kill(child, signal.SIGCONT)
            instance.stops.append((stopped, time.time()))
        self.wait_passes(1)

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
        "stop": 1,
    }
    PROCESS_FAULTS = ("kill", "term", "stop")

    def run(self) -> None:
        """Steps until `target` passes ran: first with kills and restarts, then a last
        instance that is never killed (its RSS is measured), then the end."""
        first = [*self.FAULTS, *self.PROCESS_FAULTS, "commit"]
        self.rng.shuffle(first)
        add_at = self.rng.randrange(len(first) // 2)
        first.insert(add_at, "commit_add")
        first.insert(self.rng.randrange(add_at + 1, len(first) + 1), "commit_remove")
        for action in first:
            self.step(action)
        while self.total_passes() < self.target // 2:
            self.step(self._pick(kills=True))
        self._kill()  # the new leader leads until the end: no more process faults
        subject = self.subject = self.current
        self.wait_passes(max(0, self.warmup - subject.tail.passes), timeout=120, of=subject)
        self.figures.rss_warm = self.rss_samples()
        while self.total_passes() < self.target or (
            subject.tail.passes < self.warmup + 10 and self.total_passes() < 2 * self.target
        ):
            self.step(self._pick(kills=False))
            pid = dro_child(subject.service)
            trail = (subject.tail.passes, rss_kib(pid), rss_kib(pid, "RssAnon"))
            self.figures.rss_trail.append(trail)
        self.finish()

    def _pick(self, *, kills: bool) -> str:
        actions = [a for a in self.WEIGHTS if kills or a not in self.PROCESS_FAULTS]
        return self.rng.choices(actions, [self.WEIGHTS[a] for a in actions])[0]

    def rss_samples(self, count: int = 3) -> list[int]:
        """VmRSS of the last phase's leader, read right after each of the next `count`
        passes."""
        assert self.subject is not None
        pid = dro_child(self.subject.service)
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
        leader = self.current
        tail = leader.tail
        tail.poll()
        before = tail.passes
        counted = sum(
            int(leader.service.metric("dro_reconcile_total", result=result))
            for result in ("success", "partial", "failed", "invalid", "interrupted")
        )
        tail.poll()
        self.figures.metrics_check = (before, counted, tail.passes)
        for instance in [leader, *(i for i in self.live() if i is not leader)]:
            self.terminate(instance)
        self.figures.tips.append(self.tip() or "")
        self.figures.seconds = time.monotonic() - self.began
