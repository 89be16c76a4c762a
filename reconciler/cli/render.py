"""`dro render`'s writing side: the tree rendered on every core into a staged folder, and the
folders `render --clean` must never delete.

Called by `cli`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reconciler import render
from reconciler.cli import outdir
from reconciler.domain import Decision, Observation, Spec
from reconciler.domain.forecast import Forecasts
from reconciler.errors import DroError


def _no_observations() -> Mapping[str, Observation]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """What a pass knows of its clusters beyond the source, as `render.tree` takes it: their
    observations, the suspended ones, those still filling, the last rendered files and the
    forecasts."""

    observations: Mapping[str, Observation] = field(default_factory=_no_observations)
    suspended: Collection[str] = ()
    filling: Collection[str] = ()
    kept: render.Kept | None = None
    forecasts: Forecasts = field(default_factory=dict)
    """The forecasts the decisions were made with (prediction on), for the status files."""


def render_to(
    root: Path, spec: Spec, decisions: Sequence[Decision], seen: Seen | None = None
) -> None:
    """Render the tree into `root` on every core: exactly the files `render.tree` gives for
    the same `seen` (the one assembly of the tree, which `pipeline.plan` commits too).

    Rendering and writing tens of thousands of small files is CPU- and syscall-bound, so the
    decisions are split into interleaved shards, each rendered and written by a forked worker
    where the platform can fork. The union of the shards is exactly `render.tree`.
    """
    seen = seen or Seen()
    workers = min(os.cpu_count() or 1, max(1, len(decisions) // 50))
    if workers == 1 or not hasattr(os, "fork"):
        _render_shard(root, spec, decisions, (0, 1), seen)
        return
    children = []
    for index in range(1, workers):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            code = 0
            try:
                _render_shard(root, spec, decisions, (index, workers), seen)
            except Exception:
                code = 1
            os._exit(code)
        children.append(pid)
    _render_shard(root, spec, decisions, (0, workers), seen)
    if any(os.waitpid(pid, 0)[1] != 0 for pid in children):
        raise DroError(f"rendering into {root} failed in a worker")


def _render_shard(
    root: Path, spec: Spec, decisions: Sequence[Decision], shard: tuple[int, int], seen: Seen
) -> None:
    files = render.tree(
        spec,
        decisions,
        observations=seen.observations,
        suspended=seen.suspended,
        filling=seen.filling,
        kept=seen.kept,
        shard=shard,
        forecasts=seen.forecasts,
    )
    outdir.write_files(root, sorted(files.items()))


def kept(args: argparse.Namespace) -> list[Path]:
    """The folders `render --clean` must never delete: the working directory and the source."""
    kept = [Path.cwd()]
    if args.path is not None or not args.repo:
        kept.append(args.path or Path("."))
    elif "://" not in args.repo and Path(args.repo).exists():
        kept.append(Path(args.repo))
    return kept
