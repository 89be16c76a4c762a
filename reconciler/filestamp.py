"""A file's stamp: what tells a process that a file it read has changed since.

A mounted Secret or ConfigMap is swapped by the kubelet behind a symlink, so the file at the
same path gets a new inode; an edit in place changes its size or modification time. The stamp
holds all three.

Called by `live.pool` and `service.api.keyfile`.
"""

from __future__ import annotations

import os
from pathlib import Path

Stamp = tuple[int, int, int]
"""A file's size, modification time (ns) and inode."""


def stamp(path: Path | None) -> Stamp | None:
    """The stamp of the file at `path` (a symlink followed); None without a path or when the
    file cannot be read."""
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ino)
