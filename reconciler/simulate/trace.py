"""A `dro simulate` trace, read and checked: the source repo at step 0 and what changes after.

The trace file (kind `Trace`) names a source repo folder, the time of step 0, the step length
and the number of steps; optional usage and replica series (CSV, or a Prometheus range-query
export for usage: `reconciler.simulate.series`); and sparse `events` that change clusters
(drain, cordon, suspend, cost, capacity), desired replicas, and the fleet (`add` a Cluster
file, `remove` a cluster). The source is validated once, with every cluster the trace ever
adds, so a bad added file is reported before the replay starts. Every problem is a `Problem`
with the trace file's (or the named file's) path and line.

Called by `simulate`, `simulate.leastloaded`, `simulate.metrics`, `simulate.replay`,
`simulate.seams` and `simulate.timeline`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from reconciler import load, validate
from reconciler.domain import Origin, ResourceKey, SourceFile, Spec, durations
from reconciler.errors import Problem, UsageError, ValidationFailed
from reconciler.kube import quantity
from reconciler.simulate import series
from reconciler.yamlio import YamlError, parse_documents

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

API_VERSION = "multicluster.io/v1alpha1"
MAX_STEPS = 100_000
CLUSTER_FIELDS = ("drain", "cordon", "suspend", "cost", "capacity")
"""What an event may change on a cluster."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterChange:
    """What one event sets on one cluster; None leaves a field as it is."""

    drain: bool | None = None
    cordon: bool | None = None
    suspend: bool | None = None
    cost: Mapping[str, float] = field(default_factory=dict)
    capacity: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """The changes applied at the start of one step."""

    step: int
    clusters: Mapping[str, ClusterChange] = field(default_factory=dict)
    replicas: Mapping[ResourceKey, int] = field(default_factory=dict)
    add: tuple[str, ...] = ()
    """Names of clusters that join the fleet at this step."""
    remove: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """A checked trace: the spec (every cluster it ever holds) and what changes per step."""

    path: Path
    name: str
    spec: Spec
    start: float
    step: float
    steps: int
    joins: Mapping[str, int]
    """Cluster → the step it joins the fleet (0 for the source's own clusters)."""
    events: tuple[Event, ...] = ()
    """Sorted by step."""
    usage: Mapping[str, Mapping[str, FloatArray]] = field(default_factory=dict)
    """Cluster → resource → (steps,) background usage in base units, NaN before the first value."""
    replicas: Mapping[str, IntArray] = field(default_factory=dict)
    """Workload key text (namespace/Kind/name) → (steps,) desired replicas, −1 before the first."""

    def time(self, t: int) -> float:
        """The time of step `t` (seconds since the epoch)."""
        return self.start + t * self.step


