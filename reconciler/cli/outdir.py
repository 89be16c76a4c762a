"""The folder `dro render --out DIR` writes: checked first, filled aside, swapped in at the end.

- DIR is checked before anything is read or rendered. It may be missing or empty. A folder
  that holds something is replaced only with `--clean`, and only when dro made it: it holds the
  marker file `.dro-render` that every render writes. Even then dro never deletes the working
  directory or one of its ancestors, the source folder or one of its ancestors, or a folder
  holding `.git`; and DIR may not be a symbolic link.
- The tree is rendered into a new temporary folder beside DIR (same parent, so the same file
  system). Every path written is checked (`domain.paths`) and must resolve inside it.
- Only after the whole render succeeded is it put in place: renamed onto a missing or empty
  DIR; otherwise the old DIR is renamed aside, the new one renamed in, and the old one deleted.
  A failure leaves DIR as it was and removes the temporary folder.

Called by `cli` and `cli.render`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from reconciler.domain import paths
from reconciler.errors import DroError, UsageError

MARKER = ".dro-render"
MARKER_TEXT = (
    b"This folder was written by `dro render`. `dro render --clean` replaces only folders\n"
    b"that hold this file.\n"
)


def check(out: Path, *, clean: bool, protected: Iterable[Path]) -> None:
    """Raise UsageError, with a one-line reason, unless rendering into `out` is safe.

    `protected` are the folders that must survive: the source and the working directory."""
    if out.is_symlink():
        raise UsageError(f"--out {out}: is a symbolic link; give the folder it points to")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if not out.exists() or not any(out.iterdir()):
        return
    if not clean:
        raise UsageError(f"--out {out}: directory is not empty (use --clean to replace it)")
    target = out.resolve()
    for keep in protected:
        kept = keep.resolve()
        if kept == target:
            raise UsageError(f"--out {out}: refusing to delete {_what(keep)}")
        if kept.is_relative_to(target):
            raise UsageError(f"--out {out}: refusing to delete an ancestor of {_what(keep)}")
    if (target / ".git").exists():
        raise UsageError(f"--out {out}: refusing to delete a folder that holds .git")
    if not (target / MARKER).is_file():
        raise UsageError(
            f"--out {out}: refusing to delete a folder that dro render did not make "
            f"(it has no {MARKER} file); remove it yourself or choose another folder"
        )


def _what(folder: Path) -> str:
    if folder.resolve() == Path.cwd().resolve():
        return "the working directory"
    return f"the source folder {folder}"


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A new temporary folder beside `out` to render into; put in place of `out` when the
    block succeeds, removed when it fails. `check` must have passed."""
    target = out.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.dro-", dir=target.parent))
    except OSError as error:
        raise UsageError(f"--out {out}: cannot create a folder beside it: {error}") from error
    try:
        (stage / MARKER).write_bytes(MARKER_TEXT)
        yield stage
        _swap(stage, target)
    except OSError as error:
        shutil.rmtree(stage, ignore_errors=True)
        raise DroError(f"--out {out}: writing the rendered tree failed: {error}") from error
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _swap(stage: Path, target: Path) -> None:
    """Put `stage` where `target` is: renames only, on one file system."""
    stage.chmod(0o777 & ~_umask())
    if not target.exists():
        stage.rename(target)
        return
    if not any(target.iterdir()):
        # keep the folder itself (a shell may stand in it): move the new entries into it
        for entry in sorted(stage.iterdir()):
            entry.rename(target / entry.name)
        stage.rmdir()
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    target.rename(retired / target.name)
    stage.rename(target)
    shutil.rmtree(retired)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_files(root: Path, items: Sequence[tuple[str, bytes]]) -> None:
    """Write relative path → bytes under `root` (a folder `staged` made, which nothing else
    writes into), refusing any path that is unsafe for git or whose folder resolves outside
    `root`: names are checked at validate, so either would be a bug."""
    base = os.path.realpath(root)
    for relative, _ in items:
        paths.check(relative)
    # every folder first, then the files: on ext4 that is several times faster than creating
    # each folder when its first file comes
    for folder in sorted({os.path.dirname(relative) for relative, _ in items}):
        where = os.path.join(base, folder)
        os.makedirs(where, exist_ok=True)
        if os.path.commonpath([base, os.path.realpath(where)]) != base:
            raise ValueError(f"refusing to write into {folder!r}: it resolves outside {root}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    for relative, data in items:
        handle = os.open(os.path.join(base, relative), flags, 0o644)
        try:
            os.write(handle, data)
        finally:
            os.close(handle)
