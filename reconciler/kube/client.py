"""The one module that touches the official `kubernetes` client package.

It offers cluster access to the observe and apply stages: a `Connection` per cluster
(discovery, server-side apply, reads, deletes) with a timeout on every request; which file
holds each kubeconfig context is for `kube.contexts` to say. The client is imported only when
a cluster is reached, so commands that reach no cluster do not pay its ~0.4 s import
(`kube.quantity` loads Kubernetes' quantity parser alone).

Called by 14 modules, among them `cli.run`, `live`, `service.leader`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reconciler import redact
from reconciler.domain import fence as fencing
from reconciler.errors import ClusterError
from reconciler.kube import messages, watchcache
from reconciler.kube.body import Body

# --- cluster access -------------------------------------------------------------------------

FIELD_MANAGER = "dro"
"""The one field manager dro applies with."""


def connect(
    cluster: str,
    *,
    context: str | None,
    kubeconfig: Path | None,
    timeout: float = 10.0,
    fence: fencing.Fence = fencing.UNFENCED,
) -> Connection:
    """A connection to `cluster`: through `context` of the `kubeconfig` file, or in-cluster
    (the pod's service account) when `kubeconfig` is None. TLS and tokens are handled by the
    client exactly as the kubeconfig says; nothing is set to skip verification. `fence` is
    checked just before every write is sent (`fence.is_write`)."""
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            loader = _kubeconfig(kubeconfig, context)
            loader.load_and_set(configuration)
            if "expiry" not in vars(loader):
                # the client's hook renews a token that expires; one without an expiry it
                # only sets again, as it is, with the host, whose setter reads the whole
                # environment for proxies: a third of a read's own time
                configuration.refresh_api_key_hook = None
    except (config.ConfigException, OSError, TypeError, ValueError) as error:
        # the client's messages name fields and files; a URL in them loses its user part
        reason = redact.urls(str(error))
        raise ClusterError(cluster, f"cannot load its credentials: {reason}") from None
    configuration.retries = 1
    return Connection(cluster, _timed_client_class()(configuration, timeout, fence), timeout)


_PARSED: dict[str, tuple[bytes, Any]] = {}
"""Each kubeconfig file as the client parsed it (its `KubeConfigMerger`), by its path, with
the file's bytes when parsed: a file whose bytes changed is parsed again (reading and
comparing them costs a fraction of parsing them)."""


def _kubeconfig(kubeconfig: Path, context: str | None) -> Any:
    """The client's loader of `context` in the file `kubeconfig`, as `load_kube_config`
    makes it (changed credentials written back to the file), the file parsed once for all
    its contexts rather than once per cluster: a kubeconfig of a thousand contexts is
    otherwise parsed a thousand times a pass."""
    from kubernetes.config import ConfigException, kube_config

    path = str(kubeconfig)
    data = Path(path).read_bytes()
    known = _PARSED.get(path)
    if known is None or known[0] != data:
        known = _PARSED[path] = (data, kube_config.KubeConfigMerger(path))  # type: ignore[no-untyped-call]
    merger = known[1]
    if merger.config is None:
        raise ConfigException("Invalid kube-config file. No configuration found.")
    return kube_config.KubeConfigLoader(  # type: ignore[no-untyped-call]
        config_dict=merger.config,
        config_base_path=None,
        active_context=context,
        config_persister=merger.save_changes,
    )


@cache
def _timed_client_class() -> type:
    from kubernetes import client

    class TimedApiClient(client.ApiClient):
        """An ApiClient whose every request, discovery included, has a timeout, and whose
        every write is fenced: the last moment before the request leaves."""

        def __init__(self, configuration: Any, timeout: float, fence: fencing.Fence) -> None:
            super().__init__(configuration)
            self.dro_timeout = timeout
            self.dro_fence = fence
            self.dro_requests = 0

        def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self.dro_requests += 1
            if fencing.is_write(method, url):
                self.dro_fence.check(f"{method.upper()} {urlsplit(url).path}")
            if kwargs.get("_request_timeout") is None:
                kwargs["_request_timeout"] = self.dro_timeout
            return super().call_api(method, url, *args, **kwargs)

    return TimedApiClient


class Conflict(ClusterError):
    """The API answered 409 Conflict to a create or replace: the name is taken, or the object
    changed since the resourceVersion the write was based on. Read it again and retry."""


class Rejected(ClusterError):
    """The API refused this one object (a 4xx such as 422 Invalid, 400, 403 or 404, but not
    401, 408 or 429, which say nothing about the object): the cluster works, the object is
    wrong for it. The message carries the API server's own."""


