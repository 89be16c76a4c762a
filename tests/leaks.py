"""Leak hunting for tests: plant a unique value, then look for it in everything dro wrote.

    planted = leaks.plant("git-token")
    ... run dro with the value in a Secret, a credentials file, a kubeconfig ...
    hunt = leaks.Hunt([planted, ...])
    hunt.text("stdout of dro validate", out)
    hunt.folder(rendered, allowed=leaks.secret_manifests)
    hunt.git(state_dir / "repos" / "x.git", source_refs=("refs/remotes/origin/main",))
    hunt.assert_clean()

A value is found in any of its forms: as written, base64-encoded at any of the three byte
alignments (so it is found inside a longer base64 text too, as in a Secret's `data` or a
kubeconfig's `*-data`), hex, and percent- or JSON-escaped. Git repositories are searched
object by object (every object in the store, reachable or not, after decompression) and in
every other file under the git directory (config, FETCH_HEAD, reflogs).
"""

from __future__ import annotations

import base64
import secrets
import subprocess
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Planted:
    """One unique value and the byte patterns that betray it."""

    label: str
    value: str

    @property
    def forms(self) -> dict[str, bytes]:
        """Form name → bytes to search for."""
        raw = self.value.encode()
        found = {"as written": raw, "hex": raw.hex().encode()}
        found["percent-encoded"] = urllib.parse.quote(self.value, safe="").encode()
        for offset in range(3):
            # base64 of the value preceded by `offset` bytes: drop the characters that depend
            # on the bytes before it and after it, keep the ones only the value decides
            encoded = base64.b64encode(b"\0" * offset + raw)
            start = (offset * 8 + 5) // 6
            end = (offset + len(raw)) * 8 // 6
            found[f"base64 (alignment {offset})"] = encoded[start:end]
        return found

    @property
    def base64(self) -> str:
        """The value as a Secret's `data` holds it."""
        return base64.b64encode(self.value.encode()).decode()


def plant(label: str) -> Planted:
    """A value that occurs nowhere by chance: `label`, then 24 random hex digits."""
    return Planted(label=label, value=f"{label}-{secrets.token_hex(12)}")


@dataclass(frozen=True)
class Leak:
    """Where a planted value was found, and in which form."""

    where: str
    label: str
    form: str
    context: str

    def __str__(self) -> str:
        return f"{self.where}: {self.label} ({self.form}): …{self.context}…"


def _context(data: bytes, at: int, size: int) -> str:
    return data[max(0, at - 60) : at + size + 60].decode("utf-8", errors="replace")


@dataclass
class Hunt:
    """Everything searched so far, and every leak found."""

    planted: list[Planted]
    searched: list[str] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)

    def bytes(self, where: str, data: bytes) -> list[Leak]:
        """Search one piece of output; the leaks found in it."""
        self.searched.append(where)
        found = []
        for planted in self.planted:
            for form, pattern in planted.forms.items():
                at = data.find(pattern)
                if at >= 0:
                    found.append(Leak(where, planted.label, form, _context(data, at, len(pattern))))
                    break
        self.leaks += found
        return found

    def text(self, where: str, text: str) -> list[Leak]:
        """Search a piece of text output (stdout, stderr, a message)."""
        return self.bytes(where, text.encode("utf-8", errors="replace"))

    def folder(self, root: Path, *, allowed: Callable[[Path, bytes], bool] | None = None) -> None:
        """Search every file under `root`, except those `allowed(path, data)` accepts."""
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            data = path.read_bytes()
            if allowed is not None and allowed(path.relative_to(root), data):
                self.searched.append(f"{path} (allowed)")
                continue
            self.bytes(str(path), data)

    def git(self, git_dir: Path, *, source_refs: Iterable[str] = ()) -> None:
        """Search a git repository: every file of its git directory that is not an object,
        and every object, except the blobs of `source_refs` (the source itself, which holds
        the planted Secret) and of rendered Secret manifests (`secret_manifests`)."""
        for path in sorted(p for p in git_dir.rglob("*") if p.is_file()):
            if "objects" not in path.relative_to(git_dir).parts:
                self.bytes(str(path), path.read_bytes())
        allowed = _source_blobs(git_dir, source_refs) | _secret_manifest_blobs(git_dir)
        for oid, kind, data in _objects(git_dir):
            if kind == "blob" and oid in allowed:
                continue
            self.bytes(f"{git_dir} {kind} {oid}", data)

    def assert_clean(self) -> None:
        """Fail, listing every leak, when any planted value was found."""
        assert self.searched, "nothing was searched"
        assert not self.leaks, "planted values leaked:\n" + "\n".join(map(str, self.leaks))


