"""The path rules of the trees dro writes: short enough components, and none git refuses.

Which paths the output branch holds is its layout, `branch.paths`; this module, below it, only
says what makes one component safe. Called by `domain.base` (a key's file stem), `git.gitrepo`
(the committer's check) and `cli.outdir` (the `dro render --out` writer).

Every component of a path dro writes (on the output branch, or under `dro render --out`) is at
most `MAX_COMPONENT_BYTES` bytes, the file-name limit of Linux, macOS and Windows file systems.
A file stem that would be longer keeps its first bytes and ends in `-` and 16 hex digits of the
SHA-256 of the whole stem, so it stays readable, unique and the same on every pass; the full name
is always inside the file.

`unsafe_component` is git's own list (fsck and `verify_path` with `core.protectNTFS` and
`core.protectHFS`): an empty name, `.`, `..`, `.git` in any case and its NTFS (`.git.`,
`.git `, `.git::$INDEX_ALLOCATION`, `git~1`) and HFS+ (ignorable Unicode code points)
spellings, the same for `.gitmodules`, and `/`, `\\` or NUL inside. Names are checked at
validate, so these can only come from a bug: the writers raise.

Called by `branch.paths`, `branch.status`, `cli.outdir`, `domain.base` and `git.trees`.
"""

from __future__ import annotations

import hashlib
import re

MAX_COMPONENT_BYTES = 255
HASH_DIGITS = 16
YAML = ".yaml"

_PLAIN = re.compile(r"[a-z0-9_][a-z0-9_.:-]{0,254}")
"""The common case, safe at a glance: it cannot spell .git, and it is ASCII (bytes = chars)."""
_HFS_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
_NTFS_DOTGIT = re.compile(r"(\.git|git~1)[. ]*(:.*)?", re.IGNORECASE | re.DOTALL)
_NTFS_GITMODULES = re.compile(
    r"(\.gitmodules|gitmod~[1-4]|gi7eba~[1-4])[. ]*(:.*)?", re.IGNORECASE | re.DOTALL
)


def stem(readable: str, *, suffix: str = YAML) -> str:
    """`readable`, or a shortened form of it, such that `stem + suffix` fits one component."""
    limit = MAX_COMPONENT_BYTES - len(suffix.encode())
    if len(readable.encode()) <= limit:
        return readable
    digest = hashlib.sha256(readable.encode()).hexdigest()[:HASH_DIGITS]
    keep = readable.encode()[: limit - HASH_DIGITS - 1].decode("utf-8", errors="ignore")
    return f"{keep}-{digest}"


def unsafe_component(name: str) -> str | None:
    """Why git (fsck, checkout) would refuse `name` as one path component, or None."""
    if _PLAIN.fullmatch(name):
        return None
    if name in ("", ".", ".."):
        return "is empty, '.' or '..'"
    if "/" in name or "\x00" in name or "\\" in name:
        return "contains '/', '\\' or NUL"
    plain = _HFS_IGNORABLE.sub("", name).lower()
    if _NTFS_DOTGIT.fullmatch(name) or plain == ".git":
        return "is .git (or a spelling of it that NTFS or HFS+ treat as .git)"
    if _NTFS_GITMODULES.fullmatch(name) or plain == ".gitmodules":
        return "is .gitmodules (or a spelling of it), which git reads as submodule settings"
    if len(name.encode()) > MAX_COMPONENT_BYTES:
        return f"is longer than {MAX_COMPONENT_BYTES} bytes"
    return None


def check(path: str) -> None:
    """Raise ValueError unless every component of the relative `path` is safe to write."""
    for component in path.split("/"):
        reason = unsafe_component(component)
        if reason:
            raise ValueError(f"refusing to write the path {path!r}: a component {reason}")
