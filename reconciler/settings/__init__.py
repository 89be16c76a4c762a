"""Operational settings: the one table of the operator's settings, and the only reader of the
environment.

Scheduling settings live in the source repo's `dro.yaml`; these are the operator's, so a
committer cannot change them. Each `Setting` of `TABLE` names its flag (`--state-dir`), its
environment variable (`DRO_STATE_DIR`), its key in `dro run`'s config file (`state-dir`), its
conversion, its default and its help. A value comes from, in this order of precedence: the flag,
the environment, the config file (`dro run` only), then the default; every one of them, the
default included, goes through the setting's one conversion, so a default can never have
another type than a flag gives.

`dro run` (`cli/run.py`) and the one-pass commands (`cli/__init__.py`, `cli/plan.py`) build
their flags from the table (`cli/habits.add_settings`) and resolve them here (`resolve`); the
pipeline and the service read the resulting `Settings`. Other code asks this module for what the
environment says (`git_credentials`, `pod_name`, `terminal_columns`) instead of reading it.

State and caches (bare git caches of remote repos) go to the XDG cache directory,
`$XDG_CACHE_HOME/dro`, else `~/.cache/dro`, never to the working directory; the container image
sets `DRO_STATE_DIR=/var/lib/dro`.

Called by 18 modules, among them `cli`, `laststate`, `pipeline`, `review.tables`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.domain.credentials import Credentials
from reconciler.errors import UsageError
from reconciler.settings.values import (
    fraction,
    guard,
    names,
    optional_path,
    parse_bool,
    path,
    seconds,
    shards_mode,
    text,
    whole,
    write_mode,
)
from reconciler.validate.guard import BUILTIN, FLAG_HELP, Guard

DEFAULT_OUTPUT_BRANCH = "dro/rendered"
LOG_FORMATS = ("console", "json")


def sops_age_key_default() -> str | None:
    """`SOPS_AGE_KEY_FILE`, the variable sops itself reads, when `--sops-age-key-file` and
    `DRO_SOPS_AGE_KEY_FILE` are not given; None when it is unset."""
    return os.environ.get("SOPS_AGE_KEY_FILE") or None


def xdg_state_dir() -> str:
    """`$XDG_CACHE_HOME/dro`, else `~/.cache/dro` (the XDG Base Directory rule: a relative
    `XDG_CACHE_HOME` is ignored): the default of `--state-dir`."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return str(base / "dro")


@dataclass(frozen=True, slots=True)
class Setting:
    """One operator setting: its flag, environment variable, config-file key, conversion,
    default and help.

    The default is written as a user would write the flag (`60s`, not 60.0) and goes through
    the same `convert` as a flag's value. A callable default is read when the command starts
    (the XDG cache directory depends on the environment). `convert` raises ValueError on a bad
    value; with `at_parse=False` it may raise other errors (a guard file's problems, with their
    lines), so a flag's text is converted after parsing, where those are reported."""

    name: str
    default: str | Callable[[], str | None] | None
    convert: Callable[[Any], Any]
    help: str
    metavar: str | None = None
    at_parse: bool = True

    @property
    def shown_default(self) -> str | None:
        """The default as the help shows it and as `convert` reads it."""
        return self.default() if callable(self.default) else self.default

    @property
    def env(self) -> str:
        """The environment variable read after the flag: `DRO_<NAME>`, `-` → `_`."""
        return "DRO_" + self.name.upper().replace("-", "_")

    @property
    def dest(self) -> str:
        """The attribute name on the parsed arguments and the key of `resolve`'s answer."""
        return self.name.replace("-", "_")

    @property
    def is_bool(self) -> bool:
        """Whether the flag works bare (`--in-cluster` means true)."""
        return self.convert is parse_bool

    def value(self, raw: Any, origin: str) -> Any:
        """`raw` converted; a ValueError is a UsageError naming where `raw` came from."""
        try:
            return self.convert(raw)
        except ValueError as error:
            raise UsageError(f"{origin}: {error}") from error