def is_secret_manifest(data: bytes) -> bool:
    """Whether a file is one Kubernetes object of kind Secret (a rendered Secret manifest)."""
    if b"Secret" not in data:
        return False
    try:
        document = yaml.safe_load(data)
    except yaml.YAMLError:
        return False
    return isinstance(document, dict) and document.get("kind") == "Secret"


def secret_manifests(relative: Path, data: bytes) -> bool:
    """`Hunt.folder`'s filter for a rendered tree: a Secret's own manifest under clusters/,
    the one place its value must be, byte for byte."""
    return relative.parts[:1] == ("clusters",) and is_secret_manifest(data)


def _git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], input=data, capture_output=True, check=True
    )
    return done.stdout


def _objects(git_dir: Path) -> Iterable[tuple[str, str, bytes]]:
    """(oid, type, content) of every object in the store, loose or packed."""
    listing = _git(
        git_dir,
        "cat-file",
        "--batch-all-objects",
        "--unordered",
        "--batch-check=%(objectname) %(objecttype)",
    )
    kinds = dict(line.split() for line in listing.decode().splitlines())
    for oid, data in _read(git_dir, sorted(kinds)):
        yield oid, kinds[oid], data


def _source_blobs(git_dir: Path, refs: Iterable[str]) -> set[str]:
    """Every blob reachable from the source refs: the source's own files, every version."""
    wanted = [r for r in refs if _git_ok(git_dir, "rev-parse", "--verify", "--quiet", r)]
    if not wanted:
        return set()
    listing = _git(git_dir, "rev-list", "--objects", *wanted).decode()
    oids = [line.split()[0] for line in listing.splitlines()]
    kinds = _git(
        git_dir,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        data="\n".join(oids).encode(),
    ).decode()
    return {line.split()[0] for line in kinds.splitlines() if line.endswith(" blob")}


def _secret_manifest_blobs(git_dir: Path) -> set[str]:
    """The blobs of rendered Secret manifests (`clusters/**`) on every branch dro writes."""
    candidates: set[str] = set()
    refs = _git(git_dir, "for-each-ref", "--format=%(refname)").decode().split()
    commits = set(_git(git_dir, "rev-list", *refs).decode().split()) if refs else set()
    for commit in sorted(commits):
        tree = _git(git_dir, "ls-tree", "-r", commit, "--", "clusters").decode()
        candidates.update(line.split("\t", 1)[0].split()[2] for line in tree.splitlines())
    return {oid for oid, data in _read(git_dir, sorted(candidates)) if is_secret_manifest(data)}


def _read(git_dir: Path, oids: list[str]) -> Iterable[tuple[str, bytes]]:
    """(oid, content) of each object named, read in one `git cat-file --batch`."""
    if not oids:
        return
    stream = _git(git_dir, "cat-file", "--batch", data="\n".join(oids).encode() + b"\n")
    position = 0
    while position < len(stream):
        header_end = stream.index(b"\n", position)
        oid, _kind, size = stream[position:header_end].decode().split()
        start = header_end + 1
        yield oid, stream[start : start + int(size)]
        position = start + int(size) + 1


def _git_ok(git_dir: Path, *args: str) -> bool:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], check=False, capture_output=True)
    return done.returncode == 0
