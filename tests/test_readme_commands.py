"""Every shell command the README shows runs as written, in a terminal and through a pipe.

The commands come out of the README's ```sh, ```bash and ```console blocks (tests/readmeshell.py)
and run, in the README's order, in a copy of this repository that mirrors what a user has after
`make install`: the repository's files, `.venv/bin` on PATH, a home of its own (so dro's caches
and git's settings are the test's). The first command is `make demo` itself, so every later one
meets the fresh demo it expects. The whole sequence runs twice, once in a pseudo-terminal of 80
columns and once through pipes; each command is then one test per way.

Each command must exit 0, or the status the README documents for it (EXPECTED_STATUS); print no
traceback; write JSON that parses when it asks for `-o json` on stdout; and leave a non-empty file
behind each `> FILE`, which is how a user sees that stdout carried the data even on a terminal. A
command that cannot run here is in SKIPPED with the reason; a command that is in neither the
README nor a table fails the table checks, so a new README command is run or explained.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from conftest import ROOT
from readmeshell import (
    CD,
    Command,
    Outcome,
    commands,
    redirect_targets,
    run_in_terminal,
    run_through_pipes,
)

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = commands(README)
TIMEOUT = 120.0
TRACEBACK = "Traceback (most recent call last)"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # jq colours its JSON on a terminal

# Commands a test cannot run as written, keyed by their text (the trailing comment dropped).
SKIPPED: dict[str, str] = {
    "make test": "it runs this test suite, which holds this test",
    "make check": "it runs ruff, mypy and this test suite, which holds this test",
    "DRO_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_render.py": (
        "it rewrites the golden files of the source tree; tests/test_render.py runs it unchanged"
    ),
    ".venv/bin/python -m tests.kubeapi --port 6443 --nodes 3": (
        "it serves until killed; tests/kubeapi is started by the tests that use it"
    ),
    "make e2e": "it builds Kubernetes from Go and runs tests/e2e: CI runs it after make test",
    "make e2e-build": "it builds Kubernetes from Go (minutes); make e2e runs it",
    "DRO_E2E_KUBECONFIG=~/.kube/config make e2e": "it needs a real cluster's kubeconfig",
    "dro reconcile --once --repo URL --kubeconfig ~/.kube/fleet/": (
        "URL and the kubeconfigs are the reader's: it needs their remote and real clusters"
    ),
    "dro diff --repo URL --kubeconfig ~/.kube/fleet/ -o json | jq '.clusters[].objects[]'": (
        "URL and the kubeconfigs are the reader's: tests/test_diff_live.py runs dro diff"
    ),
    "kubectl apply -f deploy/namespace.yaml": "it needs a real cluster",
    (
        "kubectl -n dro-system create secret generic dro-git-credentials"
        " --from-file=credentials=./git-credentials"
    ): "it needs a real cluster and the reader's git token",
    "kubectl apply -k deploy/": "it needs a real cluster; tests/test_deploy.py checks deploy/",
    "age-keygen -o age.key": "age's own tool; tests/test_sops.py makes its age key with pyrage",
    (
        "sops --encrypt --age age1... --encrypted-regex '^(data|stringData)$' --in-place"
        " workloads/db-secret.yaml"
    ): "it needs the reader's age recipient; tests/test_sops.py encrypts with a test key",
    "dro reconcile --once --repo URL --kubeconfig ~/.kube/fleet/ --sops-age-key-file age.key": (
        "URL, the kubeconfigs and the key are the reader's: tests/test_sops.py applies"
        " encrypted Secrets to emulated clusters"
    ),
}

# The REST API's curl examples: one per endpoint, against "$DRO" with "$TOKEN".
API_CURLS = {
    command.text: (
        "it needs dro run serving the REST API and a signed token; tests/test_api_routes.py "
        "makes each of these requests over HTTP"
    )
    for command in COMMANDS
    if command.text.startswith("curl -sS ") and '"$DRO/' in command.text
}
SKIPPED.update(API_CURLS)

# Commands the README shows failing on purpose, with the status it documents.
EXPECTED_STATUS: dict[str, int] = {
    "dro validate build/typo": 1,
    "dro schedule example-repo -o yml": 1,
    "dro plan --repo source.git --base main~1 --head main --exit-code > plan.md": 2,
}

# Programs a command needs besides dro, git, make and coreutils; missing ones skip it, saying so.
NEEDS = {"jq ": "jq", "kubectl ": "kubectl"}

RUNNERS: dict[str, Callable[[str, Path, Mapping[str, str], float], Outcome]] = {
    "terminal": run_in_terminal,
    "pipe": run_through_pipes,
}


def runnable() -> list[Command]:
    """The README's commands that run here, `cd` included (it moves the rest of its block)."""
    return [command for command in COMMANDS if command.text not in SKIPPED]