_ENTRIES = (
    Setting(
        "repo",
        None,
        text,
        "the source repository: a local path or URL (file://, git://, https://)",
    ),
    Setting("ref", "main", text, "the branch, tag or commit to read"),
    Setting(
        "output-branch",
        DEFAULT_OUTPUT_BRANCH,
        text,
        "the branch of rendered trees and decisions",
        metavar="BRANCH",
    ),
    Setting(
        "state-dir",
        xdg_state_dir,
        path,
        "where dro keeps its bare git caches; the default follows $XDG_CACHE_HOME",
        metavar="DIR",
    ),
    Setting(
        "git-credentials-file",
        None,
        path,
        "file with https credentials: 'username:password' or a token (else DRO_GIT_USERNAME, "
        "DRO_GIT_PASSWORD, DRO_GIT_TOKEN)",
    ),
    Setting(
        "guard",
        None,
        guard,
        FLAG_HELP + "; in dro run's config file, a file name or the guard's mapping itself",
        metavar="FILE",
        at_parse=False,
    ),
    Setting(
        "api-write-mode",
        "direct",
        write_mode,
        "where the REST API pushes each write: direct (to --ref, fast-forward only) or "
        "branch (a new branch dro-api/RESOURCE/NAME/SHA, for review)",
        metavar="MODE",
    ),
    Setting(
        "listen",
        "0.0.0.0:8080",
        text,
        "ADDR:PORT for the web view (/), the REST API, /healthz /readyz /metrics /webhook",
    ),
    Setting("interval", "60s", seconds, "time between passes, e.g. 60s or 5m"),
    Setting("jitter", "0.1", fraction, "up to this fraction of the interval is added at random"),
    Setting(
        "ready-intervals",
        "3",
        fraction,
        "/readyz fails unless the last pass succeeded within this many intervals",
    ),
    Setting("http-header-timeout", "10s", seconds, "a client's time to send its request headers"),
    Setting(
        "http-body-timeout",
        "30s",
        seconds,
        "a client's time to send its body, then to take the answer",
    ),
    Setting("http-max-connections", "128", whole, "connections open at once on --listen"),
    Setting("webhook-concurrency", "4", whole, "webhook bodies (25 MB at most) read at once"),
    Setting("tls-cert-file", None, path, "PEM certificate (chain) to serve HTTPS on --listen"),
    Setting("tls-key-file", None, path, "PEM private key of --tls-cert-file"),
    Setting(
        "allow-plain-http",
        "false",
        parse_bool,
        "serve the REST API over plain HTTP on a non-loopback address (TLS ends before dro)",
    ),
    Setting("webhook-secret-file", None, path, "the shared secret of GitHub/GitLab webhooks"),
    Setting(
        "api-jwks-file",
        None,
        path,
        "turns the REST API on: a JWKS (JSON Web Key Set) file of the keys that sign its "
        "Bearer tokens",
        metavar="FILE",
    ),
    Setting(
        "api-jwt-key-file",
        None,
        path,
        "turns the REST API on: a PEM public key that signs its Bearer tokens (an HMAC "
        "secret only with --api-jwt-algorithms HS256 given)",
        metavar="FILE",
    ),
    Setting(
        "api-audience",
        None,
        text,
        "the REST API's tokens must carry this audience (aud); required when the API is on",
    ),
    Setting("api-issuer", None, text, "the REST API's tokens must carry this issuer (iss)"),
    Setting(
        "api-jwt-algorithms",
        None,
        names,
        "the signature algorithms the REST API accepts, e.g. RS256,ES256 (default: those of "
        "the key's type)",
        metavar="ALGS",
    ),
    Setting(
        "leader-elect",
        "true",
        parse_bool,
        "hold a Lease so one replica runs passes (true|false; bare means true)",
    ),
    Setting("lease-name", "dro", text, "the Lease's name"),
    Setting(
        "shards",
        "off",
        shards_mode,
        "auto: every replica observes and applies the clusters it owns (a Lease per member, "
        "consistent hashing with bounded loads) and the leader schedules and commits; off: "
        "the leader does everything",
        metavar="auto|off",
    ),
    Setting("lease-namespace", None, text, "the Lease's namespace (default: the pod's)"),
    Setting("lease-duration", "15s", seconds, "how long a Lease is valid without renewal"),
    Setting(
        "lease-kubeconfig",
        None,
        path,
        "reach the Lease through this kubeconfig, not "
        "the pod's service account (for running outside a cluster)",
    ),
    Setting(
        "kubeconfig",
        None,
        path,
        "a kubeconfig file, or a directory of them (a mounted Secret): observe and apply; each "
        "Cluster's spec.kubeconfig.context names its context. Without it a pass stops after "
        "the commit",
    ),
    Setting(
        "sops-age-key-file",
        sops_age_key_default,
        optional_path,
        "the age key (a mounted Secret) that sops decrypts SOPS-encrypted Secrets with, at "
        "apply only; by default $SOPS_AGE_KEY_FILE",
    ),
    Setting(
        "in-cluster",
        "false",
        parse_bool,
        "reach clusters marked spec.kubeconfig.inCluster with the pod's service account "
        "(bare means true)",
    ),
    Setting("cluster-timeout", "10s", seconds, "per request to a cluster"),
    Setting("parallel", "8", whole, "clusters observed and applied at once"),
    Setting(
        "watch-clusters",
        "false",
        parse_bool,
        "keep each cluster's lists (nodes, pods, applied kinds) current by watches between "
        "passes instead of listing them at every pass: a pass then sees changes as far as "
        "they were delivered (bare means true)",
    ),
    Setting(
        "move-wait",
        "60s",
        seconds,
        "how long to wait for a move's new copies to become Healthy before the old ones "
        "retire in a second pass; after that, the next pass resumes",
    ),
    Setting(
        "status-interval",
        "10m",
        seconds,
        "commit a change to status/ alone at most this often, unless health or "
        "reachability changed",
    ),
)

TABLE: Mapping[str, Setting] = {entry.name: entry for entry in _ENTRIES}
"""Every operator setting by its flag's name (without dashes)."""

CONFIG = Setting("config", None, path, "a YAML file of settings")
"""`--config` / `DRO_CONFIG`: where `dro run`'s config file is; not a key of that file."""

