"""`dro run`: the long-running service: a pass on a timer and on webhooks, leader election,
probes, metrics, the webhook, the web view (`web`) and (with a token key) the REST API on one
port, JSON logs on stdout.

Every setting comes from, in this order of precedence: the command-line flag, the environment
variable `DRO_<NAME>` (upper case, `-` → `_`), the config file (`--config` / `DRO_CONFIG`, a
YAML mapping keyed by the flag's name without dashes, e.g. `interval: 30s`), then the default.

Called by `cli`.
"""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

import structlog

from reconciler import service as runner
from reconciler import settings
from reconciler.cli import habits as clihabits
from reconciler.cli import report
from reconciler.errors import ClusterError, UsageError
from reconciler.git import repack
from reconciler.kube import client as kube
from reconciler.service import guarded, leader, listener, metrics, server, sharding
from reconciler.service.api import auth as api_auth
from reconciler.service.api import routes as api_routes
from reconciler.validate import guard
from reconciler.web import branchdata, pages
from reconciler.yamlio import plain

log = structlog.get_logger("dro")


OPTIONS = settings.pick(
    "repo",
    "ref",
    "output-branch",
    "state-dir",
    "git-credentials-file",
    "listen",
    "interval",
    "jitter",
    "ready-intervals",
    "http-header-timeout",
    "http-body-timeout",
    "http-max-connections",
    "webhook-concurrency",
    "webhook-secret-file",
    "tls-cert-file",
    "tls-key-file",
    "allow-plain-http",
    "api-jwks-file",
    "api-jwt-key-file",
    "api-audience",
    "api-issuer",
    "api-jwt-algorithms",
    "api-write-mode",
    "leader-elect",
    "lease-name",
    "shards",
    "lease-namespace",
    "lease-duration",
    "lease-kubeconfig",
    "kubeconfig",
    "sops-age-key-file",
    "in-cluster",
    "cluster-timeout",
    "parallel",
    "watch-clusters",
    "move-wait",
    "status-interval",
    "guard",
)
"""The settings of `dro run`, from the one table; each is also a key of the config file."""


def add_parser(commands: Any) -> None:
    """The `run` subcommand: every option defaults to None, resolved later by precedence."""
    run = commands.add_parser(
        "run",
        help="run as a service: passes on a timer and on webhooks, with probes and metrics",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--config", type=Path, default=None, help=f"{settings.CONFIG.help} [env DRO_CONFIG]"
    )
    # text, converted in `resolve` with the config file: a bad value names where it came from
    clihabits.add_settings(run, OPTIONS, convert=False)


def resolve(
    args: argparse.Namespace, environ: Mapping[str, str], config: Mapping[str, Any]
) -> dict[str, Any]:
    """Each option's value: flag, then environment, then config file, then default. Every one
    of them, the default included, goes through the option's conversion."""
    return settings.resolve(OPTIONS, vars(args), config=config, environ=environ)


