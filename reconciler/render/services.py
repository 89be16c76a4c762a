"""Cross-cluster Services: which workloads call which Services, and the MCS objects they need.

A workload calls a Service when its containers' env, args or command (or the data of ConfigMaps
it reads) name it: `<name>.<namespace>[.svc[.cluster.local]]`, or, in its own namespace,
`<name>:<port>`, a URL host `scheme://<name>` or `<NAME>_SERVICE_HOST` / `_PORT`. Only Services
in the source count, so a word that merely looks like one does not. A Service is backed by the
workloads whose pod labels its `spec.selector` matches; a workload never calls its own Services.

Given the decisions, a call crosses clusters when the consumer runs on a cluster that lacks one
of the Service's backing workloads. Such Services are shared with the Kubernetes Multi-Cluster
Services API (KEP-1645): a `ServiceExport` in every cluster that runs a backend, a
`ServiceImport` in every consumer cluster without a local backend, and the consumer reaches
`<name>.<namespace>.svc.clusterset.local`.

Pure: the renderer adds `mcs_objects` to each cluster's tree; `dro explain` and the decision
reports show `CrossCluster.clusterset_name`.

Called by `render` and `render.shared`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.domain import Decision, ResourceKey, Workload
from reconciler.kube.demand import pod_template
from reconciler.kube.inventory import MANAGED_BY

MCS_API_VERSION = "multicluster.x-k8s.io/v1alpha1"
CLUSTERSET_SUFFIX = "svc.clusterset.local"
_DNS_SUFFIXES = (".svc.cluster.local", ".svc.clusterset.local", ".svc")
_TOKEN = re.compile(r"[A-Za-z0-9_](?:[-A-Za-z0-9_.]*[A-Za-z0-9_])?")
"""A host-like run of text: dotted labels (underscores included, so `MY_backend` is one word)."""
_PORT_AFTER = re.compile(r":\d{1,5}(?![\w-]|\.\w)")
_URL_HOST = re.compile(r"://(?:[^/\s@]*@)?([a-z0-9][-a-z0-9]*)(?![-\w.])")
_SERVICE_ENV = re.compile(
    r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]*?)_SERVICE_(?:HOST|PORT)(?![A-Za-z0-9])"
)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_EXCERPT = 120
_POD_PREFIX = {"Pod": "/spec", "CronJob": "/spec/jobTemplate/spec/template/spec"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """A workload naming a Service: what was found, and where."""

    consumer: ResourceKey
    service: ResourceKey
    evidence: str
    """e.g. `env API_URL=http://backend.shop.svc.cluster.local:8080`."""
    pointer: str
    """JSON pointer into the consumer's manifest, or into the ConfigMap the evidence names."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossCluster:
    """A Service called from clusters that lack (some of) its backends."""

    service: ResourceKey
    exported_from: tuple[str, ...]
    """Clusters running the Service's backing workloads (and the Service), sorted."""
    imported_into: tuple[str, ...]
    """Consumer clusters lacking a local backend, sorted."""
    consumers: tuple[ResourceKey, ...]
    """The workloads calling it from those clusters, sorted."""
    clusterset_name: str
    """`<name>.<namespace>.svc.clusterset.local`."""


@dataclass(frozen=True, slots=True)
class _Index:
    services: dict[str, dict[str, ResourceKey]]
    """Namespace → Service name → key."""
    backing: dict[ResourceKey, frozenset[ResourceKey]]
    """Service → the workloads its selector matches."""
    config_maps: dict[tuple[str, str], Mapping[str, Any]]
    """(namespace, name) → a ConfigMap's `data`."""


def _template_labels(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The labels of a workload's pods: a Pod's own, else its (job) template's."""
    if manifest.get("kind") == "Pod":
        meta = manifest.get("metadata")
    else:
        spec = manifest.get("spec") or {}
        if manifest.get("kind") == "CronJob":
            spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        meta = (spec.get("template") or {}).get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}