LOG_FORMAT_ENV = "DRO_LOG_FORMAT"
"""The global `--log-format`'s environment variable."""


def pick(*names: str) -> tuple[Setting, ...]:
    """The settings of one command, in the order its help lists them."""
    return tuple(TABLE[name] for name in names)


def resolve(
    table: Sequence[Setting],
    flags: Mapping[str, Any],
    *,
    config: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    flags_converted: bool = False,
) -> dict[str, Any]:
    """Each setting's value by its `dest`: the flag, then the environment (`os.environ` unless
    given), then the config file, then the default. Every one of them, the default included,
    goes through the setting's conversion; with `flags_converted` the parser has already
    converted the flags of the settings that convert `at_parse`."""
    environ = os.environ if environ is None else environ
    config = config or {}
    values: dict[str, Any] = {}
    for setting in table:
        raw, origin = flags.get(setting.dest), f"--{setting.name}"
        if raw is not None and flags_converted and setting.at_parse:
            values[setting.dest] = raw
            continue
        if raw is None and environ.get(setting.env):
            raw, origin = environ[setting.env], setting.env
        if raw is None and config.get(setting.name) is not None:
            raw, origin = config[setting.name], f"{setting.name} in the config file"
        if raw is None:
            raw, origin = setting.shown_default, f"the default of --{setting.name}"
        values[setting.dest] = None if raw is None else setting.value(raw, origin)
    return values


def config_path(flag: Path | None) -> Path | None:
    """`--config`, else `DRO_CONFIG`, else None."""
    found: Path | None = resolve((CONFIG,), {CONFIG.dest: flag}, flags_converted=True)["config"]
    return found


def log_format(flag: str | None) -> str | None:
    """`--log-format`, else `DRO_LOG_FORMAT`, else None (the command's own default). A value
    other than console or json is a UsageError naming the variable."""
    if flag is not None:
        return flag
    given = os.environ.get(LOG_FORMAT_ENV) or None
    if given is not None and given not in LOG_FORMATS:
        raise UsageError(f"{LOG_FORMAT_ENV}={given}: expected console or json")
    return given


def default_state_dir() -> Path:
    """`$DRO_STATE_DIR`, else `$XDG_CACHE_HOME/dro`, else `~/.cache/dro`: `--state-dir` when
    no flag gives it."""
    state_dir: Path = resolve(pick("state-dir"), {})["state_dir"]
    return state_dir


def git_credentials() -> Credentials | None:
    """https credentials from `DRO_GIT_TOKEN` (with `DRO_GIT_USERNAME`), or from
    `DRO_GIT_USERNAME` and `DRO_GIT_PASSWORD`; None when none is set."""
    token = os.environ.get("DRO_GIT_TOKEN")
    user, password = os.environ.get("DRO_GIT_USERNAME"), os.environ.get("DRO_GIT_PASSWORD")
    if token:
        return Credentials(username=user, token=token)
    if user or password:
        return Credentials(username=user, password=password)
    return None


def pod_name() -> str | None:
    """`POD_NAME`, as the Deployment's downward API sets it; None outside a pod."""
    return os.environ.get("POD_NAME") or None


def pod_namespace() -> str | None:
    """`POD_NAMESPACE`, as the Deployment's downward API sets it; None outside a pod."""
    return os.environ.get("POD_NAMESPACE") or None


def terminal_columns() -> int | None:
    """`COLUMNS` when it is a positive whole number (rich and kubectl read it first)."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


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
    environment_credentials: Credentials | None = field(default_factory=git_credentials)
    """`DRO_GIT_*`, read when the settings were made: used without `credentials_file`."""
    author_name: str = "dro"
    author_email: str = "dro@localhost"
    kubeconfig: Path | None = None
    """A kubeconfig file or a directory of them (a mounted Secret): with it, a pass observes
    and applies to the clusters; without it, it stops after the commit (offline)."""
    sops_age_key_file: Path | None = None
    """The age key sops decrypts SOPS-encrypted Secrets with, at apply; passed to sops alone."""
    in_cluster: bool = False
    """Reach the clusters marked `kubeconfig.inCluster` with the pod's service account."""
    cluster_timeout: float = 10.0
    """Seconds each request to a cluster may take."""
    parallel: int = 8
    """Clusters observed and applied at once."""
    watch_clusters: bool = False
    """Keep each cluster's lists current by watches between passes (`kube.watchcache`),
    in a process that keeps its connections (`dro run`)."""
    move_wait: float = 60.0
    """Seconds a pass waits for the new copies of a move to become Healthy."""
    status_interval: float = 600.0
    """A change to `status/` alone is committed at most this often, unless health or
    reachability changed."""
    api_write_mode: str = "direct"
    """Where the REST API pushes its writes: `direct` (the source branch) or `branch`."""
    guard: Guard = BUILTIN
    """The operator's ceiling on what the repo may place (`--guard`); dro.yaml may narrow it."""

    @property
    def online(self) -> bool:
        """Whether a pass observes and applies to clusters, not only commits."""
        return self.kubeconfig is not None or self.in_cluster