def load_config(path: Path | None) -> dict[str, Any]:
    """The config file as a mapping (empty without one)."""
    if path is None:
        return {}
    try:
        document = plain.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UsageError(f"{path}: cannot read the config file: {reason}") from None
    except plain.PlainYamlError as error:
        # its line and problem only: PyYAML's own message quotes the line (a URL's token)
        raise UsageError(f"{path}: cannot read the config file: {error}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise UsageError(f"{path}: the config file must be a mapping of settings")
    known = {o.name for o in OPTIONS}
    unknown = sorted(set(document) - known)
    if unknown:
        raise UsageError(f"{path}: unknown settings {', '.join(unknown)}")
    return document


def _web(values: Mapping[str, Any], where: settings.Settings, tls: bool) -> pages.Web:
    """The web view: the output branch of the cache the passes keep, behind the REST API's
    tokens when those are configured."""
    opened = branchdata.cache_opener(str(where.repo), where.state_dir)
    reader = branchdata.Reader(opened, where.output_branch)
    return pages.view(reader, api_auth.from_settings(values), tls=tls)


def run(args: argparse.Namespace, _hook: Any) -> int:
    """Serve until SIGTERM or SIGINT; 1 when the settings do not allow starting."""
    config = load_config(settings.config_path(args.config))
    values = settings.resolve(OPTIONS, vars(args), config=config)
    # a service's events are its output: on stdout, info and up, JSON unless asked otherwise
    report.configure_logging(
        verbose=not args.quiet, stream=sys.stdout, log_format=args.log_format or "json"
    )
    if not values["repo"]:
        raise UsageError("dro run needs --repo (or DRO_REPO, or repo: in the config file)")
    host, _, port = str(values["listen"]).rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--listen {values['listen']}: expected ADDR:PORT")
    tls = _tls(values)
    where = _settings(values)
    api = api_routes.build(values, where)
    refusal = listener.plain_http_refusal(
        host,
        tls is not None,
        api_enabled=api is not None,
        allow_plain_http=values["allow_plain_http"],
    )
    if refusal is not None:
        raise UsageError(refusal)
    repack.defer()  # a cache's packs are merged after a pass, never during one
    loop = runner.Runner(
        where,
        runner.RunOptions(
            interval=values["interval"],
            jitter=values["jitter"],
            ready_intervals=values["ready_intervals"],
        ),
        metrics.Metrics(),
    )
    elector, member = _elections(values, loop)
    if elector is None:
        loop.leading.set()
        loop.metrics.leader.set(1)
    secret = _secret(values["webhook_secret_file"])
    web = _web(values, where, tls is not None)
    try:
        http = server.Server(
            loop,
            host=host,
            port=int(port),
            webhook_secret=secret,
            limits=_limits(values),
            max_webhooks=values["webhook_concurrency"],
            tls=tls,
            routes=[*(api or ()), *web.routes()],
            not_found=web.not_found,
        )
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise UsageError("--tls-key-file: the key does not match --tls-cert-file") from None
        raise UsageError(f"--tls-cert-file, --tls-key-file: {error}") from None
    except OSError as error:
        # a busy or forbidden port is the operator's to fix: one line, no traceback
        raise UsageError(f"--listen {values['listen']}: {error.strerror or error}") from None

    def abandoned() -> None:
        _leave(elector, member)  # release the Leases: others take over at once
        http.close()

    _on_signals(loop, abandoned)
    try:
        http.start()
    except OSError as error:
        raise UsageError(f"--listen {values['listen']}: {error}") from None
    for started in (elector, member):
        if started is not None:
            started.start()
    try:
        loop.loop()
    finally:
        _leave(elector, member)
        http.close()
    return 0


def _elections(
    values: Mapping[str, Any], loop: runner.Runner
) -> tuple[leader.LeaderLoop | None, sharding.Sharding | None]:
    """The leader election (unless `--leader-elect=false`) and, with `--shards auto`, the
    membership; UsageError when they cannot work."""
    if values["shards"] == "auto" and not values["leader_elect"]:
        raise UsageError("--shards auto needs leader election: drop --leader-elect=false")
    elector = _elector(values, loop) if values["leader_elect"] else None
    member = _member(values, loop, elector) if values["shards"] == "auto" else None
    return elector, member


def _leave(elector: leader.LeaderLoop | None, member: sharding.Sharding | None) -> None:
    """Release the leader's Lease and delete the member's, so others take over at once."""
    if elector is not None:
        elector.stop()
    if member is not None:
        member.stop()


def _tls(values: Mapping[str, Any]) -> listener.Tls | None:
    """The certificate and key to serve HTTPS with; None for plain HTTP; UsageError when
    only one of the two is set."""
    cert, key = values["tls_cert_file"], values["tls_key_file"]
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        given, missing = ("cert", "key") if key is None else ("key", "cert")
        raise UsageError(f"--tls-{given}-file needs --tls-{missing}-file too")
    for name, file, marker in (("cert", cert, "CERTIFICATE-----"), ("key", key, "KEY-----")):
        try:
            text = file.read_bytes()[:1_000_000].decode("ascii", errors="replace")
        except OSError as error:
            raise UsageError(f"--tls-{name}-file {file}: {error.strerror or error}") from None
        if f"-----BEGIN {marker}" not in text and f" {marker}" not in text:
            what = "certificate" if name == "cert" else "private key"
            raise UsageError(f"--tls-{name}-file {file}: not a PEM {what}")
        if name == "key" and "ENCRYPTED" in text:
            # OpenSSL would ask for its passphrase on the terminal
            raise UsageError(f"--tls-key-file {file}: an encrypted key; mount it unencrypted")
    return listener.Tls(cert_file=cert, key_file=key)


def _limits(values: Mapping[str, Any]) -> guarded.Limits:
    """The HTTP limits, or UsageError naming the one that cannot work."""
    for name in ("http-header-timeout", "http-body-timeout", "http-max-connections"):
        if values[name.replace("-", "_")] <= 0:
            raise UsageError(f"--{name} must be greater than zero")
    if values["webhook_concurrency"] < 1:
        raise UsageError("--webhook-concurrency must be at least 1")
    return guarded.Limits(
        header_timeout=values["http_header_timeout"],
        body_timeout=values["http_body_timeout"],
        max_connections=values["http_max_connections"],
    )


def _settings(values: Mapping[str, Any]) -> settings.Settings:
    kubeconfig = values["kubeconfig"]
    if kubeconfig is not None and not kubeconfig.exists():
        raise UsageError(f"--kubeconfig {kubeconfig}: no such file or directory")
    if kubeconfig is not None and kubeconfig.is_dir() and not _has_files(kubeconfig):
        # an optional Secret mounted empty: commit only, as without --kubeconfig
        log.warning("kubeconfigs_empty", path=str(kubeconfig), effect="apply skipped")
        kubeconfig = None
    return settings.Settings(
        repo=values["repo"],
        ref=values["ref"],
        output_branch=values["output_branch"],
        state_dir=values["state_dir"],
        credentials_file=values["git_credentials_file"],
        kubeconfig=kubeconfig,
        sops_age_key_file=values["sops_age_key_file"],
        in_cluster=values["in_cluster"],
        cluster_timeout=values["cluster_timeout"],
        parallel=values["parallel"],
        watch_clusters=values["watch_clusters"],
        move_wait=values["move_wait"],
        status_interval=values["status_interval"],
        guard=values["guard"] or guard.BUILTIN,
        api_write_mode=values["api_write_mode"],
    )


def _has_files(folder: Path) -> bool:
    return any(p.is_file() and not p.name.startswith(".") for p in folder.iterdir())


def _lease_connection(values: Mapping[str, Any]) -> tuple[kube.Connection, leader.LeaseConfig]:
    """A connection to the Leases' cluster and the leader's Lease, or UsageError when it
    cannot reach one."""
    namespace = values["lease_namespace"] or leader.pod_namespace()
    try:
        if namespace is None:
            raise ClusterError("lease", "no namespace: not running in a pod")
        # requests must end well within the renew deadline, or a hung API keeps a stale leader
        timeout = min(2.0, values["lease_duration"] / 5)
        connection = kube.connect(
            "lease", context=None, kubeconfig=values["lease_kubeconfig"], timeout=timeout
        )
    except ClusterError as error:
        raise UsageError(
            f"leader election needs in-cluster credentials ({error}); outside a cluster, pass "
            "--leader-elect=false (one replica only) or --lease-kubeconfig PATH"
        ) from error
    if values["lease_duration"] < 2:
        raise UsageError("--lease-duration must be at least 2s")
    # client-go's proportions: 15s lease, 10s renew deadline, 2s between attempts
    config = leader.LeaseConfig(
        namespace=namespace,
        name=values["lease_name"],
        identity=leader.default_identity(),
        lease_duration=values["lease_duration"],
        renew_deadline=values["lease_duration"] * 2 / 3,
        retry_period=values["lease_duration"] / 7.5,
    )
    return connection, config


def _elector(values: Mapping[str, Any], loop: runner.Runner) -> leader.LeaderLoop:
    """The leader election, or UsageError when it cannot reach a Lease. Sharded, the leader
    schedules and commits, and every member runs passes (`_member`)."""
    connection, config = _lease_connection(values)
    sharded = values["shards"] == "auto"

    def started() -> None:
        if not sharded:
            loop.leading.set()
        loop.metrics.leader.set(1)
        loop.trigger("became leader")

    def stopped() -> None:
        if not sharded:
            loop.leading.clear()
        loop.metrics.leader.set(0)

    def requested() -> None:
        loop.trigger("a follower received a webhook")

    def committed() -> None:
        loop.trigger("the leader committed a new output", forward=False)

    elector = leader.Elector(connection, config)
    loop.forward = elector.request_pass
    leading = leader.LeaderLoop(
        elector,
        on_started=started,
        on_stopped=stopped,
        on_requested=requested,
        on_committed=committed if sharded else None,
    )
    loop.fence = leading  # every write of a pass checks the renew deadline
    return leading


def _member(
    values: Mapping[str, Any], loop: runner.Runner, elected: leader.LeaderLoop | None
) -> sharding.Sharding:
    """This replica's membership (`--shards auto`): while it holds its member Lease, it runs
    passes on the clusters it owns (`service.sharding`)."""
    assert elected is not None
    connection, config = _lease_connection(values)
    fresh = values["interval"] * max(2.0, values["ready_intervals"]) + values["lease_duration"]
    return sharding.Sharding.joining(
        loop, connection=connection, config=config, elected=elected, fresh=fresh
    )


def _secret(path: Path | None) -> bytes | None:
    if path is None:
        return None
    if not path.exists():  # an optional Secret that is not there: no webhooks
        log.warning("webhook_disabled", reason=f"{path} does not exist")
        return None
    try:
        secret = path.read_bytes().strip()
    except OSError as error:
        raise UsageError(f"--webhook-secret-file {path}: {error}") from error
    if not secret:
        raise UsageError(f"--webhook-secret-file {path}: the file is empty")
    return secret


def _on_signals(loop: runner.Runner, abandoned: Callable[[], None]) -> None:
    """SIGTERM and SIGINT stop the loop. A pass that has written nothing yet is abandoned at
    once (its reads of slow clusters are not waited for); one that has committed finishes.

    The handler itself only writes a byte to a pipe: a handler runs in the middle of whatever
    the main thread was doing, and taking a lock there (logging, `Event.set`) can deadlock
    against the same lock held below it. A watcher thread does the work."""
    read_end, write_end = os.pipe()

    def note(signum: int, _frame: FrameType | None) -> None:
        os.write(write_end, bytes([signum]))

    def watch() -> None:
        signum = os.read(read_end, 1)[0]  # later signals change nothing
        log.info("shutting_down", signal=signal.Signals(signum).name)
        loop.shutdown()
        if loop.abandon():
            abandoned()
            sys.stdout.flush()
            os._exit(0)

    threading.Thread(target=watch, name="dro-signals", daemon=True).start()
    signal.signal(signal.SIGTERM, note)
    signal.signal(signal.SIGINT, note)
