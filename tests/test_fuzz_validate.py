"""Fuzzing `dro validate` with mutated example-repo files: it never crashes, and when it says
ok, `schedule`, `render` and `plan` never crash on the same input either.

Each example changes one file of the example repo, in one of three ways:

- structure: the file's YAML is loaded, one node is dropped, replaced (huge, negative, float,
  NaN, string, null, deeply nested, unicode or very long values), renamed or wrapped, and the
  result is dumped again; or the file is deleted;
- text: one line gets a tag (`!!set`, `!!python/object/apply`, a local tag …), a duplicate, a
  deeply nested or odd scalar value, or is removed;
- bytes: a few random bytes are inserted, replaced or deleted.

`dro validate` must exit 0 or 1 and print nothing but `FILE:LINE: POINTER: MESSAGE` lines on
stdout when it fails. When it passes, `dro schedule -o json` prints JSON and exits 0, `dro
render` exits 0, and `dro plan` (main → the mutated commit, on a repo with an output branch)
exits 0. The commands run in-process, so any exception escaping `cli.main` fails the test
with its traceback.

One node or line changes per example, so a crash that needs two coordinated changes is out
of reach; the one found by hand (a custom resource without a CRD whose pod template holds a
string for its containers) is kept in `FOUND` with the others.

The default run is bounded and deterministic (`derandomize`): DRO_FUZZ_EXAMPLES raises the
number of examples (e.g. 2000 for a long run), DRO_FUZZ_SEED picks other examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from reconciler import cli, pipeline
from reconciler.settings import Settings
from tests.conftest import EXAMPLE, SourceRepo, git, make_source_repo

EXAMPLES = int(os.environ.get("DRO_FUZZ_EXAMPLES", "60"))
SEED = int(os.environ.get("DRO_FUZZ_SEED", "0"))
FILES = {
    str(path.relative_to(EXAMPLE)): path.read_text()
    for path in sorted(EXAMPLE.rglob("*.yaml"))
    if path.is_file()
}
PROBLEM = re.compile(r"^\S[^\n]*?:[0-9]+: /[^\n]*?: \S.*$")
"""`FILE:LINE: POINTER: MESSAGE` (the pointer is `/` for a whole document)."""

ODD_VALUES: list[Any] = [
    None,
    True,
    "",
    -1,
    0,
    2**31,
    2**31 - 1,
    2**63,
    10**30,
    -(2**63) - 1,
    10**300,
    1e308,
    float("nan"),
    float("inf"),
    -0.5,
    "x" * 300,
    "ünïcödé-\u2028-\U0001f600",
    "a/../../b",
    "2026-13-45T99:99:99Z",
    "1e309",
    "-1",
    "99999999999999999999Ei",
    "=",
    [],
    {},
    [[[[[[[[[[[[["deep"]]]]]]]]]]]]],
    {"unexpected": {"nested": [1, 2, 3]}},
]
PLAUSIBLE_VALUES: list[Any] = [
    "eu-west-1",
    "us-east-gpu",
    "shop",
    "default",
    "Deployment",
    "apps/v1",
    "v1",
    "100m",
    "64Gi",
    "0",
    "Divided",
    "Duplicated",
    "StaticWeight",
    "DynamicWeight",
    "Aggregated",
    "label",
    "name",
    "env=prod",
    "region",
    "NoSchedule",
    "10%",
    "1h",
    0.5,
    0.99,
    1.0,
    3,
]
"""Values that often pass validation, so schedule, render and plan see odd but valid input."""
TAGS = [
    "!!set ",
    "!!omap ",
    "!!binary ",
    "!!python/object/apply:os.system ",
    "!local ",
    "!!str ",
    "!!int ",
    "!!timestamp ",
    "! ",
]
TEXT_VALUES = [
    "[" * 30000 + "]" * 30000,
    "{a: " * 150 + "1" + "}" * 150,
    "9" * 5000,
    ".nan",
    "-.inf",
    "1.0e+309",
    "=",
    "*undefined",
    "&anchor",
    "'unterminated",
    '"\\uD800"',
    "{",
    "- a",
    "null",
    "~",
    "0x7FFFFFFFFFFFFFFFFF",
    "1_000_000",
    "190:20:30",
    "yes",
    "2026-01-01",
]


@dataclass(frozen=True)
class Mutation:
    """One changed file: its new bytes, or None when it is deleted; and how it was made."""

    path: str
    data: bytes | None
    how: str


def _node_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _node_paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _node_paths(child, (*prefix, index))


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


@st.composite
def _structure(draw: st.DrawFn, path: str) -> Mutation:
    documents = [d for d in yaml.safe_load_all(FILES[path]) if d is not None]
    if not documents or draw(st.integers(0, 19)) == 0:
        return Mutation(path, None, "deleted")
    index = draw(st.integers(0, len(documents) - 1))
    where = draw(st.sampled_from(list(_node_paths(documents[index]))))
    values = (
        st.sampled_from(ODD_VALUES)
        | st.sampled_from(PLAUSIBLE_VALUES)
        | st.integers(-(2**70), 2**70)
        | st.integers(0, 40)
        | st.text(max_size=40)
    )
    operation = draw(st.sampled_from(["drop", "replace", "replace", "rename", "wrap"]))
    if not where:
        operation = "replace"
    if operation == "replace":
        new = draw(values)
        if where:
            _parent(documents[index], where)[where[-1]] = new
        else:
            documents[index] = new
    else:
        parent, last = _parent(documents[index], where), where[-1]
        if operation == "drop":
            del parent[last]
        elif operation == "wrap":
            parent[last] = [parent[last]] if draw(st.booleans()) else {"x": parent[last]}
        elif isinstance(parent, dict):
            name = draw(st.sampled_from(["", "x" * 300, "ключ", "a/b", "~1", "spec", "kind"]))
            parent[name] = parent.pop(last)
        else:
            parent.insert(0, parent[last])  # a duplicate list item
    text = yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True)
    return Mutation(path, text.encode(), f"{operation} {'/'.join(map(str, where))}")


@st.composite
def _text(draw: st.DrawFn, path: str) -> Mutation:
    lines = FILES[path].splitlines(keepends=True)
    index = draw(st.integers(0, len(lines) - 1))
    line = lines[index]
    key, colon, _ = line.partition(": ")
    operation = draw(st.sampled_from(["tag", "value", "value", "duplicate", "delete"]))
    if operation == "duplicate":
        lines.insert(index, line)
    elif operation == "delete":
        del lines[index]
    elif not colon:
        lines[index] = line.rstrip("\n") + " " + draw(st.sampled_from(TEXT_VALUES)) + "\n"
    elif operation == "tag":
        _, _, value = line.partition(": ")
        lines[index] = f"{key}: {draw(st.sampled_from(TAGS))}{value}"
    else:
        lines[index] = f"{key}: {draw(st.sampled_from(TEXT_VALUES))}\n"
    return Mutation(path, "".join(lines).encode(), f"{operation} line {index + 1}")


YAML_BYTES = st.binary(min_size=1, max_size=4) | st.text(
    "[]{}:,-#&*!|>'\"%@`?\n\t 0123456789.eEx~", min_size=1, max_size=4
).map(str.encode)
"""Random bytes, or YAML's own punctuation (which invalid UTF-8 would hide)."""


