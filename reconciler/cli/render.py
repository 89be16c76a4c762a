"""`dro render`'s writing side: the tree rendered on every core into a staged folder, and the
folders `render --clean` must never delete.

Called by `cli` for the `render` command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from reconciler import render
from reconciler.cli import outdir
from reconciler.domain import Decision, Spec
from reconciler.errors import DroError


def render_to(root: Path, spec: Spec, decisions: Sequence[Decision]) -> None:
    """Render the tree into `root` on every core.

    Rendering and writing tens of thousands of small files is CPU- and syscall-bound, so the
    decisions are split into interleaved shards, each rendered and written by a forked worker
    where the platform can fork. The union of the shards is exactly `render.tree`.
    """
    workers = min(os.cpu_count() or 1, max(1, len(decisions) // 50))
    if workers == 1 or not hasattr(os, "fork"):
        _render_shard(root, spec, decisions, (0, 1))
        return
    children = []
    for index in range(1, workers):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            code = 0
            try:
                _render_shard(root, spec, decisions, (index, workers))
            except Exception:
                code = 1
            os._exit(code)
        children.append(pid)
    _render_shard(root, spec, decisions, (0, workers))
    if any(os.waitpid(pid, 0)[1] != 0 for pid in children):
        raise DroError(f"rendering into {root} failed in a worker")


def _render_shard(
    root: Path, spec: Spec, decisions: Sequence[Decision], shard: tuple[int, int]
) -> None:
    files = render.tree(spec, decisions, shard=shard)
    outdir.write_files(root, sorted(files.items()))


def kept(args: argparse.Namespace) -> list[Path]:
    """The folders `render --clean` must never delete: the working directory and the source."""
    kept = [Path.cwd()]
    if args.path is not None or not args.repo:
        kept.append(args.path or Path("."))
    elif "://" not in args.repo and Path(args.repo).exists():
        kept.append(Path(args.repo))
    return kept