def user_checkout(base: Path) -> Path:
    """A copy of the repository as a user has it after `make install`, at `base/repo`."""
    repo = base / "repo"
    repo.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, repo / name)
    for name in ("scripts", "example-repo", "deploy", "bench", "examples"):
        shutil.copytree(ROOT / name, repo / name, symlinks=True)
    venv = repo / ".venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
    # `.venv/bin/python` finds its packages from pyvenv.cfg and lib/ beside its bin/.
    installed = Path(sys.executable).parent.parent
    for name in ("pyvenv.cfg", "lib", "lib64"):
        if (installed / name).exists():
            (venv / name).symlink_to(installed / name)
    (venv / ".installed").touch()  # newer than pyproject.toml: `make demo` installs nothing
    return repo


def user_environment(repo: Path, home: Path) -> dict[str, str]:
    """The user's environment: `.venv/bin` first on PATH, a clean home, no dro settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DRO_", "GIT_", "XDG_", "PYTEST", "COV_")) and key != "COLUMNS"
    }
    env["PATH"] = f"{repo / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    env["HOME"] = str(home)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["PAGER"] = env["GIT_PAGER"] = "cat"  # a test cannot press q in git's pager
    return env


@pytest.fixture(scope="module", params=sorted(RUNNERS))
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, dict[str, Outcome]]:
    """Every runnable README command run in order, one way: (the way, the checkout, outcomes)."""
    way = str(request.param)
    base = tmp_path_factory.mktemp(f"readme-{way}")
    repo = user_checkout(base)
    (base / "home").mkdir()
    env = user_environment(repo, base / "home")
    outcomes: dict[str, Outcome] = {}
    for command in runnable():
        if CD.match(command.text):
            continue
        outcomes[key(command)] = RUNNERS[way](command.text, repo / command.cwd, env, TIMEOUT)
    return way, repo, outcomes


def key(command: Command) -> str:
    """A command's identity: its block and text (the same text may appear in two blocks)."""
    return f"{command.block}: {command.text}"


def json_values(text: str) -> list[object]:
    """The JSON values of a stream (jq prints one after another); raises if any is not JSON."""
    decoder = json.JSONDecoder()
    text = ANSI.sub("", text)
    values: list[object] = []
    position = 0
    while text[position:].strip():
        position += len(text[position:]) - len(text[position:].lstrip())
        value, position = decoder.raw_decode(text, position)
        values.append(value)
    return values


@pytest.mark.parametrize("command", runnable(), ids=key)
def test_a_readme_command_runs_as_written(
    session: tuple[str, Path, dict[str, Outcome]], command: Command
) -> None:
    way, repo, outcomes = session
    moved = CD.match(command.text)
    if moved:
        assert (repo / command.cwd / moved[1]).is_dir(), command.text
        return
    for marker, program in NEEDS.items():
        if marker in command.text and shutil.which(program) is None:
            pytest.skip(f"{program} is not installed")
    outcome = outcomes[key(command)]
    shown = (
        f"{way}: {command.text}\n--- exit status {outcome.status}\n--- stdout\n"
        f"{outcome.stdout[-3000:]}\n--- stderr\n{outcome.stderr[-3000:]}"
    )
    assert outcome.status == EXPECTED_STATUS.get(command.text, 0), shown
    assert TRACEBACK not in outcome.stdout + outcome.stderr, shown
    assert "internal error" not in outcome.stderr, shown
    if re.search(r"-o json\s*$", command.text):
        assert json_values(outcome.stdout), shown
    if re.search(r"-o json\s*\|\s*jq(?!.* -r)", command.text):
        assert json_values(outcome.stdout), f"{shown}\njq printed no JSON: dro wrote nothing?"
    for target in redirect_targets(command.text):
        written = repo / command.cwd / target
        assert written.is_file(), f"{shown}\n{target} was not written"
        assert written.stat().st_size > 0, f"{shown}\n{target} is empty"


def test_every_skipped_command_is_still_in_the_readme() -> None:
    shown = {command.text for command in COMMANDS}
    assert set(SKIPPED) <= shown, set(SKIPPED) - shown
    assert set(EXPECTED_STATUS) <= shown, set(EXPECTED_STATUS) - shown


def test_the_readme_shows_commands_and_the_demo_comes_first() -> None:
    assert COMMANDS[0].text == "make demo", "every later command expects the demo's files"
    run = [command for command in runnable() if not CD.match(command.text)]
    assert len(run) >= 20
    assert any("-o json" in command.text for command in run)
    assert any(re.search(r"\| *jq\b", command.text) for command in run)


def test_make_demo_prints_and_creates_what_the_readme_says(
    session: tuple[str, Path, dict[str, Outcome]],
) -> None:
    way, repo, outcomes = session
    demo = outcomes[key(COMMANDS[0])]
    for promised in ("ok: ", "dro/rendered", "build/demo/source.git", "apply skipped: offline"):
        assert promised in demo.stdout + demo.stderr, f"{way}: {promised!r} not printed"
    for path in ("build/demo/work/.git", "build/demo/source.git", "build/demo/state"):
        assert (repo / path).is_dir(), path
    for path in re.findall(r"`(build/demo/[\w./-]+)`", README):
        assert (repo / path).exists(), f"the README names {path}, which make demo does not create"