@st.composite
def _bytes(draw: st.DrawFn, path: str) -> Mutation:
    data = bytearray(FILES[path].encode())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        chunk = draw(YAML_BYTES)
        operation = draw(st.sampled_from(["insert", "replace", "delete"]))
        if operation == "insert":
            data[at:at] = chunk
        elif operation == "replace":
            data[at : at + len(chunk)] = chunk
        else:
            del data[at : at + len(chunk)]
    return Mutation(path, bytes(data), "random bytes")


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    """One mutated example-repo file."""
    path = draw(st.sampled_from(sorted(FILES)))
    way = draw(st.sampled_from([_structure, _structure, _text, _text, _bytes]))
    mutation: Mutation = draw(way(path))
    return mutation


def _run(*args: str) -> tuple[int, str, str]:
    """`dro ARGS` in-process: (exit code, stdout, stderr). An exception is a crash."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


@dataclass
class Workspace:
    """A source repo with an output branch (for `plan`), and a scratch folder."""

    repo: SourceRepo
    scratch: Path
    counter: int = 0


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    tmp = tmp_path_factory.mktemp("fuzz")
    repo = make_source_repo(tmp / "src")
    pipeline.reconcile_once(Settings(repo=str(repo.bare), state_dir=tmp / "state"))
    git(repo.work, "fetch", "--quiet", "origin")
    return Workspace(repo=repo, scratch=tmp / "scratch")


def _apply(mutation: Mutation, root: Path) -> None:
    target = root / mutation.path
    if mutation.data is None:
        target.unlink()
    else:
        target.write_bytes(mutation.data)


def check_one(workspace: Workspace, mutation: Mutation) -> None:
    """The properties for one mutated file (the test body; also used by regression tests)."""
    workspace.counter += 1
    case = workspace.scratch / str(workspace.counter)
    source = case / "source"
    shutil.copytree(EXAMPLE, source)
    _apply(mutation, source)
    code, out, err = _run("validate", str(source))
    assert code in (0, 1), f"validate exited {code}: {err}"
    assert "Traceback" not in out + err
    if code == 1:
        assert err.strip(), f"validate failed without saying where: {out}"
        assert out == "", "stdout carries data only; problems go to stderr"
        for row in err.splitlines():
            assert PROBLEM.match(row), f"not FILE:LINE: POINTER: MESSAGE: {row!r}"
        return
    code, out, err = _run("schedule", str(source), "-o", "json")
    assert code == 0, f"validate passed, schedule exited {code}: {out}{err}"
    assert "decisions" in json.loads(out)
    code, out, err = _run("render", str(source), "--out", str(case / "rendered"))
    assert code == 0, f"validate passed, render exited {code}: {out}{err}"
    work = workspace.repo.work
    git(work, "checkout", "--quiet", "-B", "fuzz", "main")
    _apply(mutation, work)
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "--allow-empty", "-m", mutation.how)
    code, out, err = _run("plan", "--repo", str(work), "--base", "main", "--head", "fuzz")
    git(work, "checkout", "--quiet", "main")
    assert code == 0, f"validate passed, plan exited {code}: {out}{err}"
    shutil.rmtree(case)


@seed(SEED)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=SEED == 0,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutation=mutations())
def test_validate_never_crashes_and_what_it_accepts_runs(
    workspace: Workspace, mutation: Mutation
) -> None:
    check_one(workspace, mutation)


FOUND = {
    "custom-cronjob-without-crd": Mutation(
        "workloads/shop/odd.yaml",
        b"apiVersion: example.com/v1\nkind: CronJob\nmetadata: {name: odd, namespace: shop}\n"
        b"spec: {jobTemplate: 5}\n",
        "a custom resource named like a built-in kind, with no CRD: only a warning",
    ),
    "custom-resource-whose-pod-is-not-a-pod": Mutation(
        "workloads/shop/odd.yaml",
        b"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: odd, namespace: shop}\n"
        b"spec: {template: {spec: {containers: oops}}}\n",
        "a custom resource with no CRD whose pod template holds a string for its containers",
    ),
    "largest-node-free-of-an-undeclared-resource": Mutation(
        "clusters/us-east-1.yaml",
        FILES["clusters/us-east-1.yaml"]
        .replace("largestNodeFree: {", "largestNodeFree: {example.com/fpga: '2', ")
        .encode(),
        "largestNodeFree names a resource that neither capacity nor allocated names",
    ),
}
"""Inputs the fuzzing found that crashed a command, kept as regressions."""


@pytest.mark.parametrize("name", sorted(FOUND))
def test_what_fuzzing_found_stays_fixed(workspace: Workspace, name: str) -> None:
    check_one(workspace, FOUND[name])
