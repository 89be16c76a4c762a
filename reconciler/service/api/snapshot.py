"""The policies at one tip of the source branch, parsed once per tip and served from memory.

A `Tip` is immutable: readers on many threads share it while a write builds the next one.
`Parsed` keeps each file's parse by its blob id, so a new tip re-parses only the files whose
content changed. A policy's ETag is the blob id (hex) of its file at the tip.

Called by `service.api.store`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reconciler.service.api import bodies, model, policyfile

Key = tuple[str, str]
"""(resource, name): a policy's identity (its kind, by its resource, and its name)."""


def blob_id(data: bytes) -> str:
    """The git blob id (hex) of `data`, as `git hash-object` computes it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """One policy document at a tip: its file, place in the file, document and ETag."""

    resource: str
    name: str
    path: str
    number: int
    document: Mapping[str, Any]
    etag: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Tip:
    """Every served policy at one commit of the source branch."""

    sha: str
    data: Mapping[str, bytes]
    """Path → content of each file under `policies/`."""
    found: Mapping[Key, tuple[Found, ...]]
    served: Mapping[str, tuple[model.Policy, ...]] = field(default_factory=dict)

    @property
    def paths(self) -> tuple[str, ...]:
        """The files under `policies/`."""
        return tuple(self.data)

    def of(self, resource: str) -> tuple[model.Policy, ...]:
        """The policies of one resource, sorted by name, then file."""
        return self.served.get(resource, ())

    def located(self, resource: str, name: str) -> tuple[Found, ...]:
        """Every document of that resource and name (more than one is a repo to fix)."""
        return self.found.get((resource, name), ())

    def find(self, resource: str, name: str) -> tuple[model.Policy, ...]:
        """The served policies of that resource and name, in file order."""
        return tuple(_policy(f) for f in self.located(resource, name))


def _policy(found: Found) -> model.Policy:
    return model.Policy(
        resource=found.resource,
        name=found.name,
        document=bodies.body_of(found.resource, found.document),
        etag=found.etag,
        path=found.path,
    )


class Parsed:
    """Each policy file's parse by (path, blob id), kept for the files of the latest tip."""

    def __init__(self) -> None:
        self._files: dict[tuple[str, str], tuple[bytes, list[policyfile.Located]]] = {}

    def tip(self, sha: str, ids: Mapping[str, str], read: Callable[[str], bytes]) -> Tip:
        """The `Tip` of commit `sha` whose files under `policies/` have blob `ids`; `read`
        gives a blob's content by id, asked only for files not parsed before."""
        files: dict[tuple[str, str], tuple[bytes, list[policyfile.Located]]] = {}
        found: dict[Key, list[Found]] = {}
        for path, blob in sorted(ids.items()):
            known = self._files.get((path, blob))
            if known is None:
                data = read(blob)
                known = (data, policyfile.served(path, data))
            files[(path, blob)] = known
            for located in known[1]:
                key = (located.resource, located.name)
                found.setdefault(key, []).append(
                    Found(
                        resource=located.resource,
                        name=located.name,
                        path=path,
                        number=located.number,
                        document=located.document,
                        etag=blob,
                    )
                )
        self._files = files
        served: dict[str, list[model.Policy]] = {}
        for (resource, _name), entries in sorted(found.items()):
            served.setdefault(resource, []).extend(_policy(f) for f in entries)
        return Tip(
            sha=sha,
            data=MappingProxyType({path: data for (path, _), (data, _) in files.items()}),
            found=MappingProxyType({k: tuple(v) for k, v in found.items()}),
            served=MappingProxyType({k: tuple(v) for k, v in served.items()}),
        )