class UnservedKind(Rejected):
    """The cluster serves no such kind (no CRD for it, or a removed API version)."""


_NOT_ABOUT_THE_OBJECT = frozenset({401, 408, 429})


class Connection:
    """One cluster's API through the official client: discovery, server-side apply with the
    field manager `dro`, reads and deletes, creates and guarded replaces (a Lease's). Errors
    become `ClusterError`s naming the cluster, the verb and the object; a 409 on a create or
    replace is a `Conflict`."""

    def __init__(self, cluster: str, api_client: Any, timeout: float) -> None:
        self.cluster = cluster
        self.timeout = timeout
        self._api = api_client
        self._cache = tempfile.TemporaryDirectory(prefix="dro-discovery-")
        """The client's discovery cache, this connection's own: its default file is shared
        by host and port, so a new server on a reused port would read a stale one."""
        self._dynamic: Any = None
        self._resources: dict[tuple[str, str], Any] = {}
        self._shared: dict[tuple[str | None, ...], Any] | None = None
        """The shared reads of the pass that uses the connection now (`share_reads`); None
        between passes, when every read asks the server."""
        self.known: dict[tuple[str, str], str] = {}
        """What the live stages found about this cluster's objects, kept as long as the
        connection (`live.drift.held`): (uid, digest of a manifest) → the resourceVersion
        of the object that was found to hold it."""
        self.steady: dict[str, Any] = {}
        """What the live stages found of the cluster as a whole, kept as long as the
        connection (`live.steady`)."""
        self.sound = True
        """False once a request failed other than by a 404 of a read or a 409: a pool of
        connections (`live.pool`) then makes a new one, with fresh discovery."""
        self.watches: watchcache.Watches | None = None
        """The lists kept current by watches (`keep_watching`); None: every LIST asks."""

    def __repr__(self) -> str:
        # the client's configuration holds the cluster's bearer token or client key
        return f"Connection(cluster={self.cluster!r})"

    def share_reads(self, sharing: bool = True) -> None:
        """A pass starts using the connection (`sharing`) or stops: while it does, the reads
        asked for as `shared` are made once and answered again from memory (a list of a kind
        that observe, the drift survey and apply each need), until a write of the same kind
        through this connection drops them. A read not marked shared, and any read outside
        a pass, asks the server."""
        self._shared = {} if sharing else None

    @property
    def requests(self) -> int:
        """How many requests this connection has sent, discovery included."""
        return int(self._api.dro_requests)

    def rebind(self, *, timeout: float, fence: fencing.Fence) -> None:
        """The timeout of every request and the fence of every write, for a connection a
        pool keeps from one pass to the next (the pass's own fence)."""
        self.timeout = timeout
        self._api.dro_timeout = timeout
        self._api.dro_fence = fence

    def keep_watching(self) -> None:
        """Keep each list this connection makes current by a watch, and answer it from
        memory when it may be (`kube.watchcache`): for a connection a process keeps."""
        if self.watches is None:
            self.watches = watchcache.Watches()

    def stop_watching(self) -> None:
        """Stop the watches: every LIST asks the server again."""
        watches, self.watches = self.watches, None
        if watches is not None:
            watches.close()

    def _wrote(self, kind: str) -> None:
        """A write of `kind` was sent: the shared reads of that kind are stale."""
        if self.watches is not None:
            self.watches.wrote(kind)
        if self._shared:
            self._shared = {key: found for key, found in self._shared.items() if key[1] != kind}

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply `obj`, forcing conflicts (dro's manifests win, as in Flux);
        `dry_run` asks what would result and changes nothing."""
        resource = self._resource(str(obj["apiVersion"]), str(obj["kind"]))
        metadata = obj.get("metadata") or {}
        if not dry_run:
            self._wrote(str(obj["kind"]))
        with _Translated(self.cluster, "apply", obj, connection=self):
            result = resource.server_side_apply(
                body=dict(obj),
                namespace=metadata.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                dry_run="All" if dry_run else None,
            )
        return dict(result.to_dict())

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        shared: bool = False,
    ) -> dict[str, Any] | None:
        """The live object, or None when it does not exist; `shared`: read once in the pass
        (`share_reads`), each caller getting its own copy of the top level."""
        found = self.read(api_version, kind, name, namespace, shared=shared)
        return None if found is None else dict(found.document)

    def read(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        shared: bool = False,
    ) -> Body | None:
        """The live object as the server sent it (`Body`: its digest, parsed when asked),
        or None when it does not exist; `shared` as for `get`."""
        key = ("get", kind, api_version, name, namespace)
        reads = self._shared if shared else None
        if reads is not None and key in reads:
            found: Body | None = reads[key]
            return found
        resource = self._resource(api_version, kind)
        where = _where(kind, name, namespace)
        found = None
        with _Translated(self.cluster, "get", where, missing_ok=True, connection=self):
            found = Body(resource.get(name=name, namespace=namespace, serialize=False).data)
        if reads is not None:
            reads[key] = found
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        shared: bool = False,
    ) -> list[dict[str, Any]]:
        """Every object of a kind (in one namespace, or in all), optionally selected;
        `shared`: listed once in the pass (`share_reads`), each caller getting its own copy
        of each item's top level."""
        found = self.listing(
            api_version,
            kind,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            shared=shared,
        )
        return [dict(item) for item in found.items]

    def listing(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        shared: bool = False,
    ) -> Body:
        """The LIST of `list` as the server sent it (`Body`: the digest of its items, which
        are parsed only when asked for), for a caller that may find it has seen those items
        already (`observe.live`, `live.steady`)."""
        key = ("list", kind, api_version, namespace, label_selector, field_selector)
        reads = self._shared if shared else None
        found: Body | None = reads.get(key) if reads is not None else None
        if found is None and self.watches is not None:
            found = self.watches.answer(key)
        if found is None:
            resource = self._resource(api_version, kind)
            where = _where(kind, None, namespace)

            def listed() -> Body:
                with _Translated(self.cluster, "list", where, connection=self):
                    response = resource.get(
                        namespace=namespace,
                        label_selector=label_selector,
                        field_selector=field_selector,
                        serialize=False,
                    )
                return Body(response.data, listed=True)

            def opened(version: str) -> Any:
                return resource.get(
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    watch=True,
                    resource_version=version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=watchcache.WATCH_SECONDS,
                    serialize=False,
                    _request_timeout=(self.timeout, watchcache.WATCH_SECONDS + self.timeout),
                )

            found = listed()
            if self.watches is not None:
                self.watches.listed(key, found, opened, listed)
        if reads is not None:
            reads[key] = found
        return found

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create `obj` (a POST with the field manager `dro`) and return it as stored. Raises
        `Conflict` when an object of that name exists already."""
        resource = self._resource(str(obj["apiVersion"]), str(obj["kind"]))
        metadata = obj.get("metadata") or {}
        self._wrote(str(obj["kind"]))
        with _Translated(self.cluster, "create", obj, conflicts=True, connection=self):
            response = resource.create(
                body=dict(obj),
                namespace=metadata.get("namespace"),
                field_manager=FIELD_MANAGER,
                serialize=False,
            )
        return _json(response)

    def replace(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the whole object (a PUT with the field manager `dro`) and return it as
        stored. Guarded by `metadata.resourceVersion` when `obj` carries one: raises `Conflict`
        when the object changed since that version was read."""
        resource = self._resource(str(obj["apiVersion"]), str(obj["kind"]))
        metadata = obj.get("metadata") or {}
        self._wrote(str(obj["kind"]))
        with _Translated(self.cluster, "replace", obj, conflicts=True, connection=self):
            response = resource.replace(
                body=dict(obj),
                name=metadata.get("name"),
                namespace=metadata.get("namespace"),
                field_manager=FIELD_MANAGER,
                serialize=False,
            )
        return _json(response)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        """Delete an object, its dependents in the background; False when it was gone."""
        resource = self._resource(api_version, kind)
        self._wrote(kind)
        where = _where(kind, name, namespace)
        with _Translated(self.cluster, "delete", where, missing_ok=True, connection=self):
            resource.delete(name=name, namespace=namespace, propagation_policy="Background")
            return True
        return False

    def close(self) -> None:
        """Stop the watches; release the connection pool and the discovery cache."""
        self.stop_watching()
        self._api.close()
        self._cache.cleanup()

    def _resource(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key not in self._resources:
            with _Translated(self.cluster, "discover", _where(kind, None, None), connection=self):
                if self._dynamic is None:
                    from kubernetes.dynamic import DynamicClient

                    self._dynamic = DynamicClient(  # type: ignore[no-untyped-call]
                        self._api, cache_file=f"{self._cache.name}/discovery.json"
                    )
                found = self._dynamic.resources.get(api_version=api_version, kind=kind)
            self._resources[key] = found
        return self._resources[key]


def _json(response: Any) -> dict[str, Any]:
    """The body of a raw response as plain dicts: the dynamic client's own wrapping of every
    field in objects costs more than the request on large lists."""
    body = json.loads(response.data)
    return body if isinstance(body, dict) else {}


def _where(kind: str, name: str | None, namespace: str | None) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace}}


