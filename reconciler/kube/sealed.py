"""SOPS-encrypted Secrets: how to recognise one, and what its `sops` metadata must hold.

A Secret encrypted by sops (`sops --encrypt --encrypted-regex '^(data|stringData)$' ...`) is a
Secret manifest with a top-level `sops:` mapping and `ENC[AES256_GCM,...]` strings in place of
its values. sops' MAC covers every value of the file in order, the plain ones too (labels,
annotations, the namespace), unless the file was encrypted with `--mac-only-encrypted`. So dro
changes nothing in such a file: it is rendered byte for byte as written, and the fields dro
would add (its label and placement annotation) are added only after sops decrypts it, at
apply, in memory.

`problems` checks the `sops` metadata for shape (version, mac, lastmodified, at least one key
group) and that the fields the API server and dro read before decryption (apiVersion,
metadata) are plain; an encrypted kind is no Secret, and the kind check reports it.
`without_metadata` is the object as the Kubernetes schema sees it: the encrypted strings are
strings, so the schema checks everything else. This module is pure.

Called by `live.folders`, `live.unseal`, `validate.references` and `validate.sealedcheck`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from reconciler import yamlio
from reconciler.kube import secrets

METADATA = "sops"
ENCRYPTED_PREFIX = "ENC["
KEY_GROUPS = ("age", "pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "key_groups")
"""The fields of `sops` metadata that hold the keys a data key is encrypted for."""
HOW = "encrypt it with: sops --encrypt --age AGE_RECIPIENT --encrypted-regex '^(data|stringData)$'"


def is_sealed(body: object) -> bool:
    """Whether `body` is a SOPS-encrypted Secret: a Secret with a top-level `sops` mapping."""
    return secrets.is_secret(body) and isinstance(body, Mapping) and METADATA in body


def is_encrypted(value: object) -> bool:
    """Whether a value is a sops ciphertext (`ENC[...]`)."""
    return isinstance(value, str) and value.startswith(ENCRYPTED_PREFIX) and value.endswith("]")


def without_metadata(body: Mapping[str, Any]) -> dict[str, Any]:
    """The object without its `sops` metadata: what the Kubernetes schema checks."""
    return {key: value for key, value in body.items() if key != METADATA}


def problems(body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(JSON pointer, message) for each thing wrong with an encrypted Secret before it is
    decrypted. No message holds a value of the Secret."""
    meta = body.get(METADATA)
    if not isinstance(meta, Mapping):
        yield f"/{METADATA}", "sops metadata must be a mapping"
        return
    for field in ("version", "mac", "lastmodified"):
        if not isinstance(meta.get(field), str) or not meta.get(field):
            yield (
                f"/{METADATA}/{field}" if field in meta else f"/{METADATA}",
                (f"sops metadata has no {field}: the file was not written by sops; {HOW}"),
            )
    if isinstance(meta.get("mac"), str) and meta["mac"] and not is_encrypted(meta["mac"]):
        yield f"/{METADATA}/mac", "sops mac must be an ENC[...] string, as sops writes it"
    groups = [name for name in KEY_GROUPS if isinstance(meta.get(name), list) and meta[name]]
    if not groups:
        yield (
            f"/{METADATA}",
            (
                f"sops metadata names no key (one of {', '.join(KEY_GROUPS)}): "
                "nothing can decrypt it"
            ),
        )
    if is_encrypted(body.get("apiVersion")):
        yield "/apiVersion", f"apiVersion is encrypted: dro must read it; {HOW}"
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        yield from _plain_metadata(metadata, "/metadata")
        if not metadata.get("namespace"):
            yield (
                "/metadata",
                (
                    "an encrypted Secret must name its namespace: dro cannot add one without "
                    "breaking the sops MAC; add metadata.namespace and encrypt it again"
                ),
            )


def _plain_metadata(node: object, pointer: str) -> Iterator[tuple[str, str]]:
    if is_encrypted(node):
        yield pointer, f"metadata is encrypted: dro and the API server must read it; {HOW}"
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _plain_metadata(value, f"{pointer}/{yamlio.escape_pointer_token(str(key))}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _plain_metadata(value, f"{pointer}/{index}")
