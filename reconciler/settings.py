"""Operational settings: where the source is, where state and output go, who commits.

Scheduling settings live in the source repo's `dro.yaml`; these are the operator's and come from
flags, then environment variables (`DRO_*`), then defaults, in that order of precedence. A
committer therefore cannot change them.

State and caches (bare git caches of remote repos) go to the XDG cache directory,
`$XDG_CACHE_HOME/dro`, else `~/.cache/dro`, never to the working directory; the container image
sets `DRO_STATE_DIR=/var/lib/dro`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.validate.guard import BUILTIN, Guard

DEFAULT_OUTPUT_BRANCH = "dro/rendered"


def default_state_dir() -> Path:
    """`$DRO_STATE_DIR`, else `$XDG_CACHE_HOME/dro`, else `~/.cache/dro` (the XDG Base
    Directory rule: a relative `XDG_CACHE_HOME` is ignored)."""
    configured = env("STATE_DIR")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "dro"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything a pass needs from its operator."""

    repo: str | None = None
    """A local path or URL of the source git repository; None reads `path` as plain files."""
    path: Path | None = None
    """A plain directory to read instead of a repository."""
    ref: str = "main"
    output_branch: str = DEFAULT_OUTPUT_BRANCH
    state_dir: Path = field(default_factory=default_state_dir)
    push: bool = True
    credentials_file: Path | None = None
    author_name: str = "dro"
    author_email: str = "dro@localhost"
    kubeconfig: Path | None = None
    """A kubeconfig file or a directory of them (a mounted Secret): with it, a pass observes
    and applies to the clusters; without it, it stops after the commit (offline)."""
    in_cluster: bool = False
    """Reach the clusters marked `kubeconfig.inCluster` with the pod's service account."""
    cluster_timeout: float = 10.0
    """Seconds each request to a cluster may take."""
    parallel: int = 8
    """Clusters observed and applied at once."""
    move_wait: float = 60.0
    """Seconds a pass waits for the new copies of a move to become Healthy."""
    status_interval: float = 600.0
    """A change to `status/` alone is committed at most this often, unless health or
    reachability changed."""
    guard: Guard = BUILTIN
    """The operator's ceiling on what the repo may place (`--guard`); dro.yaml may narrow it."""

    @property
    def online(self) -> bool:
        """Whether a pass observes and applies to clusters, not only commits."""
        return self.kubeconfig is not None or self.in_cluster


def env(name: str, default: str | None = None) -> str | None:
    """Read `DRO_<NAME>` from the environment, or return the default."""
    value = os.environ.get(f"DRO_{name}")
    return value if value not in (None, "") else default