def duration(text: object) -> float:
    """`1h`, `10m`, `1d12h`, `90s` → seconds (`durations.seconds`, as dro.yaml reads them);
    ValueError on anything else or on zero."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration (e.g. 10m, 1h, 1d)")
    try:
        seconds = durations.seconds(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration (e.g. 10m, 1h, 1d)") from None
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


class _Reader:
    """Collects the problems of one trace file, each at its line."""

    def __init__(self, path: str, origin: Origin) -> None:
        self.path = path
        self.origin = origin
        self.problems: list[Problem] = []

    def fail(self, pointer: str, message: str) -> None:
        line = self.origin.line_of(pointer)
        self.problems.append(Problem(path=self.path, line=line, pointer=pointer, message=message))

    def mapping(self, value: Any, pointer: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.fail(pointer, f"expected a mapping, got {_kind(value)}")
            return {}
        return value

    def integer(self, value: Any, pointer: str, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(pointer, f"expected an integer, got {_kind(value)}")
            return None
        if not low <= value <= high:
            self.fail(pointer, f"{value} is out of range ({low}–{high})")
            return None
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def read(path: Path) -> Trace:
    """Read and check the trace at `path`, validate its source once, and load its series.
    Raises `ValidationFailed` with every problem found, `UsageError` when it cannot be read."""
    shown = str(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"{shown}: {error.strerror or error}") from None
    try:
        documents = parse_documents(shown, data)
    except YamlError as error:
        raise ValidationFailed([error.problem]) from None
    if len(documents) != 1:
        line = documents[1].origin.line if documents else 1
        what = "holds no document" if not documents else "holds more than one document"
        raise ValidationFailed([Problem(path=shown, line=line, message=f"the trace {what}")])
    document = documents[0]
    reader = _Reader(shown, document.origin)
    body = document.body
    if body.get("apiVersion") != API_VERSION:
        reader.fail("/apiVersion", f"apiVersion must be {API_VERSION}")
    if body.get("kind") != "Trace":
        reader.fail("/kind", "kind must be Trace")
    metadata = reader.mapping(body.get("metadata"), "/metadata")
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else path.stem
    spec = reader.mapping(body.get("spec"), "/spec")
    unknown = sorted(
        set(spec) - {"source", "start", "step", "steps", "usage", "replicas", "events"}
    )
    for key in unknown:
        reader.fail(f"/spec/{key}", f"unknown field {key!r}")
    base = path.parent
    source_dir = _source_dir(reader, spec.get("source"), base)
    start = _start(reader, spec.get("start"))
    step = _step(reader, spec.get("step"))
    steps = reader.integer(spec.get("steps"), "/spec/steps", 1, MAX_STEPS)
    added = _added_files(reader, spec.get("events"), base)
    for file, (pointer, _data) in sorted(added.items()):
        if source_dir is not None and (source_dir / _inside(file)).exists():
            reader.fail(pointer, f"{file}: the source already has {_inside(file)}")
    if reader.problems or source_dir is None or steps is None:
        raise ValidationFailed(reader.problems)
    validated = _validated(source_dir, added, shown)
    joins = {c.name: 0 for c in validated.clusters}
    events = _events(reader, spec.get("events"), steps, validated, added, joins)
    usage = _series(reader, spec, "usage", base, steps=steps, start=start, step=step)
    replicas = _series(reader, spec, "replicas", base, steps=steps, start=start, step=step)
    if reader.problems:
        raise ValidationFailed(reader.problems)
    return Trace(
        path=path,
        name=str(name),
        spec=validated,
        start=start,
        step=step,
        steps=steps,
        joins=joins,
        events=events,
        usage=usage,
        replicas=replicas,
    )


def _source_dir(reader: _Reader, value: Any, base: Path) -> Path | None:
    if not isinstance(value, str) or not value:
        reader.fail("/spec/source", "source must name the source repo folder")
        return None
    folder = base / value
    if not folder.is_dir():
        reader.fail("/spec/source", f"{folder}: not a directory")
        return None
    return folder


def _start(reader: _Reader, value: Any) -> float:
    if value is None:
        return 0.0
    try:
        return durations.epoch(str(value))
    except ValueError:
        reader.fail("/spec/start", f"{value!r} is not an RFC 3339 time (2025-01-06T00:00:00Z)")
        return 0.0


def _step(reader: _Reader, value: Any) -> float:
    try:
        return duration(value)
    except ValueError as error:
        reader.fail("/spec/step", str(error))
        return 3600.0


def _added_files(reader: _Reader, events: Any, base: Path) -> dict[str, tuple[str, bytes]]:
    """Every file an event adds: its path as written → (pointer, bytes)."""
    found: dict[str, tuple[str, bytes]] = {}
    if not isinstance(events, list):
        return found
    for i, event in enumerate(events):
        adds = event.get("add") if isinstance(event, Mapping) else None
        if not isinstance(adds, list):
            continue
        for j, name in enumerate(adds):
            pointer = f"/spec/events/{i}/add/{j}"
            if not isinstance(name, str):
                reader.fail(pointer, f"expected a file name, got {_kind(name)}")
                continue
            try:
                found[name] = (pointer, (base / name).read_bytes())
            except OSError as error:
                reader.fail(pointer, f"{base / name}: {error.strerror or error}")
    return found


def _inside(name: str) -> str:
    """Where an added Cluster file sits in the source it is validated with."""
    return f"clusters/{Path(name).name}"


def _validated(source_dir: Path, added: Mapping[str, tuple[str, bytes]], shown: str) -> Spec:
    """The source with every added cluster file beside its own, validated once; problems are
    reported at the source folder's files, or at the added file as the trace names it."""
    source = load.from_directory(source_dir)
    taken = {f.path for f in source.files}
    extra: list[SourceFile] = []
    where: dict[str, str] = {}
    for name, (_pointer, data) in sorted(added.items()):
        inside = _inside(name)
        if inside in taken:
            continue  # `_added_files` reported it
        taken.add(inside)
        where[inside] = str(Path(shown).parent / name)
        extra.append(SourceFile(path=inside, data=data))
    full = dataclasses.replace(
        source, files=tuple(sorted((*source.files, *extra), key=lambda f: f.path))
    )
    try:
        return validate.spec(full)
    except ValidationFailed as failed:
        raise ValidationFailed(
            Problem(
                path=where.get(p.path, str(source_dir / p.path)),
                line=p.line,
                pointer=p.pointer,
                message=p.message,
                severity=p.severity,
            )
            for p in failed.problems
        ) from None