def _index(workloads: Sequence[Workload]) -> _Index:
    services: dict[str, dict[str, ResourceKey]] = {}
    config_maps: dict[tuple[str, str], Mapping[str, Any]] = {}
    selectors: list[tuple[ResourceKey, list[tuple[str, str, str]]]] = []
    for w in workloads:
        key = w.key
        if key.group or key.kind not in ("Service", "ConfigMap"):
            continue
        if key.kind == "ConfigMap":
            data = w.manifest.get("data")
            config_maps[(key.namespace, key.name)] = data if isinstance(data, Mapping) else {}
            continue
        services.setdefault(key.namespace, {})[key.name] = key
        selector = (w.manifest.get("spec") or {}).get("selector")
        if isinstance(selector, Mapping) and selector:
            selectors.append((key, [(key.namespace, str(k), str(v)) for k, v in selector.items()]))
    # Each Service is indexed under its selector's rarest label, so a workload is checked
    # only against the few Services that could select it.
    counts = Counter(item for _, items in selectors for item in items)
    by_label: dict[tuple[str, str, str], list[tuple[ResourceKey, list[tuple[str, str, str]]]]] = {}
    for key, items in selectors:
        by_label.setdefault(min(items, key=lambda i: (counts[i], i)), []).append((key, items))
    backing: dict[ResourceKey, set[ResourceKey]] = {}
    for w in workloads:
        if not by_label or pod_template(w.manifest) is None:
            continue
        labels = _template_labels(w.manifest)
        for label, value in labels.items():
            for service, selector in by_label.get((w.key.namespace, label, value), ()):
                if all(labels.get(k) == v for _, k, v in selector):
                    backing.setdefault(service, set()).add(w.key)
    return _Index(services, {k: frozenset(v) for k, v in backing.items()}, config_maps)


def _dotted(token: str) -> tuple[str, str] | None:
    """(namespace, name) of `name.ns`, `name.ns.svc[.cluster.local]` or `pod.name.ns.svc…`."""
    for suffix in _DNS_SUFFIXES:
        if token.endswith(suffix):
            labels = token[: -len(suffix)].split(".")
            return (labels[-1], labels[-2]) if len(labels) in (2, 3) else None
    labels = token.split(".")
    return (labels[1], labels[0]) if len(labels) == 2 else None


def _scan(text: str, namespace: str, index: _Index) -> list[tuple[ResourceKey, int, int]]:
    """The Services a string names, each once, with the span of its first mention."""
    own = index.services.get(namespace, {})
    found: dict[ResourceKey, tuple[int, int]] = {}
    for match in _TOKEN.finditer(text):
        token, start, end = match.group(), match.start(), match.end()
        if "." in token:
            target = _dotted(token)
            key = index.services.get(target[0], {}).get(target[1]) if target else None
        elif token in own and _PORT_AFTER.match(text, end) and text[start - 1 : start] != "/":
            key = own[token]
        else:
            key = None
        if key is not None:
            found.setdefault(key, (start, end))
    for match in _URL_HOST.finditer(text):
        if match.group(1) in own:
            found.setdefault(own[match.group(1)], match.span(1))
    for match in _SERVICE_ENV.finditer(text):
        name = match.group(1).lower().replace("_", "-")
        if name in own:
            found.setdefault(own[name], match.span())
    return sorted(((k, s, e) for k, (s, e) in found.items()), key=lambda f: f[0].sort_key)


def _excerpt(text: str, start: int, end: int) -> str:
    if len(text) <= _EXCERPT:
        return text
    margin = max(0, (_EXCERPT - (end - start)) // 2)
    left, right = max(0, start - margin), min(len(text), end + margin)
    return f"{'…' if left else ''}{text[left:right]}{'…' if right < len(text) else ''}"


def _texts(pod: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str, str]]:
    """(pointer, evidence head, text) of every env name and value, arg and command string."""
    for field in _CONTAINER_LISTS:
        for i, container in enumerate(pod.get(field) or ()):
            at = f"{prefix}/{field}/{i}"
            for j, env in enumerate(container.get("env") or ()):
                name = str(env.get("name", ""))
                yield f"{at}/env/{j}/name", "env ", name
                if isinstance(env.get("value"), str):
                    yield f"{at}/env/{j}/value", f"env {name}=", env["value"]
            for part in ("command", "args"):
                for j, arg in enumerate(container.get(part) or ()):
                    if isinstance(arg, str):
                        yield f"{at}/{part}/{j}", f"{part} ", arg


