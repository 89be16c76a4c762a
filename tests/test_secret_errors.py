"""Secrets never leave, offline: a value planted in a Secret appears in no error, no output of
validate, schedule, explain, render (but the Secret's own manifest, byte for byte) or plan.

The Secret sits where masking by file name would miss it: in `workloads/shop/config.yaml`
beside a ConfigMap, wrapped in a `List`, spelled `kind: secret`. Each bad-input case keeps the
planted value in the same Secret as the error, so a message that quotes the object shows it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler import cli
from tests import leaks
from tests.builders.secretsource import CONFIG, OVERRIDE_PLAINTEXT, secret
from tests.conftest import EXAMPLE, SourceRepo, git, make_source_repo


def example(tmp_path: Path, files: dict[str, str]) -> Path:
    """The example repo as a plain directory, with `files` written into it."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`dro ARGS` in-process; (exit code, stdout and stderr together)."""
    capsys.readouterr()
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_hunt_finds_a_value_in_every_form(tmp_path: Path) -> None:
    planted = leaks.plant("self-test")
    hunt = leaks.Hunt([planted])
    assert not hunt.text("clean", "nothing to see")
    assert hunt.text("raw", f"x{planted.value}y")
    for prefix in (b"", b"a", b"ab", b"abc"):
        wrapped = leaks.base64.b64encode(prefix + planted.value.encode() + b"tail").decode()
        assert hunt.text(f"inside base64 after {len(prefix)} bytes", wrapped), prefix
    repo = make_source_repo(tmp_path / "git", None)
    repo.write({"note.txt": f"{planted.value}\n"})
    repo.commit()
    found = leaks.Hunt([planted])
    found.git(repo.bare)
    assert found.leaks, "a value in a (compressed) git object is found"
    allowed = leaks.Hunt([planted])
    allowed.git(repo.bare, source_refs=("refs/heads/main",))
    allowed.assert_clean()


def test_offline_commands_show_no_secret_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, text = leaks.plant("data"), leaks.plant("string-data")
    root = example(tmp_path, {CONFIG: secret(data, text)})
    hunt = leaks.Hunt([data, text])
    out = tmp_path / "out"
    for args in (
        ["validate", str(root)],
        ["schedule", str(root), "-o", "json"],
        ["schedule", str(root), "-o", "yaml"],
        ["schedule", str(root)],
        ["explain", str(root), "shop/Secret/credentials"],
        ["explain", str(root), "shop/Secret/credentials", "-o", "json"],
        ["render", str(root), "--out", str(out)],
    ):
        code, printed = run(capsys, *args)
        assert code == 0, printed
        hunt.text(" ".join(args[:1] + args[2:]), printed)
    hunt.folder(out, allowed=leaks.secret_manifests)
    hunt.assert_clean()
    rendered = [p.read_text() for p in out.glob("clusters/*/shop/secret-credentials.yaml")]
    assert rendered, "the Secret is placed"
    for manifest in rendered:  # byte for byte as in the source, never decoded
        assert f"token: {data.base64}\n" in manifest
        assert f"pw: {text.value}\n" in manifest


OVERRIDE_FIELD = """apiVersion: multicluster.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: bad-field}
spec:
  resourceSelector: {apiVersion: v1, kind: Secret, namespace: shop, name: credentials}
  overrides:
    - clusterSelector: {names: [eu-west-1]}
      fieldPatches:
        - {path: "data.token.inner", value: 3}
"""
LISTED = """apiVersion: v1
kind: List
metadata: {name: wrapped}
items:
  - apiVersion: v1
    kind: Secret
    metadata: {name: listed, namespace: shop}
    data: {token: {value}, count: 7}
"""

