"""Secrets never leave, on line: passes of the real `dro` executable against the API emulator
with values planted in a Secret (data and stringData), the git credentials file, a kubeconfig
token, the webhook secret and a repository URL; then everything dro printed, logged,
committed, pushed and cached is searched for them (`tests.leaks`).

Failures are forced where a message or a traceback could carry a value: a bad override path
on the Secret, an unreachable cluster, a refused push, and a crash injected into `dro run`
(a `sitecustomize` on PYTHONPATH makes the commit stage raise in its first passes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import httpgit, leaks
from tests.builders.secretsource import CONFIG, OVERRIDE_PLAINTEXT, secret
from tests.conftest import SourceRepo, git, make_source_repo
from tests.kubeapi import KubeAPI
from tests.livefleet import DRO as DRO_YAML
from tests.livefleet import POLICY, WEB, cluster_file
from tests.service import Service, wait_for

DRO = str(Path(sys.executable).parent / "dro")
OUTPUT = "dro/rendered"


@dataclass
class Planted:
    """The fleet with every value planted, and the hunt over them."""

    repo: SourceRepo
    api: KubeAPI
    kubeconfig: Path
    credentials: Path
    state: Path
    values: list[leaks.Planted]

    def dro(self, *args: str, expect: int | None = None) -> str:
        """Run the real `dro reconcile --once` (or `args[0]`); its stdout and stderr."""
        done = subprocess.run(
            [DRO, *args], check=False, capture_output=True, text=True, timeout=300
        )
        if expect is not None:
            assert done.returncode == expect, done.stdout + done.stderr
        return done.stdout + done.stderr

    def reconcile(self, *, verbose: bool = False, expect: int | None = None) -> str:
        """One pass with the planted credentials and kubeconfig (`-v`: info events too)."""
        return self.dro(
            *(["-v"] if verbose else []),
            "reconcile",
            "--once",
            "--repo",
            str(self.repo.bare),
            "--state-dir",
            str(self.state),
            "--git-credentials-file",
            str(self.credentials),
            "--kubeconfig",
            str(self.kubeconfig),
            "--cluster-timeout",
            "2s",
            expect=expect,
        )

    def hunt_everything(self, hunt: leaks.Hunt) -> None:
        """The state dir's caches and files, and the remote, the source itself allowed."""
        for cache in sorted((self.state / "repos").glob("*.git")):
            hunt.git(cache, source_refs=("refs/remotes/origin/main",))
        hunt.folder(self.state, allowed=lambda path, _data: path.parts[:1] == ("repos",))
        hunt.git(self.repo.bare, source_refs=("refs/heads/main",))


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Planted]:
    """One emulated cluster `a`, a source repo placing a Secret (in config.yaml) there, a git
    credentials file and a kubeconfig token, each holding a planted value."""
    data, text = leaks.plant("secret-data"), leaks.plant("secret-string")
    token, kube_token = leaks.plant("git-token"), leaks.plant("kube-token")
    repo = make_source_repo(tmp_path / "source", None)
    repo.write(
        {
            "dro.yaml": DRO_YAML,
            "workloads/web.yaml": WEB,
            "policies/divided.yaml": POLICY,
            "clusters/a.yaml": cluster_file("a"),
            CONFIG.replace("shop/", ""): secret(data, text),
        }
    )
    repo.commit("fleet")
    credentials = tmp_path / "git-credentials"
    credentials.write_text(f"ci:{token.value}\n")
    with KubeAPI(nodes=2) as api:
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig", context="a")
        kubeconfig.write_text(
            kubeconfig.read_text().replace("kubeapi-emulator-token", kube_token.value)
        )
        yield Planted(
            repo=repo,
            api=api,
            kubeconfig=kubeconfig,
            credentials=credentials,
            state=tmp_path / "state",
            values=[data, text, token, kube_token],
        )