def _config_refs(pod: Mapping[str, Any]) -> Iterator[tuple[str, tuple[str, ...] | None]]:
    """(ConfigMap name, the keys read, or None for all) for each ConfigMap the pod reads."""
    for field in _CONTAINER_LISTS:
        for container in pod.get(field) or ():
            for source in container.get("envFrom") or ():
                ref = source.get("configMapRef") or {}
                if ref.get("name"):
                    yield str(ref["name"]), None
            for env in container.get("env") or ():
                ref = (env.get("valueFrom") or {}).get("configMapKeyRef") or {}
                if ref.get("name") and ref.get("key"):
                    yield str(ref["name"]), (str(ref["key"]),)
    for volume in pod.get("volumes") or ():
        projected = (volume.get("projected") or {}).get("sources") or ()
        for ref in (volume.get("configMap"), *(s.get("configMap") for s in projected)):
            if isinstance(ref, Mapping) and ref.get("name"):
                items = ref.get("items")
                keys = tuple(str(i.get("key")) for i in items) if items else None
                yield str(ref["name"]), keys


def _calls(workloads: Sequence[Workload], index: _Index) -> tuple[Call, ...]:
    found: dict[tuple[ResourceKey, ResourceKey, str], Call] = {}
    # (namespace, ConfigMap, key) → the Services its value names, with the evidence.
    scanned: dict[tuple[str, str, str], list[tuple[ResourceKey, str]]] = {}

    def named(head: str, text: str, ns: str) -> list[tuple[ResourceKey, str]]:
        return [(k, head + _excerpt(text, s, e)) for k, s, e in _scan(text, ns, index)]

    def add(consumer: ResourceKey, hits: list[tuple[ResourceKey, str]], pointer: str) -> None:
        for service, evidence in hits:
            if consumer not in index.backing.get(service, ()):
                found.setdefault(
                    (consumer, service, pointer),
                    Call(consumer=consumer, service=service, evidence=evidence, pointer=pointer),
                )

    for w in workloads:
        pod = pod_template(w.manifest)
        if pod is None:
            continue
        ns = w.key.namespace
        for pointer, head, text in _texts(pod, _POD_PREFIX.get(w.key.kind, "/spec/template/spec")):
            add(w.key, named(head, text, ns), pointer)
        for name, keys in _config_refs(pod):
            data = index.config_maps.get((ns, name))
            if data is None:
                continue
            for data_key in keys or sorted(map(str, data)):
                hits = scanned.get((ns, name, data_key))
                if hits is None:
                    value = data.get(data_key)
                    head = f"ConfigMap {ns}/{name} key {data_key}="
                    hits = named(head, value, ns) if isinstance(value, str) else []
                    scanned[(ns, name, data_key)] = hits
                if hits:
                    add(w.key, hits, "/data/" + data_key.replace("~", "~0").replace("/", "~1"))
    return tuple(
        sorted(
            found.values(),
            key=lambda c: (c.consumer.sort_key, c.service.sort_key, c.pointer, c.evidence),
        )
    )


def calls(workloads: Sequence[Workload]) -> tuple[Call, ...]:
    """Every Service each workload with a pod template names, sorted by consumer, Service and
    pointer; one Call per place a Service is named. A workload's own Services are left out."""
    return _calls(workloads, _index(workloads))