Case = Callable[[leaks.Planted, leaks.Planted], dict[str, str]]
ERROR_CASES: dict[str, tuple[Case, str, str]] = {
    # name: (files, the command that reports it, the expected FILE:LINE: POINTER: fragment)
    "data-value-not-a-string": (
        lambda d, t: {CONFIG: secret(d, t).replace("\ndata:\n", "\ndata:\n  count: 12\n")},
        "validate",
        f"{CONFIG}:15: /data/count: must be of type 'string'",
    ),
    "data-is-a-list": (
        lambda d, t: {CONFIG: secret(d, t).replace(f"  token: {d.base64}", f"  - {d.base64}")},
        "validate",
        f"{CONFIG}:14: /data: must be of type 'object'",
    ),
    "string-data-value-a-list": (
        lambda d, t: {CONFIG: secret(d, t).replace(f"pw: {t.value}", f"pw: [{t.value}]")},
        "validate",
        f"{CONFIG}:17: /stringData/pw: must be of type 'string'",
    ),
    "annotation-a-list": (
        lambda d, t: {
            CONFIG: secret(d, t).replace("annotations:\n", f"annotations:\n    copy: [{t.value}]\n")
        },
        "validate",
        f"{CONFIG}:12: /metadata/annotations/copy: must be of type 'string'",
    ),
    "type-holds-the-value": (
        lambda d, t: {CONFIG: secret(d, t).replace("type: Opaque", f"type: [{t.value}]")},
        "validate",
        f"{CONFIG}:13: /type: must be of type 'string'",
    ),
    "immutable-holds-the-value": (
        lambda d, t: {CONFIG: secret(d, t, extra=f"immutable: {t.value}\n")},
        "validate",
        f"{CONFIG}:18: /immutable: must be of type 'boolean'",
    ),
    "malformed-base64": (
        lambda d, t: {CONFIG: secret(d, t).replace(f"token: {d.base64}", f"token: {d.value}")},
        "validate",
        f"{CONFIG}:15: /data/token: not valid base64 (the value is not shown)",
    ),
    "duplicate-key": (
        lambda d, t: {
            CONFIG: secret(d, t).replace(f"  pw: {t.value}", f"  pw: {t.value}\n  pw: x")
        },
        "validate",
        f"{CONFIG}:18: /stringData/pw: duplicate key 'pw'",
    ),
    "override-path-missing": (
        lambda d, t: {CONFIG: secret(d, t), "policies/bad.yaml": OVERRIDE_PLAINTEXT},
        "render",
        "/data has no field 'missing'",
    ),
    "override-through-a-string": (
        lambda d, t: {CONFIG: secret(d, t), "policies/bad.yaml": OVERRIDE_FIELD},
        "render",
        "data.token.inner: 'inner' is set on a str, not a map",
    ),
    "list-wrapped": (
        lambda d, t: {"workloads/shop/listed.yaml": LISTED.replace("{value}", d.base64)},
        "validate",
        "workloads/shop/listed.yaml:",
    ),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_about_a_secret_never_quote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    files, command, expected = ERROR_CASES[case]
    data, text = leaks.plant("data"), leaks.plant("string-data")
    root = example(tmp_path, files(data, text))
    args = ["render", str(root), "--out", str(tmp_path / "out")] if command == "render" else []
    code, printed = run(capsys, *(args or [command, str(root)]))
    assert code == 1, printed
    assert expected in printed, printed
    hunt = leaks.Hunt([data, text])
    hunt.text(f"dro {command}", printed)
    hunt.assert_clean()


BASE_WRAPPED = """apiVersion: v1
kind: List
metadata: {name: wrapped}
items:
  - apiVersion: v1
    kind: Secret
    metadata: {name: listed, namespace: shop}
    stringData: {pw: {value}}
"""
LOWER = """apiVersion: v1
kind: secret
metadata: {name: lower, namespace: shop}
stringData: {pw: {value}}
"""


def _planted_source(work: Path, values: list[leaks.Planted]) -> None:
    data, text, wrapped, lower = values
    (work / CONFIG).write_text(secret(data, text))
    (work / "workloads/shop/wrapped.yaml").write_text(
        BASE_WRAPPED.replace("{value}", wrapped.value)
    )
    (work / "workloads/shop/lower.yaml").write_text(LOWER.replace("{value}", lower.value))


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[SourceRepo, list[leaks.Planted]]:
    """main and a head branch that changes every planted value; all of them planted."""
    repo = make_source_repo(tmp_path_factory.mktemp("plan"))
    labels = ("data", "string-data", "wrapped", "lower")
    old, new = [leaks.plant(f"old-{n}") for n in labels], [leaks.plant(f"new-{n}") for n in labels]
    _planted_source(repo.work, old)
    repo.commit("Secrets")
    git(repo.work, "checkout", "--quiet", "-b", "rotate")
    _planted_source(repo.work, new)
    git(repo.work, "commit", "--quiet", "--all", "-m", "rotate")
    git(repo.work, "checkout", "--quiet", "main")
    return repo, old + new


@pytest.mark.parametrize("output", ["markdown", "json", "text"])
def test_plan_masks_secrets_by_kind(
    reviewed: tuple[SourceRepo, list[leaks.Planted]],
    capsys: pytest.CaptureFixture[str],
    output: str,
) -> None:
    repo, planted = reviewed
    code, printed = run(
        capsys,
        *("plan", "--repo", str(repo.work), "--base", "main", "--head", "rotate", "-o", output),
    )
    assert code == 0, printed
    assert "secret-credentials.yaml" in printed, "the changed Secret is listed"
    diffs = printed
    if output == "json":
        manifests = json.loads(printed)["manifests"]
        diffs = "".join(f["diff"] for cluster in manifests for f in cluster["files"])
    assert '+  token: "<redacted: new value>"' in diffs
    assert "secret-listed.yaml" in printed, "a List's Secret is rendered as its own object"
    if output != "text":  # the report names the changed keys of each Secret
        for key in ("data.token", "stringData.pw"):
            assert key in printed
    hunt = leaks.Hunt(planted)
    hunt.text(f"dro plan -o {output}", printed)
    hunt.assert_clean()


def test_a_malformed_kubeconfig_or_config_file_is_located_not_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token, url_token = leaks.plant("kube-token"), leaks.plant("url-token")
    repo = make_source_repo(tmp_path / "source")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncontexts: [{name: eu-west-1, context: {user: u}}]\n"
        f'users:\n  - name: u\n    user: {{token: "{token.value}}}\n'
    )
    code, printed = run(
        capsys,
        *("reconcile", "--once", "--repo", str(repo.bare), "--state-dir", str(tmp_path / "s")),
        *("--kubeconfig", str(kubeconfig)),
    )
    assert code == 1
    assert f"{kubeconfig}: not a readable kubeconfig: line 7, column 1: " in printed, printed
    assert "quoted scalar started at line 6" in printed
    config = tmp_path / "dro-run.yaml"
    config.write_text(f"repo: https://ci:{url_token.value}@git.example/fleet.git\nref: [main\n")
    code, run_printed = run(capsys, "run", "--config", str(config))
    assert code == 1
    assert f"{config}: cannot read the config file: line 3, column 1" in run_printed, run_printed
    hunt = leaks.Hunt([token, url_token])
    hunt.text("reconcile with a malformed kubeconfig", printed)
    hunt.text("run with a malformed config file", run_printed)
    hunt.assert_clean()