def test_passes_that_fail_every_way_leak_nothing(planted: Planted) -> None:
    hunt = leaks.Hunt(planted.values)
    hunt.text("first pass", planted.reconcile(expect=0))
    hunt.text("first pass, -v", planted.reconcile(verbose=True, expect=0))
    stored = planted.api.get("", "v1", "secrets", "shop", "credentials")
    assert stored is not None, "the Secret was applied"

    # a bad override path on the Secret: the pass fails at validation
    planted.repo.write({"policies/bad.yaml": OVERRIDE_PLAINTEXT})
    planted.repo.commit("bad override")
    failed = planted.reconcile(verbose=True, expect=1)
    assert "has no field 'missing'" in failed
    hunt.text("bad override, -v", failed)
    planted.repo.write({"policies/bad.yaml": None})
    planted.repo.commit("revert")

    # the cluster cannot be reached
    planted.api.refuse()
    try:
        down = planted.reconcile(verbose=True, expect=1)
    finally:
        planted.api.accept()
    assert "unreachable" in down
    hunt.text("unreachable cluster, -v", down)

    # the remote refuses the push: another writer holds the branch's lock
    lock = planted.repo.bare / "refs" / "heads" / "dro" / "rendered.lock"
    lock.write_text("")
    planted.repo.write(
        {"workloads/more.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: more\n"}
    )
    planted.repo.commit("more")
    refused = planted.reconcile(verbose=True, expect=1)
    assert "push" in refused
    hunt.text("refused push, -v", refused)
    hunt.text("refused push", planted.reconcile(expect=1))
    lock.unlink()
    hunt.text("after the push works again", planted.reconcile(expect=0))

    # the read-only commands on the same repository, with the same credentials
    for command in ("validate", "schedule", "explain", "render"):
        args = [command, "--repo", str(planted.repo.bare), "--state-dir", str(planted.state)]
        args += ["--git-credentials-file", str(planted.credentials)]
        if command == "schedule":
            args += ["-o", "json"]
        if command == "explain":
            args += ["shop/Secret/credentials"]
        if command == "render":
            out = planted.state.parent / "rendered"
            args += ["--out", str(out)]
        hunt.text(command, planted.dro(*args, expect=0))
    hunt.folder(planted.state.parent / "rendered", allowed=leaks.secret_manifests)
    planted.hunt_everything(hunt)
    hunt.assert_clean()
    manifest = git(planted.repo.bare, "show", f"{OUTPUT}:clusters/a/shop/secret-credentials.yaml")
    assert planted.values[0].base64 in manifest, "the Secret is committed byte for byte"
    assert planted.values[1].value in manifest


CRASH = '''"""Test-only: the commit stage of the first {n} passes raises, as a bug would."""
import reconciler.commit

_real, _calls = reconciler.commit.publish, []


def publish(*args, **kwargs):
    _calls.append(1)
    if len(_calls) <= {n}:
        raise RuntimeError("injected crash in the commit stage")
    return _real(*args, **kwargs)


reconciler.commit.publish = publish
'''


def test_dro_run_crashes_log_no_secret(planted: Planted, tmp_path: Path) -> None:
    webhook = leaks.plant("webhook-secret")
    secret_file = tmp_path / "webhook-secret"
    secret_file.write_text(webhook.value + "\n")
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(CRASH.replace("{n}", "2"))
    service = Service(
        tmp_path,
        "--repo",
        str(planted.repo.bare),
        "--state-dir",
        str(planted.state),
        "--git-credentials-file",
        str(planted.credentials),
        "--kubeconfig",
        str(planted.kubeconfig),
        "--webhook-secret-file",
        str(secret_file),
        "--leader-elect=false",
        "--interval",
        "600s",
        env={"PYTHONPATH": f"{inject}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    try:

        def ended() -> int:
            return sum(1 for e in service.events() if e.get("event") == "pass_ended")

        for count in (1, 2, 3):
            wait_for(lambda n=count: ended() >= n, f"pass {count}", timeout=120)
            if count < 3:
                assert service.push_event(webhook.value.encode()) == 202
        crashes = [e for e in service.events() if e.get("event") == "pass_crashed"]
        assert len(crashes) == 2, "the injected crashes are logged with their traceback"
        assert all(e.get("exception") for e in crashes)
        results = [e["result"] for e in service.events() if e.get("event") == "pass_ended"]
        assert results[2] == "success", results
    finally:
        assert service.terminate() == 0
        service.close()
    hunt = leaks.Hunt([*planted.values, webhook])
    log = service.log.read_text()
    assert "Credentials(" not in log or "<redacted>" in log
    hunt.text("dro run's log", log)
    planted.hunt_everything(hunt)
    hunt.assert_clean()


def test_credentials_in_a_repository_url_are_used_and_never_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user, token = "ci", leaks.plant("url-token")
    repo = make_source_repo(tmp_path / "origin")
    served = tmp_path / "served"
    served.mkdir()
    bare = served / "fleet.git"
    repo.bare.rename(bare)
    git(bare, "config", "http.receivepack", "true")
    state = tmp_path / "state"
    hunt = leaks.Hunt([token])
    with httpgit.serving(served, user=user, password=token.value) as server:
        url = server.url("fleet.git", f"{user}:{token.value}")
        done = subprocess.run(
            [DRO, "-v", "reconcile", "--once", "--repo", url, "--state-dir", str(state)],
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"pushed to {server.url('fleet.git')}" in done.stdout
        hunt.text("reconcile over http", done.stdout + done.stderr)
        assert server.served, "fetched and pushed with the URL's credentials"
        wrong = server.url("fleet.git", f"{user}:{token.value}").replace(str(server.port), "1")
        failed = subprocess.run(
            [DRO, "validate", "--repo", wrong, "--state-dir", str(state)],
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert failed.returncode == 1
        assert "fetch from http://127.0.0.1:1/fleet.git failed" in failed.stderr
        hunt.text("unreachable URL", failed.stdout + failed.stderr)
    assert git(bare, "rev-parse", f"refs/heads/{OUTPUT}")
    for cache in sorted((state / "repos").glob("*.git")):
        hunt.git(cache, source_refs=("refs/remotes/origin/main",))
    hunt.assert_clean()