def cross_cluster(
    workloads: Sequence[Workload], decisions: Sequence[Decision]
) -> tuple[CrossCluster, ...]:
    """The Services called from a cluster that lacks at least one of their backing workloads,
    sorted by Service.

    A workload runs where its decision renders it (retiring copies included, zero replicas
    not). A Service is exported from the clusters running any of its backends, and, when the
    Service has a decision of its own, only from those where the Service is rendered too.
    Services that select no workload (no selector, ExternalName) are never cross-cluster.
    """
    index = _index(workloads)
    if not any(index.backing.values()):
        return ()  # no Service selects a workload: none can be called across clusters
    by_key = {d.key: d for d in decisions}
    running: dict[ResourceKey, frozenset[str]] = {}

    def runs_on(key: ResourceKey) -> frozenset[str]:
        """Where `key` runs: where its decision renders it with replicas (none: nowhere)."""
        found = running.get(key)
        if found is None:
            decision = by_key.get(key)
            rendered = decision.rendered() if decision is not None else ()
            found = running[key] = frozenset(p.cluster for p in rendered if p.replicas != 0)
        return found

    callers: dict[ResourceKey, set[ResourceKey]] = {}
    for call in _calls(workloads, index):
        callers.setdefault(call.service, set()).add(call.consumer)
    crossing: list[CrossCluster] = []
    for service in sorted(callers, key=lambda k: k.sort_key):
        backends = [runs_on(b) for b in index.backing.get(service, ())]
        if not backends:
            continue
        complete = frozenset.intersection(*backends)
        exported = frozenset.union(*backends)
        if service in by_key:
            exported &= runs_on(service)
        imported: set[str] = set()
        consumers: list[ResourceKey] = []
        for consumer in callers[service]:
            lacking = runs_on(consumer) - complete
            if lacking:
                imported |= lacking
                consumers.append(consumer)
        if imported:
            crossing.append(
                CrossCluster(
                    service=service,
                    exported_from=tuple(sorted(exported)),
                    imported_into=tuple(sorted(imported)),
                    consumers=tuple(sorted(consumers, key=lambda k: k.sort_key)),
                    clusterset_name=f"{service.name}.{service.namespace}.{CLUSTERSET_SUFFIX}",
                )
            )
    return tuple(crossing)


def _metadata(key: ResourceKey) -> dict[str, Any]:
    return {"name": key.name, "namespace": key.namespace, "labels": dict([MANAGED_BY])}


def _ports(service: Mapping[str, Any]) -> list[dict[str, Any]]:
    ports: list[dict[str, Any]] = []
    for port in (service.get("spec") or {}).get("ports") or ():
        entry: dict[str, Any] = {"name": port["name"]} if port.get("name") else {}
        entry.update(protocol=port.get("protocol") or "TCP", port=port.get("port"))
        ports.append(entry)
    return ports


def mcs_objects(
    crossing: Sequence[CrossCluster], services: Mapping[ResourceKey, Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Cluster name → the ServiceExports and ServiceImports to render there, labelled as dro's,
    sorted by (kind, namespace, name); clusters sorted, and only those that get any.

    A ServiceImport copies the ports (name, protocol, port) of the Service's manifest in
    `services` (none when it is missing) and has type `ClusterSetIP`, or `Headless` for a
    Service with `clusterIP: None`. Every object is a fresh dict the caller may change.
    """
    out: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = {}
    for cross in crossing:
        key = cross.service
        for cluster in cross.exported_from:
            out.setdefault(cluster, {})[("ServiceExport", key.namespace, key.name)] = {
                "apiVersion": MCS_API_VERSION,
                "kind": "ServiceExport",
                "metadata": _metadata(key),
            }
        manifest = services.get(key) or {}
        headless = (manifest.get("spec") or {}).get("clusterIP") == "None"
        for cluster in cross.imported_into:
            out.setdefault(cluster, {})[("ServiceImport", key.namespace, key.name)] = {
                "apiVersion": MCS_API_VERSION,
                "kind": "ServiceImport",
                "metadata": _metadata(key),
                "spec": {
                    "type": "Headless" if headless else "ClusterSetIP",
                    "ports": _ports(manifest),
                },
            }
    return {
        cluster: [objects[k] for k in sorted(objects)] for cluster, objects in sorted(out.items())
    }


def readme_section(crossing: Sequence[CrossCluster]) -> str:
    """The generated README's list of services called across clusters."""
    if not crossing:
        return ""
    lines = [
        "",
        "## Cross-cluster services",
        "",
        "Callers on another cluster than the Service reach it by its clusterset name "
        "(Kubernetes Multi-Cluster Services: a ServiceExport where it runs, a ServiceImport "
        "where it is called).",
        "",
        "| service | clusterset name | runs on | called from |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{c.service}` | `{c.clusterset_name}` | {', '.join(c.exported_from) or '—'} | "
        f"{', '.join(c.imported_into)} |"
        for c in crossing
    ]
    return "\n".join(lines) + "\n"