class _Translated:
    """Turns the client's exceptions into `ClusterError`s; swallows a tolerated 404; raises
    `Conflict` for a 409 when `conflicts` is set."""

    def __init__(
        self,
        cluster: str,
        verb: str,
        obj: Mapping[str, Any],
        *,
        missing_ok: bool = False,
        conflicts: bool = False,
        connection: Connection | None = None,
    ) -> None:
        self.cluster, self.verb, self.obj, self.missing_ok = cluster, verb, obj, missing_ok
        self.conflicts = conflicts
        self.connection = connection

    def __enter__(self) -> _Translated:
        return self

    def __exit__(self, _kind: Any, error: BaseException | None, _trace: Any) -> bool:
        if error is None:
            return False
        from kubernetes.client.exceptions import ApiException
        from kubernetes.dynamic.exceptions import ResourceNotFoundError
        from urllib3.exceptions import HTTPError

        status = getattr(error, "status", None)
        if self.missing_ok and status == 404:
            return True
        if self.connection is not None and not (self.conflicts and status == 409):
            self.connection.sound = False  # discovery may be stale, or the cluster in trouble
        what = messages.describe(self.obj)
        if isinstance(error, ResourceNotFoundError):
            raise UnservedKind(
                self.cluster, f"{self.verb} {what}: the API serves no such kind"
            ) from error
        if isinstance(error, ApiException):
            message = f"{self.verb} {what}: HTTP {status} {getattr(error, 'reason', '')}".strip()
            said = messages.server_message(error, self.obj)
            if said:
                message = f"{message}: {said}"
            if _about_the_object(status) and not (self.conflicts and status == 409):
                raise Rejected(self.cluster, message) from error
        elif isinstance(error, HTTPError | OSError):
            message = f"{self.verb} {what}: cannot reach the API: {messages.network_reason(error)}"
        else:
            return False
        if self.conflicts and status == 409 and isinstance(error, ApiException):
            raise Conflict(self.cluster, message) from error
        raise ClusterError(self.cluster, message) from error


def _about_the_object(status: Any) -> bool:
    """A 4xx that says the object is wrong, not that the client or the cluster is."""
    return isinstance(status, int) and 400 <= status < 500 and status not in _NOT_ABOUT_THE_OBJECT
