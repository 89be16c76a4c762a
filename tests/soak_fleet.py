"""The soak test's fleet of processes: a `git daemon`, three API emulators, a Lease, and two
`dro run` replicas electing a leader on it (see `tests/soak.py`). `SoakFleet` starts and stops
them, says which one leads, and waits for passes and events; `Soak` adds the steps."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from tests.conftest import SourceRepo, git, make_source_repo
from tests.livefleet import NAMES, source_files
from tests.service import Service, wait_for
from tests.soak_parts import (
    CLUSTER_TIMEOUT,
    LEASE_SECONDS,
    OUTPUT_BRANCH,
    GitDaemon,
    Instance,
    LeaseAPI,
    RecordingAPI,
    Tail,
    dro_child,
    user_kubeconfig,
)


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


class SoakFleet:
    """The processes of a soak run and how to wait for them."""

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
        self.lease = LeaseAPI()
        self.slots: dict[str, Instance] = {}
        """The two replicas running now, by slot; a killed one is replaced in its slot."""
        self.subject: Instance | None = None
        """The leader of the last phase, never killed: its RSS is measured."""
        self.repo: SourceRepo | None = None
        self.web = 6
        self.extras: dict[str, int] = {}
        self.next_extra = 1
        self.began = time.monotonic()

    # setup and teardown

    def __enter__(self) -> Self:
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
        self.lease.start()
        self.lease.kubeconfig(self.tmp / "lease-kubeconfig", context="home")
        for name in NAMES:
            api = RecordingAPI(name, nodes=2, rollouts=True)
            api.start()
            self.apis[name] = api
        for slot in ("a", "b"):
            self.start_instance(slot)

    def __exit__(self, *_exc: object) -> None:
        for instance in self.instances:
            instance.service.close()
        for api in self.apis.values():
            api.stop()
        self.lease.stop()
        self.daemon.stop()

    def args(self, kubeconfig: Path, slot: str) -> tuple[str, ...]:
        """The flags of a `dro run` of the soak: two replicas elect a leader on a Lease."""
        return (
            *("--repo", self.daemon.url("fleet.git"), "--interval", "200ms"),
            *("--lease-kubeconfig", str(self.tmp / "lease-kubeconfig")),
            *("--lease-namespace", "default", "--lease-duration", f"{LEASE_SECONDS:g}s"),
            *("--kubeconfig", str(kubeconfig), "--status-interval", "1h"),
            *("--cluster-timeout", f"{CLUSTER_TIMEOUT:g}s", "--move-wait", "0s"),
            *("--state-dir", str(self.tmp / f"state-{slot}")),
        )

    def start_instance(self, slot: str) -> Instance:
        """A new `dro run` in `slot` (on that slot's state dir), with a name of its own: its
        Lease identity and its kubeconfig user, so the emulators' logs name the sender."""
        name = f"dro-{len(self.instances) + 1}"
        kubeconfig = self.tmp / f"{name}-kubeconfig"
        for cluster, api in self.apis.items():
            user_kubeconfig(api, kubeconfig, cluster, name)
        env = {"PYTHONFAULTHANDLER": "1", "POD_NAME": name}
        service = Service(self.tmp, *self.args(kubeconfig, slot), env=env)
        instance = Instance(service=service, tail=Tail(service.log), started=time.time())
        instance.name = name
        self.instances.append(instance)
        self.slots[slot] = instance
        return instance

    @property
    def current(self) -> Instance:
        """The running leader: the holder of the Lease (waited for while there is none)."""

        def holder() -> Instance | None:
            name = self.lease.holder()
            return next((i for i in self.slots.values() if i.name == name), None)

        found = wait_for(holder, f"a leader {self.context(leader=False)}", timeout=60)
        assert isinstance(found, Instance)
        return found

    def slot_of(self, instance: Instance) -> str:
        """The slot a running instance is in."""
        return next(slot for slot, running in self.slots.items() if running is instance)

    def live(self) -> list[Instance]:
        """The instances running now."""
        return list(self.slots.values())

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

    def context(self, *, leader: bool = True) -> str:
        """What a timeout message should say: seed, step, logs."""
        last = self.figures.steps[-1] if self.figures.steps else "start"
        logs = ", ".join(str(i.service.log) for i in self.live())
        return f"(seed {self.seed}, step {len(self.figures.steps)} {last!r}, {self.elapsed()}; " + (
            f"lease held by {self.lease.holder() or 'nobody'}; logs {logs})"
        )

    # waiting

    def wait_passes(
        self,
        count: int,
        *,
        result: str | None = None,
        timeout: float = 60,
        of: Instance | None = None,
    ) -> None:
        """Wait until `count` more passes ended (with `result`), of any running instance or
        only `of` one."""
        tails = [of.tail] if of is not None else [i.tail for i in self.live()]
        for tail in tails:
            tail.poll()

        def counted() -> int:
            return sum(tail.results[result] if result else tail.passes for tail in tails)

        target = counted() + count

        def reached() -> bool:
            for tail in tails:
                tail.poll()
            return counted() >= target

        what = f"{count} more passes" + (f" with result {result}" if result else "")
        wait_for(reached, f"{what} {self.context()}", timeout=timeout)

    def wait_event(self, name: str, *, within_passes: int = 3, timeout: float = 60) -> bool:
        """Wait for the next event `name` of the leader; False when `within_passes` passes
        ended first."""
        tail = self.current.tail
        tail.poll()
        start = len(tail.events)
        limit = self.total_passes() + within_passes

        def seen() -> bool | str:
            tail.poll()
            if any(e.get("event") == name for e in tail.events[start:]):
                return True
            return "no" if self.total_passes() >= limit else False

        return wait_for(seen, f"event {name} {self.context()}", timeout=timeout) is True

    def wait_source_success(self, sha: str, timeout: float = 90) -> None:
        """Wait until a pass that loaded `sha` succeeded."""

        def done() -> bool:
            for instance in self.live():
                instance.tail.poll()
            return any(
                tail.ended.get(number) == "success" and sha in shas
                for tail in (i.tail for i in self.live())
                for number, shas in tail.sources.items()
            )

        wait_for(done, f"a successful pass of source {sha[:12]} {self.context()}", timeout)

    def terminate(self, instance: Instance, timeout: float = 30) -> None:
        """One SIGTERM to a dro process (as the kubelet sends; `Service.terminate` signals
        the `timeout` wrapper too, which forwards a second one), then wait for it; when it
        hangs, SIGABRT makes it dump every thread's stack into its log (PYTHONFAULTHANDLER),
        and the run fails."""
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
        self.slots = {slot: i for slot, i in self.slots.items() if i is not instance}

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