def _events(
    reader: _Reader,
    raw: Any,
    steps: int,
    spec: Spec,
    added: Mapping[str, tuple[str, bytes]],
    joins: dict[str, int],
) -> tuple[Event, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        reader.fail("/spec/events", f"expected a list, got {_kind(raw)}")
        return ()
    by_file = {c.origin.path: c.name for c in spec.clusters}
    workloads = {f"{w.key.namespace}/{w.key.kind}/{w.key.name}": w for w in spec.workloads}
    added_names = {by_file[_inside(name)] for name in added if _inside(name) in by_file}
    for name in added_names:
        joins.pop(name, None)
    result: list[Event] = []
    for i, item in enumerate(raw):
        at = f"/spec/events/{i}"
        event = reader.mapping(item, at)
        for key in sorted(set(event) - {"step", "clusters", "replicas", "add", "remove"}):
            reader.fail(f"{at}/{key}", f"unknown field {key!r}")
        step = reader.integer(event.get("step"), f"{at}/step", 0, steps - 1)
        if step is None:
            continue
        adds = []
        for j, name in enumerate(event.get("add") or ()):
            inside = _inside(str(name))
            cluster = by_file.get(inside)
            if cluster is None:
                reader.fail(f"{at}/add/{j}", f"{name}: not a Cluster file")
                continue
            joins[cluster] = min(step, joins.get(cluster, step))
            adds.append(cluster)
        removes = []
        for j, name in enumerate(event.get("remove") or ()):
            if name not in {c.name for c in spec.clusters}:
                reader.fail(f"{at}/remove/{j}", f"no cluster {name!r} in the source or added")
                continue
            removes.append(str(name))
        changes = {}
        clusters = reader.mapping(event.get("clusters"), f"{at}/clusters")
        for name, fields in clusters.items():
            pointer = f"{at}/clusters/{name}"
            if name not in {c.name for c in spec.clusters}:
                reader.fail(pointer, f"no cluster {name!r} in the source or added")
                continue
            changes[str(name)] = _change(reader, fields, pointer)
        replicas = {}
        for key, count in reader.mapping(event.get("replicas"), f"{at}/replicas").items():
            pointer = f"{at}/replicas/{key}"
            workload = workloads.get(str(key))
            if workload is None:
                reader.fail(pointer, f"no workload {key!r} (namespace/Kind/name) in the source")
                continue
            if workload.replicas is None:
                reader.fail(pointer, f"{key} has no replica count")
                continue
            value = reader.integer(count, pointer, 0, 1_000_000)
            if value is not None:
                replicas[workload.key] = value
        result.append(
            Event(
                step=step,
                clusters=changes,
                replicas=replicas,
                add=tuple(adds),
                remove=tuple(removes),
            )
        )
    for name in sorted(added_names - set(joins)):
        joins[name] = steps  # named by a file no event reached: never joins
    return tuple(sorted(result, key=lambda e: e.step))


def _change(reader: _Reader, raw: Any, pointer: str) -> ClusterChange:
    fields = reader.mapping(raw, pointer)
    flags: dict[str, bool | None] = {}
    for key in sorted(set(fields) - set(CLUSTER_FIELDS)):
        reader.fail(
            f"{pointer}/{key}", f"unknown field {key!r} (one of {', '.join(CLUSTER_FIELDS)})"
        )
    for key in ("drain", "cordon", "suspend"):
        value = fields.get(key)
        if value is not None and not isinstance(value, bool):
            reader.fail(f"{pointer}/{key}", f"expected true or false, got {_kind(value)}")
            value = None
        flags[key] = value
    amounts: dict[str, dict[str, float]] = {"cost": {}, "capacity": {}}
    for key, into in amounts.items():
        for resource, value in reader.mapping(fields.get(key), f"{pointer}/{key}").items():
            try:
                amount = (
                    quantity.amount(value)
                    if key == "capacity"
                    else float(value)
                    if isinstance(value, int | float) and not isinstance(value, bool)
                    else math.nan
                )
            except ValueError as error:
                reader.fail(f"{pointer}/{key}/{resource}", str(error))
                continue
            if not math.isfinite(amount) or amount < 0:
                reader.fail(f"{pointer}/{key}/{resource}", f"{value!r} is not a number >= 0")
                continue
            into[str(resource)] = amount
    return ClusterChange(
        drain=flags["drain"],
        cordon=flags["cordon"],
        suspend=flags["suspend"],
        cost=amounts["cost"],
        capacity=amounts["capacity"],
    )


def _series(
    reader: _Reader,
    spec: Mapping[str, Any],
    key: str,
    base: Path,
    *,
    steps: int,
    start: float,
    step: float,
) -> dict[str, Any]:
    """The usage or replica series the trace names, read by `simulate.series`."""
    raw = spec.get(key)
    if raw is None:
        return {}
    pointer = f"/spec/{key}"
    given = reader.mapping(raw, pointer)
    allowed = {"csv", "prometheus"} if key == "usage" else {"csv"}
    for name in sorted(set(given) - allowed):
        reader.fail(
            f"{pointer}/{name}", f"unknown field {name!r} (one of {', '.join(sorted(allowed))})"
        )
    if not given or reader.problems:
        return {}
    try:
        if key == "usage":
            loaded: dict[str, Any] = series.load_usage(
                given, base, steps=steps, start=start, step=step
            )
        else:
            loaded = series.load_replicas(base / str(given.get("csv")), steps=steps)
    except ValidationFailed as failed:
        reader.problems.extend(failed.problems)
        return {}
    return loaded
